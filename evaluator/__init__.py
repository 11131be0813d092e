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
