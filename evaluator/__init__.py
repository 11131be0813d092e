"""The evaluation worker that runs inside the sandbox (stdlib + torch/transformers only).

Kept light: importing this package loads nothing heavy. ``schema`` holds the
versioned spec/result formats the host reads; ``worker`` does the run.
"""

# Kinds in their own modules (onnx_adapter ...) register into ``adapters`` through its ``register_kind`` hook.
# Imported here, not at the end of adapters.py, so that no two of the package's modules import each other
# (.importlinter, no-cycles); each imports only the standard library at module level.
from dynadesk.evaluator import onnx_adapter, openai_served  # noqa: F401
from dynadesk.evaluator.schema import SCHEMA_VERSION, evaluator_version

__all__ = ["SCHEMA_VERSION", "evaluator_version"]
