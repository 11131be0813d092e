"""The suite's own layout (DEVELOPERS.md, "Layout of tests/"): area folders, unique names, no cross-area imports.

pytest imports a test file by its bare name with its folder on ``sys.path`` (the areas have no ``__init__.py``),
and ``tests/`` itself is on ``sys.path`` for the ``support`` package, so each area folder is also an empty
namespace package of its name."""

from __future__ import annotations

import ast
import importlib.util
import re
from collections import Counter
from pathlib import Path

from support import TESTS

NOT_AREAS = {"support", "assets", "__pycache__"}
AREAS = sorted(p.name for p in TESTS.iterdir() if p.is_dir() and p.name not in NOT_AREAS)
TEST_FILES = sorted(TESTS.glob("*/test_*.py"))


def _probed_by_transformers() -> set[str]:
    """Packages transformers looks for with find_spec: a folder of that name on sys.path reads as installed."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or spec.origin is None:
        return set()
    source = Path(spec.origin).parent / "utils" / "import_utils.py"
    return set(re.findall(r'_is_package_available\(\s*"([a-z_]+)"', source.read_text(encoding="utf-8")))


def test_every_test_file_is_in_its_area_with_the_area_prefix():
    assert not list(TESTS.glob("test_*.py")), "a test file directly under tests/: move it into tests/<area>/"
    wrong = [str(p.relative_to(TESTS)) for p in TEST_FILES if not p.name.startswith(f"test_{p.parent.name}_")
             and p.name != f"test_{p.parent.name}.py"]
    assert wrong == [], f"name a test file tests/<area>/test_<area>_<topic>.py: {wrong}"


def test_test_file_names_are_unique_across_areas():
    twice = [name for name, n in Counter(p.name for p in TEST_FILES).items() if n > 1]
    assert twice == []


def test_no_area_is_named_after_a_package_a_library_probes_for():
    """A real module (stdlib, installed) always wins over an empty namespace folder; an absent one does not: a
    tests/datasets folder made transformers report Hugging Face ``datasets`` as installed."""
    probed = _probed_by_transformers()
    assert "datasets" in probed or importlib.util.find_spec("transformers") is None  # the check sees what happened
    assert sorted(set(AREAS) & probed) == []


def test_test_files_import_test_modules_of_their_own_area_only():
    own = {p.stem: p.parent.name for p in TEST_FILES}
    crossing = []
    for path in TEST_FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            crossing += [f"{path.relative_to(TESTS)} imports {n}" for n in names
                         if n in own and own[n] != path.parent.name]
    assert crossing == [], "move what two areas share into tests/support/"
