"""The worker's deterministic kernels, set without loading torch's compiler stack.

``torch.use_deterministic_algorithms(True)`` imports ``torch._inductor.config``, which loads dynamo, inductor and fx:
1.1 of the 2.6 CPU-seconds a worker spent on ``import torch`` and that call (a baseline model's run, which loads no
transformers). The worker sets the same flag itself and hands inductor's deterministic mode to its config through
the environment, for a model's code that compiles later.
"""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
import torch
if sys.argv[1] == "inductor-first":
    import torch._inductor.config
from dynadesk.evaluator.schema import Settings
from dynadesk.evaluator.worker import set_determinism
set_determinism(Settings(deterministic=True), 1)
loaded = "torch._inductor" in sys.modules
import torch._inductor.config as inductor
print(json.dumps({"kernels": torch.are_deterministic_algorithms_enabled(),
                  "warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
                  "inductor_loaded_by_the_worker": loaded, "inductor_deterministic": inductor.deterministic}))
"""


def _probe(how: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _PROBE, how], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_deterministic_kernels_are_on_without_loading_the_compiler_and_reach_it_when_a_model_loads_it():
    got = _probe("worker-first")
    assert got == {"kernels": True, "warn_only": False, "inductor_loaded_by_the_worker": False,
                   "inductor_deterministic": True}, got


def test_a_compiler_already_loaded_is_made_deterministic_too():
    got = _probe("inductor-first")
    assert got["kernels"] is True and got["inductor_deterministic"] is True, got
