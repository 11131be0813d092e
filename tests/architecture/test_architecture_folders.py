"""Folders that tell the truth: a tool that reads folders, with no editable install and no generated tree, sees
every module under its import name (DEVELOPERS.md "Layout").

The design's top-level folders (gui/, evaluator/, sync/, resources/) are subpackages of ``dynadesk`` through the
committed relative links ``dynadesk/gui -> ../gui`` and so on. These tests read the repository as an editor, grimp
(import-linter), mypy and git do, and fail if a link is missing, absolute, or a folder's module escapes it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import REPO

FOLDERS = ("gui", "evaluator", "sync", "resources")


def _modules_under(folder: Path, prefix: str) -> set[str]:
    """Import names of the Python modules in ``folder`` (links followed), as a folder-walking tool finds them."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        dirnames[:] = [d for d in dirnames if d != "__pycache__" and (Path(dirpath) / d / "__init__.py").is_file()]
        rel = Path(dirpath).relative_to(folder).parts
        for name in filenames:
            if name.endswith(".py"):
                stem = name[:-3]
                found.add(".".join((prefix, *rel) if stem == "__init__" else (prefix, *rel, stem)))
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_top_level_folder_is_a_committed_relative_link_under_dynadesk(folder):
    link = REPO / "dynadesk" / folder
    assert link.is_symlink(), f"dynadesk/{folder} must be a link to ../{folder}"
    assert os.readlink(link) == f"../{folder}"  # relative: the checkout can move
    staged = subprocess.run(["git", "ls-files", "-s", f"dynadesk/{folder}"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.split()
    assert staged and staged[0] == "120000", staged  # git's mode for a link: committed, not generated
    assert _modules_under(link, f"dynadesk.{folder}") == _modules_under(REPO / folder, f"dynadesk.{folder}")


def test_python_without_the_editable_install_imports_every_folder_by_its_import_name():
    """An editor or a tool that puts the repository on its path (no install, no import hook) resolves the modules
    to the top-level folders' files."""
    code = textwrap.dedent(f"""
        import sys
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
        sys.path.insert(0, {str(REPO)!r})
        import os, dynadesk.gui.collector, dynadesk.evaluator.schema, dynadesk.sync.rules.claims, dynadesk.resources
        for m in (dynadesk.gui.collector, dynadesk.evaluator.schema, dynadesk.sync.rules.claims, dynadesk.resources):
            print(os.path.realpath(m.__file__))
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(REPO / "gui" / "collector.py"), str(REPO / "evaluator" / "schema.py"),
                                   str(REPO / "sync" / "rules" / "claims.py"),
                                   str(REPO / "resources" / "__init__.py")]


def test_import_linters_graph_of_the_repository_holds_every_module_of_every_folder():
    """grimp (import-linter's graph) reads the repository itself, no copy: every module of the folders is in it."""
    code = textwrap.dedent(f"""
        import sys
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
        sys.path.insert(0, {str(REPO)!r})
        import grimp
        print("\\n".join(sorted(grimp.build_graph("dynadesk", cache_dir=None).modules)))
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", timeout=300)
    assert proc.returncode == 0, proc.stderr
    graph = set(proc.stdout.split())
    expected = _modules_under(REPO / "dynadesk", "dynadesk")
    for folder in FOLDERS:
        assert f"dynadesk.{folder}" in graph, folder
    assert expected == graph, (sorted(expected - graph)[:10], sorted(graph - expected)[:10])
