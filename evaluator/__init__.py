"""The evaluation worker that runs inside the sandbox (stdlib + torch/transformers only).

Kept light: importing this package loads nothing heavy. ``schema`` holds the
versioned spec/result formats the host reads; ``worker`` does the run. Importing the package also registers the
model kinds kept in their own modules (``generative``) with ``adapters.register_kind`` (no adapters -> kind-module
import cycle).
"""

# Kinds in their own modules register into ``adapters`` through its ``register_kind`` hook. Imported here, not at
# the end of adapters.py, so that no two of the package's modules import each other (.importlinter, no-cycles).
from dynadesk.evaluator import generative, handler_adapter, onnx_adapter, openai_served  # noqa: F401
from dynadesk.evaluator.schema import SCHEMA_VERSION, evaluator_version

__all__ = ["SCHEMA_VERSION", "evaluator_version"]


def _register_model_kinds() -> None:
    """Every model kind into the one registry of model kinds (:mod:`dynadesk.evaluator.model_kinds`): those of
    ``adapters`` and of the kind modules imported above, then the installed plugins' (``dynadesk.model_kinds`` entry
    points) into the adapters' tables too. A plugin that cannot load is named in a warning and left out (a manifest
    of its kind is then refused by name)."""
    import warnings

    from dynadesk.evaluator import adapters
    from dynadesk.evaluator.model_kinds import MODEL_KINDS, ModelKind
    from dynadesk.evaluator.registry import RegistryError

    for kind in adapters.KINDS:
        MODEL_KINDS.add(kind, ModelKind(kind, adapters._ADAPTERS[kind], adapters._KIND_CHECKS.get(kind, _no_problems),
                                        adapters.ARCHITECTURES.get(kind, ()), kind in adapters.CLASSIFICATION_KINDS))
    for name in MODEL_KINDS.discover(rescan=False):
        try:
            plugin = MODEL_KINDS[name]
        except RegistryError as exc:
            del MODEL_KINDS[name]
            warnings.warn(str(exc), stacklevel=2)
            continue
        adapters.register_kind(plugin.name, plugin.factory, plugin.check, architectures=plugin.architectures,
                               classification=plugin.classification)


def _no_problems(manifest: dict[str, object]) -> list[str]:
    return []


_register_model_kinds()
