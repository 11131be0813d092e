"""The dependency rules of DEVELOPERS.md ("Dependency rules"): import-linter's contracts plus run-time checks.

The import rules (layers, no cycles, which part may import Qt, docker, the web stack, SQL, click, torch,
the queue's libraries) are contracts in ``.importlinter``, checked by import-linter (``make lint`` and
here) over the installed layout that ``packaging/lint_imports.py`` builds. What a static graph cannot say
(what importing a module loads at run time, what the image can import) is checked by running Python.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
from support import REPO

LINT = REPO / "packaging" / "lint_imports.py"
CONFIG = REPO / ".importlinter"


def _lint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(LINT), *args], capture_output=True, text=True, cwd=REPO, timeout=300)


def _contract_names() -> dict[str, str]:
    """``{section id: contract name}`` of every contract in .importlinter."""
    text = CONFIG.read_text(encoding="utf-8")
    return dict(re.findall(r"^\[importlinter:contract:([\w-]+)\]\nname = (.+)$", text, re.M))


def test_every_import_contract_is_kept():
    proc = _lint()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    n = len(_contract_names())
    assert f"Contracts: {n} kept, 0 broken." in out, out


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the package in its import layout, shared by the violation tests (each plants one file)."""
    sys.path.insert(0, str(LINT.parent))
    try:
        from lint_imports import build_tree
    finally:
        sys.path.remove(str(LINT.parent))
    return build_tree(tmp_path_factory.mktemp("importgraph"))


PLANTED = {
    # contract id -> (module path inside the copy, source): each a forbidden import, lazy ones included
    "layers": ("store/planted.py", "def f():\n    from dynadesk.scoring import board\n"),
    "no-cycles": ("scoring/planted.py", "from dynadesk.scoring import board\n"),
    "evaluator": ("evaluator/planted.py", "import yaml\n"),
    "qt": ("scoring/planted.py", "def f():\n    import PySide6.QtCore\n"),
    "sync-no-orchestration": ("sync/planted.py", "from dynadesk.orchestration import runners\n"),
    "sync-no-audit": ("sync/server/planted.py", "from dynadesk.audit import report\n"),
    "web": ("scoring/planted.py", "import fastapi\n"),
    "sql": ("annotation/planted.py", "import sqlite3\n"),
    "psycopg": ("sync/server/planted.py", "def f():\n    import psycopg\n"),
    "click": ("scoring/planted.py", "import click\n"),
    "docker": ("scoring/planted.py", "def f():\n    import docker\n"),
    "torch": ("scoring/planted.py", "def f():\n    import torch\n"),
    "queue": ("orchestration/planted.py", "def f():\n    import redis\n"),
    "onnxruntime": ("evaluator/planted.py", "def f():\n    import onnxruntime\n"),
    "server-no-desktop": ("sync/server/planted.py", "def f():\n    from dynadesk.store import Store\n"),
    "sync-layers": ("sync/client/planted.py", "def f():\n    from dynadesk.sync.server import names\n"),
}
# A planted import that two contracts forbid (sync's own layers repeat the top-level order of its server and client;
# any other upward import inside sync/ is also a cycle, which "no-cycles" reports).
ALSO_BROKEN = {"sync-layers": ("layers",)}


def test_every_contract_has_a_planted_violation():
    assert set(PLANTED) == set(_contract_names())


@pytest.mark.parametrize("contract", sorted(PLANTED))
def test_a_planted_import_breaks_its_contract(tree, contract):
    """Each contract can fail: one forbidden import planted in the copy breaks exactly it."""
    rel, source = PLANTED[contract]
    planted = tree / "dynadesk" / rel
    planted.write_text(source, encoding="utf-8")
    try:
        if contract == "no-cycles":  # the cycle needs the other direction too
            extra = tree / "dynadesk" / "scoring" / "board.py"
            original = extra.read_text(encoding="utf-8")
            extra.unlink()  # a hard link to the repository's file: replace, never write through it
            extra.write_text(original + "\nfrom dynadesk.scoring import planted  # noqa\n", encoding="utf-8")
        proc = _lint("--tree", str(tree))
    finally:
        planted.unlink()
        if contract == "no-cycles":
            extra.unlink()
            extra.write_text(original, encoding="utf-8")
    out = proc.stdout + proc.stderr
    name = _contract_names()[contract]
    broken = " ".join(out.split("Broken contracts", 1)[-1].split())  # import-linter wraps long names
    assert proc.returncode != 0 and name in broken, out
    also = ALSO_BROKEN.get(contract, ())
    assert all(_contract_names()[other] in broken for other in also), out
    assert f"{1 + len(also)} broken" in out, out


WEB_MODULES = {"dynadesk.hub.app", "dynadesk.hub.server"}  # the hub's web stack: `dynadesk hub serve` loads them
# onnxruntime: only evaluator/onnx_adapter.py, lazily (contract "onnxruntime"); the image does not ship it
EVALUATOR_THIRD_PARTY = {"torch", "transformers", "tokenizers", "safetensors", "numpy", "psutil", "pynvml",
                         "onnxruntime"}


def test_the_evaluator_imports_only_what_the_image_installs(tree):
    """Rule 1 as an allow-list (a new dependency cannot slip in): import-linter's graph of the evaluator."""
    code = textwrap.dedent(f"""
        import sys
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
        sys.path.insert(0, {str(tree)!r})
        import grimp
        g = grimp.build_graph("dynadesk", include_external_packages=True, cache_dir=None)
        out = set()
        for m in g.find_descendants("dynadesk.evaluator") | {{"dynadesk.evaluator"}}:
            out |= {{i.split(".")[0] if not i.startswith("dynadesk") else i
                     for i in g.find_modules_directly_imported_by(m)}}
        print("\\n".join(sorted(out)))
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tree, timeout=300)
    assert proc.returncode == 0, proc.stderr
    imported = set(proc.stdout.split())
    outside = {m for m in imported if not (m == "dynadesk.evaluator" or m.startswith("dynadesk.evaluator."))
               and m not in EVALUATOR_THIRD_PARTY and m not in sys.stdlib_module_names}
    assert imported and not outside, sorted(outside)


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


@pytest.mark.parametrize(("package", "lazy"), [("dynadesk.models", ("torch", "transformers")),
                                               ("dynadesk.queue", ("celery", "kombu", "redis")),
                                               ("dynadesk.hub", ("fastapi", "uvicorn", "starlette"))])
def test_heavy_libraries_load_only_when_called(package, lazy):
    """Rules 5, 9 and 12: importing every module of the package (the hub: but its two web modules) loads none of
    them, nor does the CLI (imports inside functions)."""
    proc = _run_blocked([], f"""
        import importlib, pkgutil
        import {package} as pkg
        for m in pkgutil.walk_packages(pkg.__path__, "{package}."):
            if m.name not in {WEB_MODULES!r}:
                importlib.import_module(m.name)
        import dynadesk.cli
        loaded = [m for m in {lazy!r} if m in sys.modules]
        assert not loaded, loaded
        print("ok")
        """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_the_served_board_loads_neither_the_desktop_cli_nor_the_workspace(tmp_path):
    """Rule 13 at run time: the app built and answering its routes (board, upload refusal, log, tasks) has loaded
    none of the desktop CLI, the workspace store or the workspace."""
    proc = _run_blocked([], f"""
        from fastapi.testclient import TestClient
        from dynadesk.sync.server.app import ServerOptions, create_app
        app = create_app({str(tmp_path / "board.db")!r}, options=ServerOptions(verify_processes=0))
        with TestClient(app) as client:
            for path in ("/api/tasks", "/api/leaderboard/sentiment", "/api/log", "/", "/log"):
                assert client.get(path).status_code == 200, path
            assert client.post("/api/bundles", content=b"{{}}").status_code == 400
        loaded = sorted(m for m in sys.modules if m.split(".")[:2] in (["dynadesk", "cli"], ["dynadesk", "store"])
                        or m == "dynadesk.workspace")
        assert not loaded, loaded
        print("ok")
        """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr


# DEVELOPERS.md's numbered dependency rules -> the contracts (by "Rule N" in their names) or tests checking each
RUNTIME_CHECKS = {
    9: (test_heavy_libraries_load_only_when_called,),
    10: (test_core_imports_are_light,),
    11: (test_evaluator_imports_without_qt_docker_server_or_core_deps,),
    12: (test_heavy_libraries_load_only_when_called,),
}


def test_every_rule_of_the_contributor_guide_is_checked():
    guide = (REPO / "DEVELOPERS.md").read_text(encoding="utf-8")
    section = guide.split("## Dependency rules", 1)[1].split("\n## ", 1)[0]
    numbers = {int(n) for n in re.findall(r"^(\d+)\. ", section, re.M)}
    in_contracts = {int(n) for name in _contract_names().values()
                    for n in re.findall(r"\d+", name.split(":")[0]) if name.startswith("Rule")}
    assert numbers and numbers == in_contracts | set(RUNTIME_CHECKS), \
        f"rules in DEVELOPERS.md {sorted(numbers)}, checked {sorted(in_contracts | set(RUNTIME_CHECKS))}"
