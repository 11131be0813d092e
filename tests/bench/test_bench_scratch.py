"""The benchmarks' scratch folders go when their process exits (``make bench`` left ~180 MB in /tmp a run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
MAKE = ("import sys; from pathlib import Path; from scratch import scratch_dir; d = scratch_dir('bench-test-'); "
        "(d / 'weights.bin').write_bytes(b'0' * 1000); print(d); sys.stdout.flush()")


def _made(tmp_path: Path, extra: str = "", keep: bool = False) -> tuple[Path, int]:
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), **({"DYNADESK_BENCH_KEEP": "1"} if keep else {})}
    proc = subprocess.run([sys.executable, "-c", MAKE + extra], cwd=BENCH, env=env, capture_output=True, text=True,
                          timeout=60)
    return Path(proc.stdout.strip().splitlines()[0]), proc.returncode


def test_a_benchmarks_scratch_folder_is_removed_at_exit_even_after_a_failure(tmp_path):
    folder, rc = _made(tmp_path)
    assert rc == 0 and folder.parent == tmp_path and not folder.exists()
    folder, rc = _made(tmp_path, "; raise RuntimeError('the bench failed')")
    assert rc == 1 and not folder.exists()
    assert list(tmp_path.iterdir()) == []


def test_dynadesk_bench_keep_keeps_it_to_look_into(tmp_path):
    folder, rc = _made(tmp_path, keep=True)
    assert rc == 0 and (folder / "weights.bin").stat().st_size == 1000
