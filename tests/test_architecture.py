"""Dependencies point one way: gui -> core -> (evaluator, sync); nothing imports the GUI;
the evaluator (which runs inside the image) imports no other part of DynaDesk and none of
Qt, docker or the server.

The rules are checked on the source with ``ast`` (every import statement, including the
lazy ones inside functions), because the top-level folders are mapped to subpackages
(gui/ -> dynadesk.gui, ...), which static graph tools that walk one folder do not follow.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FOLDERS = {"dynadesk": "dynadesk", "gui": "dynadesk.gui", "evaluator": "dynadesk.evaluator",
           "sync": "dynadesk.sync"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "dynadesk":
        return parts[0]
    if len(parts) > 1 and parts[1] in ("gui", "evaluator", "sync"):
        return f"dynadesk.{parts[1]}"
    return "dynadesk.core"


def imports_of(path: Path, package: str) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the file's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.append((node.lineno, mod))
    return found


def all_imports():
    for folder, package in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            pkg = ".".join([package] + parts[:-1] if path.name != "__init__.py" else [package] + parts)
            for lineno, mod in imports_of(path, pkg):
                yield folder, path, lineno, mod


FORBIDDEN = {
    # source layer -> layers / top-level modules it must never import
    "dynadesk.evaluator": {"dynadesk.core", "dynadesk.gui", "dynadesk.sync", "PySide6", "docker", "fastapi",
                           "uvicorn", "sqlite_utils", "click", "requests"},
    "dynadesk.sync": {"dynadesk.gui", "PySide6", "docker"},
    "dynadesk.core": {"dynadesk.gui", "PySide6"},
}


def test_dependency_direction_holds():
    broken = []
    for folder, path, lineno, mod in all_imports():
        src = FOLDERS[folder] if folder != "dynadesk" else "dynadesk.core"
        target = layer_of(mod)
        if target in FORBIDDEN.get(src, set()):
            broken.append(f"{path.relative_to(REPO)}:{lineno} imports {mod} ({src} must not import {target})")
    assert not broken, "\n".join(broken)


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from ..gui import app\n    import PySide6.QtCore\n")
    mods = [m for _, m in imports_of(f, "dynadesk.sync.sub")]
    assert mods == ["dynadesk.sync.gui", "PySide6.QtCore"]
    assert layer_of("dynadesk.gui.pages") == "dynadesk.gui" and layer_of("dynadesk.store") == "dynadesk.core"


BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = {blocked!r}
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in BLOCKED:
                raise ImportError(f"{{name}} is not available in this environment")
    sys.meta_path.insert(0, Block())
""")


def _run_blocked(blocked: list[str], code: str) -> subprocess.CompletedProcess:
    script = BLOCKER.format(blocked=blocked) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)


def test_evaluator_imports_without_qt_docker_server_or_core_deps():
    """Inside the image only torch, transformers, psutil, nvidia-ml-py (and their deps) exist."""
    proc = _run_blocked(
        ["PySide6", "docker", "fastapi", "uvicorn", "sqlite_utils", "click", "yaml", "requests", "cryptography",
         "rfc8785", "tqdm"],
        """
        import importlib, pkgutil
        import dynadesk.evaluator as ev
        for m in pkgutil.walk_packages(ev.__path__, "dynadesk.evaluator."):
            importlib.import_module(m.name)
        leaked = [n for n in sys.modules if n.startswith("dynadesk.") and not n.startswith("dynadesk.evaluator")]
        assert not leaked, leaked
        print("ok")
        """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


@pytest.mark.parametrize("module", ["dynadesk", "dynadesk.cli", "dynadesk.store", "dynadesk.tasks"])
def test_core_imports_are_light(module):
    proc = _run_blocked([], f"""
        import {module}
        heavy = [m for m in ("torch", "transformers", "PySide6", "docker", "fastapi") if m in sys.modules]
        assert not heavy, heavy
        print("ok")
        """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr
