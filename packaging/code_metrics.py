"""Prints the code-shape counts that the architecture work tracks, for the package source
(dynadesk/, gui/, evaluator/, sync/):

- modules over 500 lines,
- functions with more than 8 parameters (click commands aside: their parameters are options),
- broad exception handlers (``except Exception``, ``except BaseException``, bare ``except:``),
- imports of the docker SDK outside ``dynadesk/orchestration/``,
- functions with ``Any`` in their signature (a parameter's or the return's annotation): where a type is missing.

``python packaging/code_metrics.py [ROOT] [--list]``: ROOT defaults to this checkout (pass another
checkout to compare); ``--list`` names every hit.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

FOLDERS = ("dynadesk", "gui", "evaluator", "sync")
MAX_LINES = 500
MAX_PARAMS = 8
BROAD = {"Exception", "BaseException"}


@dataclass
class Metrics:
    long_modules: list[str] = field(default_factory=list)
    many_params: list[str] = field(default_factory=list)
    broad_excepts: list[str] = field(default_factory=list)
    docker_imports: list[str] = field(default_factory=list)
    any_signatures: list[str] = field(default_factory=list)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def is_click_command(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Decorated with ``@x.command(...)`` / ``@x.group(...)`` (click's own or a group's)."""
    return any(_dotted(d).split(".")[-1] in ("command", "group") for d in fn.decorator_list)


def parameter_count(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Named parameters, ``self``/``cls`` not counted."""
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names)


def _is_broad(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(_dotted(t) in BROAD for t in types)


def _imports_docker(node: ast.AST) -> TypeGuard[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "docker" for a in node.names)
    return isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "docker"


def _mentions_any(annotation: ast.expr | None) -> bool:
    return annotation is not None and any(isinstance(n, ast.Name) and n.id == "Any" or
                                          isinstance(n, ast.Attribute) and n.attr == "Any"
                                          for n in ast.walk(annotation))


def any_in_signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a parameter's or the return's annotation names ``typing.Any`` (``dict[str, Any]`` included)."""
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p is not None)]
    return _mentions_any(fn.returns) or any(_mentions_any(p.annotation) for p in params)


def measure(root: Path) -> Metrics:
    m = Metrics()
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            lines = len(text.splitlines())
            if lines > MAX_LINES:
                m.long_modules.append(f"{rel} ({lines} lines)")
            in_orchestration = rel.startswith("dynadesk/orchestration/")
            nodes = sorted((n for n in ast.walk(ast.parse(text, filename=rel)) if hasattr(n, "lineno")),
                           key=lambda n: n.lineno)
            for node in nodes:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    n = parameter_count(node)
                    if n > MAX_PARAMS and not is_click_command(node):
                        m.many_params.append(f"{rel}:{node.lineno} {node.name} ({n} parameters)")
                    if any_in_signature(node):
                        m.any_signatures.append(f"{rel}:{node.lineno} {node.name}")
                elif isinstance(node, ast.ExceptHandler) and _is_broad(node):
                    m.broad_excepts.append(f"{rel}:{node.lineno}")
                elif _imports_docker(node) and not in_orchestration:
                    m.docker_imports.append(f"{rel}:{node.lineno}")
    return m


def main(argv: list[str]) -> int:
    show = "--list" in argv
    args = [a for a in argv if a != "--list"]
    root = Path(args[0]).resolve() if args else Path(__file__).resolve().parent.parent
    m = measure(root)
    rows = [(f"modules over {MAX_LINES} lines", m.long_modules),
            (f"functions with more than {MAX_PARAMS} parameters (click commands aside)", m.many_params),
            ("broad exception handlers (except Exception / BaseException / bare)", m.broad_excepts),
            ("imports of docker outside dynadesk/orchestration/", m.docker_imports),
            ("functions with Any in their signature", m.any_signatures)]
    print(f"code metrics of {root} ({', '.join(f + '/' for f in FOLDERS)})")
    for label, hits in rows:
        print(f"{len(hits):5d}  {label}")
        if show:
            for hit in hits:
                print(f"         {hit}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
