"""``make dist``: PyInstaller one-folder build, then the frozen binary's ``--smoke`` self-test.

Prints the folder size and the build and smoke-start times.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> int:
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
           "--distpath", str(DIST), "--workpath", str(ROOT / "build" / "pyinstaller"),
           str(ROOT / "packaging" / "dynadesk.spec")]
    print("building:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)
    build_s = time.monotonic() - t0
    binary = DIST / "dynadesk" / "dynadesk"
    size_mb = folder_size(DIST / "dynadesk") / 1e6
    print(f"built {binary} in {build_s:.0f} s; folder size {size_mb:.0f} MB", flush=True)
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env.pop("QT_QPA_PLATFORM", None)
    with tempfile.TemporaryDirectory() as home:
        t1 = time.monotonic()
        proc = subprocess.run([str(binary), "--smoke", "--home", home], env=env, capture_output=True, text=True,
                              timeout=600)
        smoke_s = time.monotonic() - t1
    print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n")
    print(f"--smoke exit {proc.returncode} in {smoke_s:.1f} s", flush=True)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
