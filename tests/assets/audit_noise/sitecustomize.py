"""Test-only: a model with hidden randomness, for the determinism pre-flight tests.

On PYTHONPATH with ``DYNADESK_TEST_NOISE=1`` it wraps the evaluation worker's
``predict`` so every probability gets fresh random noise (from the OS, not from
any seed the worker sets), as a model with an unseeded dropout or sampling step
would. Nothing in the product puts this folder on a path.
"""

import os

if os.environ.get("DYNADESK_TEST_NOISE") == "1":
    import random

    from dynadesk.evaluator import worker

    _predict = worker.Worker.predict
    _rng = random.SystemRandom()

    def _noisy(self, examples, *args, **kwargs):
        preds = _predict(self, examples, *args, **kwargs)
        for p in preds:
            if isinstance(p, dict) and isinstance(p.get("probs"), dict):
                p["probs"] = {k: v + _rng.uniform(-1e-4, 1e-4) for k, v in p["probs"].items()}
        return preds

    worker.Worker.predict = _noisy
