"""Every repository path the contributor docs name exists (sqlite-utils' docs test, for paths).

A path is a backticked token that starts at a top-level folder of the repository (``dynadesk/``, ``sync/``,
``tests/``, ...); a ``file.py::test_name`` also names a test that file defines. Placeholders (``<name>``) and
globs are not paths. Files the docs mention by their own name (a run folder's ``predictions.jsonl``) are not
repository paths and are not checked.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from support import REPO

TOP = ("dynadesk/", "gui/", "evaluator/", "sync/", "resources/", "packaging/", "bench/", "tests/", "docs/", ".ci/")
DOCS = ["DEVELOPERS.md", "README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))]
TOKEN = re.compile(r"`([^`\s]+)`")


def _tracked() -> set[str]:
    """Every tracked or untracked-but-not-ignored file, and every folder above one."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split("\n")
    names = {f for f in out if f and (REPO / f).exists()}
    for f in list(names):
        parts = f.split("/")
        names.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return names


def doc_paths(text: str) -> list[tuple[int, str, str | None]]:
    """``(line, path, test name or None)`` of every repository path named in ``text``."""
    found = []
    for m in TOKEN.finditer(text):
        token = m.group(1).rstrip(".,:;")
        path, _, test = token.partition("::")
        if not path.startswith(TOP) or any(c in path for c in "<>*{}$") or "..." in path:
            continue
        found.append((text.count("\n", 0, m.start()) + 1, path.rstrip("/"), test.split("[")[0] or None))
    return found


def test_the_extractor_finds_paths_and_tests_and_skips_placeholders():
    text = "see `sync/rules/board.py`, `tests/a/test_a_b.py::test_c[x]`,\n`dynadesk/formats/<name>.py` and `x.json`"
    assert doc_paths(text) == [(1, "sync/rules/board.py", None), (1, "tests/a/test_a_b.py", "test_c")]


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_doc_names_exists(doc):
    names = _tracked()
    text = (REPO / doc).read_text(encoding="utf-8")
    stale = []
    for line, path, test in doc_paths(text):
        if path not in names:
            stale.append(f"{doc}:{line}: `{path}` does not exist")
        elif test and not re.search(rf"^\s*(async\s+)?def {re.escape(test)}\(", (REPO / path).read_text(), re.M):
            stale.append(f"{doc}:{line}: `{path}` has no test {test}")
    assert not stale, "stale paths (fix the doc or the path):\n" + "\n".join(stale)
