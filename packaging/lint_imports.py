"""`make lint`'s import contracts (.importlinter), checked by import-linter on the repository itself.

The design's top-level folders gui/, evaluator/, sync/ and resources/ are subpackages of ``dynadesk`` through the
committed links ``dynadesk/gui -> ../gui`` (and so on), which grimp follows: it reads the package from its folder,
every module under its import name, with no copy.

    python packaging/lint_imports.py [-v] [--tree DIR] [CONFIG]

``--tree DIR`` checks another copy of the package (the tests plant a forbidden import in one, made by
:func:`build_tree`, to see a contract break without writing into the repository).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def build_tree(target: Path) -> Path:
    """A copy of the package (hard links, so nothing is copied; the folder links followed) in ``target``."""
    if target.exists():
        shutil.rmtree(target)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "dynadesk", target / "dynadesk", copy_function=os.link, ignore=ignore)
    return target


def check(tree: Path, config: Path, verbose: bool = False) -> int:
    """import-linter's exit code for ``config`` over the package in ``tree`` (this process imports from it)."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    for name in [m for m in sys.modules if m == "dynadesk" or m.startswith("dynadesk.")]:
        del sys.modules[name]
    sys.path.insert(0, str(tree))
    os.chdir(tree)  # import-linter puts the working folder first on sys.path: there ./dynadesk is the package
    from importlinter.cli import lint_imports

    return lint_imports(config_filename=str(config), no_cache=True, no_logo=True, verbose=verbose)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", type=Path, default=REPO / ".importlinter")
    parser.add_argument("--tree", type=Path, help="check this copy of the package instead of the repository")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    return check(args.tree.resolve() if args.tree else REPO, args.config.resolve(), args.verbose)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
