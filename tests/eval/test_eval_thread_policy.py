"""Torch's thread count and OpenMP wait policy from the cores actually free (issue 50 item 1).

Real processes throughout: busy-loop processes make the load, and the logits come from fresh Python processes
(OpenMP reads its wait policy once, when torch loads).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from dynadesk.evaluator import threads
from dynadesk.evaluator.environment import cores_available

MODEL = """
import hashlib, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
                            torch.nn.Linear(512, 3)).eval()
x = torch.randn(32, 32, 256)


def digests(counts):
    out = {}
    with torch.inference_mode():
        for n in counts:
            torch.set_num_threads(n)
            out[str(n)] = hashlib.sha256(model(x).softmax(-1).numpy().tobytes()).hexdigest()
    return out
"""
CHILD = """
import json, os, sys
from dynadesk.evaluator import threads
policy = threads.prepare_process()
print("measured", flush=True)
sys.stdin.readline()  # the busy loops are stopped: torch loads and predicts at the machine's own pace
""" + MODEL + """
print(json.dumps({"policy": policy.to_dict(), "omp": os.environ.get("OMP_WAIT_POLICY"),
                  "digests": digests((1, 2, policy.threads))}))
"""


def _busy_loops(count: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    code = f"import time\ne = time.time() + {seconds}\nwhile time.time() < e:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]


@pytest.fixture
def busy_machine():
    """Every core this process may use busy (and one more), for at most 60 s: the loops end by themselves."""
    loops = _busy_loops(cores_available() + 1, 60)
    time.sleep(0.5)
    yield
    for p in loops:
        p.kill()
        p.wait()


def test_busy_cores_mean_fewer_threads_and_passive_waiting_quiet_ones_all_cores():
    assert threads.choose(4, 0.1) == threads.ThreadPolicy(4, "default", 4, 0.1, None, "measured")
    assert (threads.choose(4, 2.0).threads, threads.choose(4, 2.0).wait_policy) == (2, "PASSIVE")
    assert threads.choose(2, 1.9).threads == 1 and threads.choose(2, 7.0).threads == 1
    assert threads.choose(8, 0.0, cap=2).threads == 2  # the run's CPU limit caps; it never raises
    assert threads.choose(2, 3.0, env_policy="active").wait_policy == "ACTIVE"  # a user's setting is kept


def test_the_measured_policy_uses_fewer_threads_on_a_busy_machine(busy_machine):
    policy = threads.measure()
    cores = cores_available()
    assert policy.busy_cores >= threads.BUSY_CORE, policy
    assert policy.threads <= max(1, cores - 1), policy
    assert policy.wait_policy == ("PASSIVE" if "OMP_WAIT_POLICY" not in os.environ else
                                  os.environ["OMP_WAIT_POLICY"].upper())


def test_predictions_are_bit_identical_under_the_chosen_policy():
    import torch

    scope: dict[str, object] = {}
    before = torch.get_num_threads()
    try:
        exec(MODEL, scope)  # this process: torch's default (spinning) wait, 1 and 2 threads
        default = scope["digests"]((1, 2))  # type: ignore[operator]
    finally:
        torch.set_num_threads(before)
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    loops = _busy_loops(cores_available() + 1, 60)
    child = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        time.sleep(0.5)
        assert child.stdout is not None and child.stdout.readline().strip() == "measured"
    finally:
        for p in loops:
            p.kill()
            p.wait()
    stdout, _ = child.communicate("go\n", timeout=120)
    assert child.returncode == 0
    chosen = json.loads(stdout)
    assert chosen["omp"] == "PASSIVE" and chosen["policy"]["wait_policy"] == "PASSIVE"  # set before torch loaded
    assert len(set(chosen["digests"].values()) | set(default.values())) == 1, (chosen, default)


def test_a_long_lived_process_drops_threads_while_the_machine_is_busy(busy_machine):
    import torch

    before = torch.get_num_threads()
    try:
        threads.refresh(every=0.0)  # starts psutil's interval
        time.sleep(0.3)
        policy = threads.refresh(every=0.0)
        assert policy.threads <= max(1, cores_available() - 1), policy
        assert torch.get_num_threads() == policy.threads
        assert threads.refresh(every=60.0) is policy  # re-chosen at most every `every` seconds
    finally:
        torch.set_num_threads(before)


RESAMPLE = """
import json, os, sys
from dynadesk.evaluator import threads
start = threads.prepare_process()
print("measured", flush=True)
sys.stdin.readline()  # the load changed: torch loads, as in the worker, then the threads are chosen again
import torch
again = threads.after_torch_loaded(start)
threads.apply(again)
print(json.dumps({"start": start.to_dict(), "again": again.to_dict(), "torch": torch.get_num_threads()}))
"""


def _start_then_again(load_at_start: bool) -> dict:
    """A child samples at its start (busy loops on every core, or none), the loops stop (or start), it imports
    torch and chooses again."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    loops = _busy_loops(cores_available() + 1, 60) if load_at_start else []
    time.sleep(0.5 if loops else 0.0)
    child = subprocess.Popen([sys.executable, "-c", RESAMPLE], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "measured"
        for p in loops:
            p.kill()
            p.wait()
        loops = [] if load_at_start else _busy_loops(cores_available() + 1, 60)
        time.sleep(0.0 if load_at_start else 1.5)  # the span the child looks at: mostly loaded
        stdout, _ = child.communicate("go\n", timeout=120)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    assert child.returncode == 0
    return json.loads(stdout)


def test_a_burst_at_the_workers_start_no_longer_sets_the_runs_threads():
    """The worker's start sample is one 0.25 s look: a burst there (the host's tokenizer child at a demo's start)
    gave a quiet machine's runs 1 passive thread, 155 against 251 examples/s. Once torch has loaded the threads are
    chosen again from what other processes used meanwhile; the wait policy stays the one torch loaded with."""
    got = _start_then_again(load_at_start=True)
    start, again = got["start"], got["again"]
    assert start["wait_policy"] == "PASSIVE" and start["threads"] <= max(1, cores_available() - 1), got
    assert again["threads"] == got["torch"] == cores_available() and again["wait_policy"] == "PASSIVE", got
    assert again["busy_cores"] < threads.BUSY_CORE, got


def test_load_that_starts_after_the_sample_takes_threads_away_before_the_model_loads():
    got = _start_then_again(load_at_start=False)
    start, again = got["start"], got["again"]
    assert start["threads"] == cores_available() and start["wait_policy"] == "default", got
    assert again["threads"] == got["torch"] <= max(1, cores_available() - 1) and again["wait_policy"] == "default", got

