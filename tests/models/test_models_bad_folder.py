"""`dynadesk models try` on a registered model whose folder cannot be loaded (issue 45, smaller ones): one line
naming the model, the folder and what is wrong, and the next step; never a traceback. Before, a truncated
weights file printed a SafetensorError traceback and a bad config printed transformers' five-line advice."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.tiny_models import make_tiny_classifier


def _dynadesk(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("dynadesk"))
    return subprocess.run([exe, "--home", str(home), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    return make_tiny_classifier(tmp_path_factory.mktemp("try") / "tiny", ["negative", "neutral", "positive"])


@pytest.mark.parametrize(("spoil", "named"), [
    ("weights", "model.safetensors"),
    ("config", "config.json"),
])
def test_models_try_on_a_bad_folder_says_what_and_what_next(tmp_path: Path, good: Path, spoil: str, named: str):
    folder = tmp_path / "bad"
    shutil.copytree(good, folder)
    if spoil == "weights":
        data = (folder / "model.safetensors").read_bytes()
        (folder / "model.safetensors").write_bytes(data[:100])  # truncated
    else:
        (folder / "config.json").write_text('{"model_type": "nonsense"}')
    home = tmp_path / "home"
    assert _dynadesk(home, "models", "add", str(folder), "--task", "sentiment", "--name", "bad").returncode == 0
    res = _dynadesk(home, "models", "try", "bad", "--text", "good")
    assert res.returncode != 0
    assert "Traceback" not in res.stderr, res.stderr[-1500:]
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and res.stderr.strip().splitlines()[-1] == errors[0], res.stderr[-1500:]
    line = errors[0]
    assert "model 'bad'" in line and str(folder) in line and named in line, line
    assert "--replace" in line, line  # the next step


def test_a_full_width_model_name_is_refused(tmp_path: Path, good: Path):
    """Full-width "ｔｉｎｙ" reads as "tiny" (before: registered as a second, look-alike model)."""
    wide = "\uff54\uff49\uff4e\uff59"
    res = _dynadesk(tmp_path / "home", "models", "add", str(good), "--task", "sentiment", "--name", wide)
    assert res.returncode != 0 and "full-width" in res.stderr and "'tiny'" in res.stderr, res.stderr[-800:]
