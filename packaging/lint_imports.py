"""`make lint`'s import contracts (.importlinter), checked by import-linter on the installed layout.

setup.py maps gui/, evaluator/, sync/ and resources/ onto dynadesk.*; grimp walks one folder, so this
builds build/importgraph/dynadesk, a hard-linked copy in which every module sits under its import name,
and hides the editable install's finder so ``dynadesk`` resolves to that copy.

    python packaging/lint_imports.py [-v] [--tree DIR] [CONFIG]

``--tree DIR`` checks an existing copy (the tests plant a forbidden import in one to see a contract break).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("gui", "evaluator", "sync", "resources")


def build_tree(target: Path) -> Path:
    """A copy of the package in its import layout (hard links, so nothing is copied), in ``target``."""
    if target.exists():
        shutil.rmtree(target)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    pkg = target / "dynadesk"
    shutil.copytree(REPO / "dynadesk", pkg, copy_function=os.link, ignore=ignore)
    for folder in FOLDERS:
        shutil.copytree(REPO / folder, pkg / folder, copy_function=os.link, ignore=ignore)
    return target


def check(tree: Path, config: Path, verbose: bool = False) -> int:
    """import-linter's exit code for ``config`` over the package in ``tree`` (this process imports from it)."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    for name in [m for m in sys.modules if m == "dynadesk" or m.startswith("dynadesk.")]:
        del sys.modules[name]
    sys.path.insert(0, str(tree))
    os.chdir(tree)  # import-linter puts the working folder first on sys.path: there ./dynadesk is the copy
    from importlinter.cli import lint_imports

    return lint_imports(config_filename=str(config), no_cache=True, no_logo=True, verbose=verbose)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", type=Path, default=REPO / ".importlinter")
    parser.add_argument("--tree", type=Path, help="check this copy instead of building build/importgraph")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    tree = args.tree.resolve() if args.tree else build_tree(REPO / "build" / "importgraph")
    return check(tree, args.config.resolve(), args.verbose)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
