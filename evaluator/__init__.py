"""The evaluation worker that runs inside the sandbox (stdlib + torch/transformers only).

Kept light: importing this package loads nothing heavy. ``schema`` holds the
versioned spec/result formats the host reads; ``worker`` does the run.
"""

from dynadesk.evaluator.schema import SCHEMA_VERSION, evaluator_version

__all__ = ["SCHEMA_VERSION", "evaluator_version"]
