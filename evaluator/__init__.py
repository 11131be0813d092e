"""The evaluation worker that runs inside the sandbox (stdlib + torch/transformers only).

Kept light: importing this package loads nothing heavy. ``schema`` holds the
versioned spec/result formats the host reads; ``worker`` does the run. Importing the package also registers the
model kinds kept in their own modules (``generative``) with ``adapters.register_kind`` (no adapters -> kind-module
import cycle).
"""

from dynadesk.evaluator import generative  # noqa: F401  (registers its model kinds)
from dynadesk.evaluator.schema import SCHEMA_VERSION, evaluator_version

__all__ = ["SCHEMA_VERSION", "evaluator_version"]
