"""The PyInstaller one-folder build (``make dist``) passes ``--smoke`` when the build exists.

Building takes minutes, so ``make test`` does not build it; ``make dist`` does and runs the same
smoke check. When ``dist/dynadesk/dynadesk`` exists (after ``make dist``), this test runs it.
``.ci/run`` builds it after the suite and then runs this file, so in CI (``CI=true``) a missing
build is a failure, never a skip.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import REPO

BINARY = REPO / "dist" / "dynadesk" / "dynadesk"


def test_spec_and_build_script_are_consistent() -> None:
    spec = (REPO / "packaging" / "dynadesk.spec").read_text()
    assert "dynadesk_app.py" in spec and 'name="dynadesk"' in spec
    assert "matplotlib" in spec and "sqldrivers" in spec  # unused parts are excluded
    assert (REPO / "packaging" / "dynadesk_app.py").exists()


def test_ci_builds_the_dist_after_the_suite_and_smoke_tests_it() -> None:
    """.ci/run: lint first, then the suite (without the frozen-binary test), then make dist, then this file."""
    steps = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
             if line and not line.startswith(("#", "set ", "cd ", "export "))]
    assert steps[0] == "make lint"
    assert steps[1].startswith("make test") and "test_frozen_binary_passes_smoke" in steps[1]
    assert steps[2:] == ["make dist", ".venv/bin/python -m pytest -q tests/release/test_release_dist.py"]
    make_test = next(b for b in (REPO / "Makefile").read_text().split("\n\n") if b.startswith("test:"))
    assert "dist" not in make_test  # the ~7-minute build stays out of make test (30-minute budget)


IN_CI = os.environ.get("CI") == "true"


@pytest.mark.skipif(not BINARY.exists() and not IN_CI,
                    reason="no dist build (run 'make dist' to build and smoke-test it)")
def test_frozen_binary_passes_smoke(tmp_path: Path) -> None:
    assert BINARY.exists(), f"{BINARY} missing: in CI, .ci/run builds it with 'make dist' before this test"
    sys.path.insert(0, str(REPO / "packaging"))
    from build_dist import SMOKE_MODELS, prepare_smoke_workspace

    prepare_smoke_workspace(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "QT_QPA_PLATFORM")}
    for model in SMOKE_MODELS:  # a torch bag-of-words and a transformers MiniLM classifier
        proc = subprocess.run([str(BINARY), "--smoke", "--home", str(tmp_path), "--model", model], env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert model in proc.stdout + proc.stderr
