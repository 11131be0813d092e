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


def prepare_smoke_workspace(home: Path) -> None:
    """A workspace holding one small torch model (bag-of-words), so --smoke really loads torch and predicts."""
    from dynadesk.models.bow import train_bag_of_words
    from dynadesk.models.registry import register_model
    from dynadesk.workspace import Workspace

    words = {"positive": "great lovely superb", "negative": "awful boring dreadful", "neutral": "okay plain average"}
    examples = [{"statement": f"a {w} film number {i}", "label": lab}
                for i in range(20) for lab, ws in words.items() for w in ws.split()]
    folder = home / "models" / "smoke-bow"
    train_bag_of_words(folder, "sentiment", ["negative", "neutral", "positive"], ["statement"], examples, epochs=3)
    store = Workspace(home).open_store()
    register_model(store, folder, "sentiment", name="smoke-bow")
    store.close()


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
        prepare_smoke_workspace(Path(home))
        t1 = time.monotonic()
        proc = subprocess.run([str(binary), "--smoke", "--home", home], env=env, capture_output=True, text=True,
                              timeout=600)
        smoke_s = time.monotonic() - t1
    print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n")
    print(f"--smoke exit {proc.returncode} in {smoke_s:.1f} s", flush=True)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
