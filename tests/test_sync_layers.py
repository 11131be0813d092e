"""The bundle format stands alone, and nothing in dynadesk.sync imports in a circle.

Checked on the source with ``ast`` (every import statement, lazy ones inside functions
included), the same way tests/test_architecture.py checks the project's layers.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SYNC = REPO / "sync"
FORMAT = "dynadesk.sync.format"
# what the format may import beyond itself: the error module, the standard library, cryptography, rfc8785,
# and dynadesk.jsonio (bounded-depth JSON parsing, itself a leaf over dynadesk.errors: checked below)
FORMAT_MAY_IMPORT = {"dynadesk.errors", "dynadesk.jsonio", "cryptography", "rfc8785", "__future__"}


def test_jsonio_is_a_leaf_over_the_error_module():
    tree = ast.parse((REPO / "dynadesk" / "jsonio.py").read_text(encoding="utf-8"))
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert {m for m in mods if m.startswith("dynadesk")} == {"dynadesk.errors"}, mods


def module_name(path: Path) -> str:
    rel = path.relative_to(SYNC).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["dynadesk.sync", *parts])


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file; ``from a import b`` also yields ``a.b``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return found


def sync_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SYNC.rglob("*.py"))}


def test_the_format_imports_only_the_error_module_and_itself():
    stdlib = set(sys.stdlib_module_names)
    names = {n.rpartition(".")[2] for n in sync_modules() if n.startswith(FORMAT + ".")}
    assert {"envelope", "schema", "canonical", "merkle", "translog", "tolerances", "timestamps"} <= names
    broken = []
    for name, path in sync_modules().items():
        if not (name == FORMAT or name.startswith(FORMAT + ".")):
            continue
        for line, mod in imports(path):
            top = mod.split(".")[0]
            if mod == FORMAT or mod.startswith(FORMAT + ".") or top in stdlib or top in FORMAT_MAY_IMPORT:
                continue
            if any(mod == m or mod.startswith(m + ".") for m in FORMAT_MAY_IMPORT):
                continue
            broken.append(f"{path.relative_to(REPO)}:{line} imports {mod}")
    assert not broken, "the bundle format must stand alone:\n" + "\n".join(broken)


def test_nothing_in_the_format_reaches_client_server_audit_orchestration_or_gui():
    banned = ("dynadesk.sync.client", "dynadesk.sync.create", "dynadesk.sync.server", "dynadesk.sync.board",
              "dynadesk.audit", "dynadesk.orchestration", "dynadesk.gui")
    hits = [f"{p.relative_to(REPO)}:{line} imports {mod}" for name, p in sync_modules().items()
            if name.startswith(FORMAT) for line, mod in imports(p) if mod.startswith(banned)]
    assert not hits, "\n".join(hits)


def test_the_client_never_imports_the_server_and_sync_never_imports_audit():
    hits = []
    for name, path in sync_modules().items():
        for line, mod in imports(path):
            if mod.startswith("dynadesk.audit"):
                hits.append(f"{path.relative_to(REPO)}:{line} imports {mod} (audit imports sync: a cycle)")
            if name in ("dynadesk.sync.client", "dynadesk.sync.create") and mod.startswith("dynadesk.sync.server"):
                hits.append(f"{path.relative_to(REPO)}:{line} imports {mod} (the client depends on the format only)")
    assert not hits, "\n".join(hits)


def _graph() -> dict[str, set[str]]:
    mods = sync_modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        graph[name] = {m for _, m in imports(path) if m in mods and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in ``graph`` (module -> imported modules), or None. Packages count as modules:
    importing ``a.b`` runs ``a/__init__``, but our package inits import nothing."""
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_there_are_no_import_cycles_in_dynadesk_sync():
    cycle = find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_checker_sees_lazy_and_relative_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "sync" / "format"
    pkg.mkdir(parents=True)
    f = pkg / "x.py"
    f.write_text("def f():\n    from ..server import db\n    import dynadesk.audit.report\n")
    monkeypatch.setattr(sys.modules[__name__], "SYNC", tmp_path / "sync")
    mods = [m for _, m in imports(f)]
    assert "dynadesk.sync.server.db" in mods and "dynadesk.audit.report" in mods


def test_the_server_has_one_upload_route_per_document_and_one_error_mapping():
    app_src = (SYNC / "server" / "app.py").read_text(encoding="utf-8")
    assert app_src.count('@app.post("/api/bundles"') == 1 and "add_middleware" not in app_src
    mapping = [p for p in SYNC.rglob("*.py") if "HTTP_STATUS" in p.read_text(encoding="utf-8")
               and "HTTP_STATUS:" in p.read_text(encoding="utf-8")]
    assert [p.relative_to(SYNC).as_posix() for p in mapping] == ["server/errors.py"]
