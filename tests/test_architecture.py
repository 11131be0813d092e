"""The dependency rules of DEVELOPERS.md ("Dependency rules"), one test each:

1. the evaluator (run inside the image) imports only the standard library, its own package and
   torch, transformers, tokenizers, safetensors, numpy, psutil, pynvml;
2. the core library never imports the GUI or Qt;
3. the bundle format, client and server (sync/) never import the GUI, Qt, docker or orchestration;
4. nothing outside gui/ imports the GUI;
5. the web server stack (fastapi, uvicorn, starlette) is imported only in sync/ and the hub's web modules;
6. SQL (sqlite3, sqlite_utils) lives only in dynadesk/store/ and the server's database modules;
7. click (and dynadesk.cli) only in the command-line modules;
8. the docker SDK only in dynadesk/orchestration/;
9. torch and transformers, outside the evaluator, only in dynadesk/models/ and only inside functions;
10. importing the core, the CLI, the store or the tasks loads no torch, transformers, Qt, docker, fastapi;
11. the evaluator package imports with none of the host-only packages installed.

The rules are checked on the source with ``ast`` (every import statement, including the
lazy ones inside functions), because the top-level folders are mapped to subpackages
(gui/ -> dynadesk.gui, ...), which static graph tools that walk one folder do not follow.
"""

from __future__ import annotations

import ast
import re
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


# The host's metric recomputation (pure stdlib plus the evaluator's metrics): bundle create re-scores the
# run folder rather than sign the workspace's stored figures (issue 31). It imports no docker.
SYNC_MAY_IMPORT = {"dynadesk.orchestration.recompute"}


def test_dependency_direction_holds():
    """Rules 2 and 3 (and the evaluator's forbidden layers, a subset of rule 1)."""
    broken = []
    for folder, path, lineno, mod in all_imports():
        src = FOLDERS[folder] if folder != "dynadesk" else "dynadesk.core"
        target = layer_of(mod)
        if target in FORBIDDEN.get(src, set()) or (src == "dynadesk.sync" and _is(mod, "dynadesk.orchestration")
                                                     and mod not in SYNC_MAY_IMPORT):
            broken.append(f"{path.relative_to(REPO)}:{lineno} imports {mod} ({src} must not import {target})")
    assert not broken, "\n".join(broken)


def _is(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _violations(modules: tuple[str, ...], allowed: tuple[str, ...]) -> list[str]:
    """Imports of any of ``modules`` from a file whose repository path starts with none of ``allowed``."""
    out = []
    for _folder, path, lineno, mod in all_imports():
        rel = path.relative_to(REPO).as_posix()
        if any(_is(mod, m) for m in modules) and not rel.startswith(allowed):
            out.append(f"{rel}:{lineno} imports {mod}")
    return out


EVALUATOR_THIRD_PARTY = {"torch", "transformers", "tokenizers", "safetensors", "numpy", "psutil", "pynvml"}


def test_evaluator_imports_only_its_allowed_packages():
    """Rule 1: what the image installs, nothing else (allow-list, so a new dependency cannot slip in)."""
    broken = [f"{path.relative_to(REPO)}:{lineno} imports {mod}" for folder, path, lineno, mod in all_imports()
              if folder == "evaluator" and not _is(mod, "dynadesk.evaluator")
              and mod.split(".")[0] not in EVALUATOR_THIRD_PARTY | set(sys.stdlib_module_names)]
    assert not broken, "\n".join(broken)


def test_nothing_outside_gui_imports_the_gui():
    """Rule 4 (``dynadesk gui`` loads the app by name, at run time)."""
    assert not _violations(("dynadesk.gui",), ("gui/",))


def test_web_server_stack_only_in_sync():
    """Rule 5 (the hub's two web modules are the one other place; its CLI and library stay light)."""
    assert not _violations(("fastapi", "uvicorn", "starlette"), ("sync/", "dynadesk/hub/app.py",
                                                                 "dynadesk/hub/server.py"))
    proc = _run_blocked([], """
        import dynadesk.hub, dynadesk.hub.identity, dynadesk.hub.overview, dynadesk.hub.service, dynadesk.cli.hub_cmd
        loaded = [m for m in ("fastapi", "uvicorn", "starlette") if m in sys.modules]
        assert not loaded, loaded
        print("ok")
        """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_sql_only_in_the_store_and_the_server_database():
    """Rule 6: the workspace database in dynadesk/store/, the server's in sync/server/ (db, migrations)."""
    assert not _violations(("sqlite3", "sqlite_utils"), ("dynadesk/store/", "sync/server/"))
    assert not _violations(("psycopg", "psycopg_pool"), ("sync/server/pg.py",))


def test_queue_libraries_only_in_the_queue_package():
    """Rule 12: celery, kombu and redis only in dynadesk/queue/; the CLI loads them only for --queue."""
    assert not _violations(("celery", "kombu", "redis"), ("dynadesk/queue/",))
    proc = _run_blocked([], """
        import dynadesk.cli, dynadesk.queue
        loaded = [m for m in ("celery", "kombu", "redis") if m in sys.modules]
        assert not loaded, loaded
        print("ok")
        """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_click_only_in_the_command_line_modules():
    """Rule 7: the library is usable without click; the CLIs are thin layers over it."""
    assert not _violations(("click", "dynadesk.cli"), ("dynadesk/cli/", "sync/server/cli.py"))


def test_docker_sdk_only_in_orchestration():
    """Rule 8."""
    assert not _violations(("docker",), ("dynadesk/orchestration/runners.py", "dynadesk/orchestration/daemon.py",
                                         "dynadesk/orchestration/image.py"))


def test_torch_and_transformers_on_the_host_only_in_models_and_lazily():
    """Rule 9: the host side trains the demo models; everything else stays light."""
    assert not _violations(("torch", "transformers"), ("evaluator/", "dynadesk/models/"))
    top_level = []
    for path in sorted((REPO / "dynadesk" / "models").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(_is(n, "torch") or _is(n, "transformers") for n in names):
                    top_level.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not top_level, top_level


def test_the_rule_checks_catch_a_violation(tmp_path, monkeypatch):
    """The helpers really see a forbidden import (so the rule tests above can fail)."""
    bad = tmp_path / "dynadesk" / "scoring"
    bad.mkdir(parents=True)
    (bad / "x.py").write_text("def f():\n    import docker\n    import sqlite3\n    from dynadesk.gui import app\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "FOLDERS", {"dynadesk": "dynadesk"})
    assert _violations(("docker",), ("dynadesk/orchestration/",)) == ["dynadesk/scoring/x.py:2 imports docker"]
    assert _violations(("sqlite3",), ("dynadesk/store/",)) == ["dynadesk/scoring/x.py:3 imports sqlite3"]
    assert _violations(("dynadesk.gui",), ("gui/",)) == ["dynadesk/scoring/x.py:4 imports dynadesk.gui"]


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


# DEVELOPERS.md's numbered dependency rules -> the test that checks each one
RULE_CHECKS = {
    1: (test_evaluator_imports_only_its_allowed_packages, test_dependency_direction_holds),
    2: (test_dependency_direction_holds,),
    3: (test_dependency_direction_holds,),
    4: (test_nothing_outside_gui_imports_the_gui,),
    5: (test_web_server_stack_only_in_sync,),
    6: (test_sql_only_in_the_store_and_the_server_database,),
    7: (test_click_only_in_the_command_line_modules,),
    8: (test_docker_sdk_only_in_orchestration,),
    9: (test_torch_and_transformers_on_the_host_only_in_models_and_lazily,),
    10: (test_core_imports_are_light,),
    11: (test_evaluator_imports_without_qt_docker_server_or_core_deps,),
    12: (test_queue_libraries_only_in_the_queue_package,),
}


def test_every_rule_of_the_contributor_guide_is_checked():
    guide = (REPO / "DEVELOPERS.md").read_text(encoding="utf-8")
    section = guide.split("## Dependency rules", 1)[1].split("\n## ", 1)[0]
    numbers = {int(n) for n in re.findall(r"^(\d+)\. ", section, re.M)}
    assert numbers and numbers == set(RULE_CHECKS), \
        f"rules in DEVELOPERS.md {sorted(numbers)}, checked {sorted(RULE_CHECKS)}"
