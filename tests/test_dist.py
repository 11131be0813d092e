"""The PyInstaller one-folder build (``make dist``) passes ``--smoke`` when the build exists.

Building takes minutes, so ``make test`` does not build it; ``make dist`` does and runs the same
smoke check. When ``dist/dynadesk/dynadesk`` exists (after ``make dist``), this test runs it.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BINARY = REPO / "dist" / "dynadesk" / "dynadesk"


def test_spec_and_build_script_are_consistent():
    spec = (REPO / "packaging" / "dynadesk.spec").read_text()
    assert "dynadesk_app.py" in spec and 'name="dynadesk"' in spec
    assert "matplotlib" in spec and "sqldrivers" in spec  # unused parts are excluded
    assert (REPO / "packaging" / "dynadesk_app.py").exists()


@pytest.mark.skipif(not BINARY.exists(), reason="no dist build (run 'make dist' to build and smoke-test it)")
def test_frozen_binary_passes_smoke(tmp_path):
    sys.path.insert(0, str(REPO / "packaging"))
    from build_dist import SMOKE_MODELS, prepare_smoke_workspace

    prepare_smoke_workspace(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "QT_QPA_PLATFORM")}
    for model in SMOKE_MODELS:  # a torch bag-of-words and a transformers MiniLM classifier
        proc = subprocess.run([str(BINARY), "--smoke", "--home", str(tmp_path), "--model", model], env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert model in proc.stdout + proc.stderr
