"""Every JSON file the CLI reads has a size cap (issue 45 item 3): a 3 GB file (sparse: it costs no disk) is refused
in one line before it is read, under a 1 GiB memory cap; before, each command read it whole and died of MemoryError
with a traceback."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

MEMORY_CAP = 1 << 30


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _huge(path: Path) -> Path:
    with open(path, "wb") as fh:
        fh.write(b"{")
        fh.truncate(3 << 30)
    return path


@pytest.mark.parametrize("command", [
    ("bundle", "verify", "{big}"),
    ("bundle", "show", "{big}"),
    ("dynascore", "{big}"),
])
def test_a_huge_json_file_is_refused_unread(tmp_path: Path, command: tuple[str, ...]):
    big = _huge(tmp_path / "big.json")
    small = tmp_path / "small.json"
    small.write_text("{}")
    args = [a.format(big=big, small=small) for a in command]
    exe = str(Path(sys.executable).with_name("dynadesk"))
    res = subprocess.run([exe, "--home", str(tmp_path / "home"), *args], capture_output=True, text=True, timeout=60,
                         preexec_fn=_capped)
    assert res.returncode != 0
    assert "Traceback" not in res.stderr and "MemoryError" not in res.stderr, res.stderr[-1500:]
    assert str(big) in res.stderr and "limit" in res.stderr and "refused unread" in res.stderr, res.stderr[-800:]


def test_a_huge_proof_file_and_model_manifest_are_refused_unread(tmp_path: Path):
    from dynadesk.audit.proofs import read_proof_file
    from dynadesk.errors import MerkleProofError, ValidationError
    from dynadesk.models.registry import _read_json

    big = _huge(tmp_path / "proof.json")
    with pytest.raises(MerkleProofError, match="proof file over the .*-byte limit; refused unread"):
        read_proof_file(big)
    with pytest.raises(ValidationError, match="JSON file over the .*-byte limit; refused unread"):
        _read_json(big)


def test_a_huge_csv_is_refused_unread(tmp_path: Path):
    big = tmp_path / "big.csv"
    with open(big, "wb") as fh:
        fh.write(b"statement,label\n")
        fh.truncate(3 << 30)
    exe = str(Path(sys.executable).with_name("dynadesk"))
    res = subprocess.run([exe, "--home", str(tmp_path / "home"), "data", "import", str(big), "--task", "sentiment",
                          "--name", "big"], capture_output=True, text=True, timeout=60, preexec_fn=_capped)
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr[-1500:]
    assert "table over the 1,073,741,824-byte limit; refused unread" in res.stderr, res.stderr[-800:]
