"""The evaluation worker that runs inside the sandbox (stdlib + torch/transformers only).

Kept light: importing this package loads nothing heavy. ``schema`` holds the
versioned spec/result formats the host reads; ``worker`` does the run. Importing the package also registers the
model kinds kept in their own modules (``generative``) with ``adapters.register_kind`` (no adapters -> kind-module
import cycle).
"""

# Kinds in their own modules register into ``adapters`` through its ``register_kind`` hook. Imported here, not at
# the end of adapters.py, so that no two of the package's modules import each other (.importlinter, no-cycles).
from dynadesk.evaluator import generative, onnx_adapter, openai_served  # noqa: F401
from dynadesk.evaluator.schema import SCHEMA_VERSION, evaluator_version

__all__ = ["SCHEMA_VERSION", "evaluator_version"]


def _load_model_kind_plugins() -> None:
    """Model kinds of installed plugins (``dynadesk.model_kinds`` entry points) into the adapters' tables; a
    plugin that cannot load is named in a warning and left out (a manifest of its kind is then refused by name)."""
    import warnings

    from dynadesk.evaluator.adapters import register_kind
    from dynadesk.evaluator.model_kinds import MODEL_KINDS
    from dynadesk.evaluator.registry import RegistryError

    for name in MODEL_KINDS.discover():
        try:
            kind = MODEL_KINDS[name]
        except RegistryError as exc:
            del MODEL_KINDS[name]
            warnings.warn(str(exc), stacklevel=2)
            continue
        register_kind(kind.name, kind.factory, kind.check, architectures=kind.architectures,
                      classification=kind.classification)


_load_model_kind_plugins()
