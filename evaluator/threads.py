"""Torch's thread count and OpenMP wait policy, chosen from the cores actually free (issue 50).

PyTorch's OpenMP threads spin-wait between parallel regions by default. On a quiet machine that saves the
wake-up at every op (batch 1 is ~24% faster than with passive waiting); on a busy one each spinning thread
burns a core another process wants and waits for a sibling the scheduler has parked: with 2 threads on 2 busy
cores, 2 threads ran 2.8x slower than 1 at batch 32 and 7x slower at batch 1, while ``OMP_WAIT_POLICY=PASSIVE``
gave the same logits bit for bit, 5-27x faster. A fixed policy trades one case for the other, so this module
measures the cores that are busy for a moment and chooses:

- quiet (less than :data:`BUSY_CORE` of a core busy): every available core, the default (spinning) policy;
- busy: ``PASSIVE`` waiting, and only the cores that are free (at least one thread).

The wait policy is read once, when the OpenMP runtime loads (``import torch``), so it can only be set before:
:func:`prepare_process` does that first thing in the worker (its ``__main__``), and :func:`child_environment`
gives a subprocess's environment. The thread count can change at any time (:func:`apply`). An explicit
``OMP_WAIT_POLICY`` in the environment is kept; the run's thread setting is a cap. Stdlib and (optionally) psutil
only: the evaluator image and the host both import it.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from dynadesk.evaluator.environment import cores_available

BUSY_CORE = 0.5
"""Cores busy with other work (summed over this process's cores) below which the machine counts as quiet."""

SAMPLE_SECONDS = 0.25
"""How long the busy cores are sampled: long enough to see a busy-loop, short beside a model load."""

WAIT_ENV = "OMP_WAIT_POLICY"


@dataclass(frozen=True)
class ThreadPolicy:
    """One choice and what it was made from: recorded in the run's environment."""

    threads: int  # torch.set_num_threads
    wait_policy: str  # OMP_WAIT_POLICY in effect when torch loads: PASSIVE, ACTIVE or default
    cores: int  # cores this process may use (affinity, CPU quota)
    busy_cores: float  # cores' worth of CPU busy with other work over the sample
    load_1min: float | None  # os.getloadavg()[0], for the reader
    chosen_by: str  # "measured", or "environment" (OMP_WAIT_POLICY was given: kept)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_prepared: ThreadPolicy | None = None


def busy_cores(seconds: float = SAMPLE_SECONDS) -> float:
    """Cores' worth of CPU in use over ``seconds`` on the cores this process may run on.

    psutil's per-CPU busy time when installed; else the 1-minute load average (slower to follow a change).
    """
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = list(range(os.cpu_count() or 1))
    try:
        import psutil
    except ImportError:
        return float(min(len(allowed), _load()))
    per_cpu = psutil.cpu_percent(interval=seconds or None, percpu=True)  # 0: since the previous call
    return sum(per_cpu[i] for i in allowed if i < len(per_cpu)) / 100.0


def wait_until_quiet(limit_s: float, quiet_s: float) -> float:
    """Wait until the cores this process may use have been less than :data:`BUSY_CORE` busy over ``quiet_s``
    seconds in a row, or ``limit_s`` passed; the seconds waited. Timed tests start so: a run timed while another
    test's processes wound down, then audited on a quiet machine, read as a disputed claim (p50 3.1 vs 1.7 ms)."""
    start = time.monotonic()
    while busy_cores(quiet_s) >= BUSY_CORE and time.monotonic() - start < limit_s:
        pass
    return time.monotonic() - start


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def choose(cores: int, busy: float, cap: int | None = None, env_policy: str | None = None,
           load_1min: float | None = None) -> ThreadPolicy:
    """The policy for ``cores`` usable cores of which ``busy`` are in use by others (pure: tests call it).

    ``cap`` (the run's CPU limit, ``settings.threads``) bounds the threads; it is not a count to use regardless.
    """
    cores = max(1, min(cores, cap)) if cap else max(1, cores)
    quiet = busy < BUSY_CORE
    free = max(0.0, cores - busy)
    threads = cores if quiet else max(1, min(cores, math.floor(free + 0.25)))
    wait = env_policy.upper() if env_policy else ("default" if quiet else "PASSIVE")
    chosen_by = "environment" if env_policy else "measured"
    return ThreadPolicy(threads=threads, wait_policy=wait, cores=cores, busy_cores=round(busy, 2),
                        load_1min=None if load_1min is None else round(load_1min, 2), chosen_by=chosen_by)


_sampled_at: tuple[float, float] | None = None  # (monotonic, this process's CPU seconds) at measure()'s sample


def measure(cap: int | None = None) -> ThreadPolicy:
    """Sample the busy cores now and choose (the environment's ``OMP_WAIT_POLICY`` wins when set)."""
    global _sampled_at
    busy = busy_cores()
    _sampled_at = (time.monotonic(), time.process_time())
    return choose(cores_available(), busy, cap, os.environ.get(WAIT_ENV) or None, _load())


def others_busy_since() -> float:
    """Cores' worth of CPU other processes used since :func:`measure` sampled: psutil's count since then less
    this process's own CPU (importing torch), over at least :data:`SAMPLE_SECONDS`: a longer look at the
    machine, at no cost to the run."""
    global _sampled_at
    if _sampled_at is None:
        return busy_cores()
    t0, cpu0 = _sampled_at
    wait = SAMPLE_SECONDS - (time.monotonic() - t0)
    if wait > 0:
        time.sleep(wait)
    busy = busy_cores(0.0)
    now, cpu = time.monotonic(), time.process_time()
    _sampled_at = (now, cpu)  # psutil's count restarts here too: a next call looks from now on
    return max(0.0, busy - (cpu - cpu0) / max(now - t0, 1e-3))


def prepare_process(cap: int | None = None) -> ThreadPolicy:
    """Choose before torch loads and set ``OMP_WAIT_POLICY`` for this process's OpenMP runtime.

    After ``import torch`` the wait policy is fixed: then only the thread count is chosen (recorded as such).
    """
    global _prepared
    policy = measure(cap)
    if "torch" not in sys.modules and policy.wait_policy != "default":
        os.environ[WAIT_ENV] = policy.wait_policy
    elif "torch" in sys.modules and policy.chosen_by == "measured":
        policy = ThreadPolicy(**{**policy.to_dict(), "wait_policy": os.environ.get(WAIT_ENV, "default")})
    _prepared = policy
    return policy


def load_torch(others_beside: bool = False) -> ThreadPolicy:
    """Load torch in this process under a policy chosen from the cores free now (:func:`prepare_process`) and
    set its thread count; the policy.

    ``others_beside``: other work the sample cannot see yet is about to share the cores (the demo's evaluator image
    build beside its first training; the test suite's parallel workers, all starting at once): the threads then
    wait passively on a quiet machine too. The wait policy is read when torch loads, so it is set just for that and
    removed after (this process's children choose their own); a policy the user set is kept."""
    given = os.environ.get(WAIT_ENV)
    if others_beside and given is None:
        os.environ[WAIT_ENV] = "PASSIVE"
    try:
        policy = prepare_process()
        apply(policy)  # loads torch, under the policy
    finally:
        if given is None:
            os.environ.pop(WAIT_ENV, None)
    return policy


def for_training(others_beside: bool = False) -> ThreadPolicy:
    """The policy a training in this process runs under, applied: the wait policy chosen when this process loaded
    torch (:func:`load_torch`, now where it has not yet), on every usable core whatever the load. A training's
    float reductions depend on its thread count, so a count chosen from the load would give another model for the
    same data and seed on a busier machine, and a run resumed from its checkpoint (``models train --resume``,
    another process) another model than the uninterrupted one; the wait policy changes no number. A training
    that chose nothing spun every core: the demo zoo's small build took 99.6 s (71.7 CPU-s) beside three busy
    loops, 45.1 s (21.8 CPU-s) waiting passively on both threads, 47.7 s on one."""
    policy = _prepared if _prepared is not None else load_torch(others_beside)
    policy = replace(policy, threads=policy.cores)
    apply(policy)
    return policy


def after_torch_loaded(start: ThreadPolicy, cap: int | None = None) -> ThreadPolicy:
    """The thread count chosen again from a second sample, once torch has loaded and before the model loads (and
    the windows and the pass), under the wait policy torch loaded with: the start's sample is one 0.25 s look, and
    a burst of other work there (a build step, a tokenizer child, another user's command) set the whole run's
    threads. Seen: a demo's MiniLM runs on 1 passive thread on a quiet machine, 155 against 251 examples/s batched.
    The sample spans torch's import (:func:`others_busy_since`); what the run started with stays in the record
    (``at_start``)."""
    now = choose(cores_available(), others_busy_since(), cap, None, _load())
    return replace(now, wait_policy=start.wait_policy, chosen_by=start.chosen_by)


def prepared(cap: int | None = None) -> ThreadPolicy:
    """The policy :func:`prepare_process` chose (its threads bounded by ``cap``), else one measured now."""
    policy = _prepared or prepare_process(cap)
    if cap and policy.threads > cap:
        policy = ThreadPolicy(**{**policy.to_dict(), "threads": cap, "cores": min(policy.cores, cap)})
    return policy


def child_environment(base: dict[str, str] | None = None, policy: ThreadPolicy | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the wait policy a torch subprocess should start with."""
    env = dict(os.environ if base is None else base)
    policy = policy or measure()
    if WAIT_ENV not in env and policy.wait_policy != "default":
        env[WAIT_ENV] = policy.wait_policy
    return env


def apply(policy: ThreadPolicy) -> None:
    """Set torch's intra-op thread count (any time; the wait policy was fixed when torch loaded)."""
    import torch

    torch.set_num_threads(policy.threads)


REFRESH_SECONDS = 5.0
"""A long-lived host process (the hub, the app's live predictions) re-chooses its thread count at most this often."""

_refreshed: tuple[float, ThreadPolicy] | None = None


def refresh(cap: int | None = None, every: float = REFRESH_SECONDS) -> ThreadPolicy:
    """In a process whose torch is already loaded: re-choose the thread count from the CPU busy since the last
    call (no sampling wait: psutil's count since then), at most every ``every`` seconds, and apply it.

    The wait policy stays what it was when torch loaded (recorded as such)."""
    global _refreshed
    now = time.monotonic()
    if _refreshed is not None and now - _refreshed[0] < every:
        return _refreshed[1]
    busy = busy_cores(0.0)  # the first call has no interval yet: it reads as quiet (all cores, as before)
    policy = choose(cores_available(), busy, cap, os.environ.get(WAIT_ENV, "default"), _load())
    apply(policy)
    _refreshed = (now, policy)
    return policy
