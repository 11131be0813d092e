"""The registry of model kinds (a manifest's ``kind``): what loads a model folder of that kind, the manifest check
it adds, the ``config.json`` architectures it loads and whether it classifies. Filled when the evaluator package is
imported (``dynadesk/evaluator/__init__.py``): the kinds of :mod:`dynadesk.evaluator.adapters` and its kind modules,
then a third party's from the ``dynadesk.model_kinds`` entry points (a :class:`ModelKind`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dynadesk.evaluator.registry import Registry

__all__ = ["MODEL_KINDS", "ModelKind"]


@dataclass(frozen=True)
class ModelKind:
    """One model kind: its name, its adapter's factory ``(model_dir, manifest, device=, allow_pickle=)``, the
    manifest check it adds (a list of problems), the architectures it loads, whether it classifies."""

    name: str
    factory: Callable[..., Any]
    check: Callable[[dict[str, Any]], list[str]]
    architectures: tuple[str, ...] = ()
    classification: bool = False


def _problem(name: str, kind: ModelKind) -> str | None:
    if kind.name != name:
        return f"is registered as '{name}' but names itself '{kind.name}'"
    return None if callable(kind.factory) and callable(kind.check) else "its factory and check must be callables"


MODEL_KINDS: Registry[ModelKind] = Registry("model_kinds", "model kind", ModelKind, check=_problem)
