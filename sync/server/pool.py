"""The upload check pool: an upload's costly, database-free work in worker processes (issues 32 and 39).

Verifying the Ed25519 signature, parsing the JSON, the RFC 8785 canonical-form check and the schema
check cost up to tens of milliseconds of pure Python for a 1 MiB body. Done in the serving process
they held its GIL, so one registered key's flood of costly bodies raised the board's read latency
eight-fold. Here they run in a :class:`concurrent.futures.ProcessPoolExecutor` sized to the cores and
started with the app (its lifespan), its processes at the lowest CPU priority (``nice 19``) so a busy pool
yields the cores to the process answering board reads. The serving process keeps only the cheap,
database-bound steps (:mod:`dynadesk.sync.server.ingest`).

Only where it pays (issue 50 item 4): the round trip to a pool process (pickling the body and the facts, a
context switch, the forkserver's worker) costs more CPU than checking a bundle of a few KiB, so a body up to
:data:`INLINE_MAX_BYTES` is checked in the serving process unless more than half of :attr:`UploadPool.bound` uploads
are admitted (a flood): then every body goes to the pool, where its priority is the lowest.

Admission is bounded: at most :attr:`UploadPool.bound` uploads wait for or are in the pool at once in a
serving process (their bodies held in memory); the next is answered 503 ``server_busy`` with
``Retry-After`` at once, so a flood never grows a queue. (Admission comes after the body is read, so a
client sending its body slowly holds no place another upload could use.)
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from dynadesk.errors import (
    BundleFormatError,
    DynaDeskError,
    FingerprintMismatch,
    ServerBusyError,
    SignatureError,
)
from dynadesk.sync.format import attestation as _att
from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.envelope import FORMAT, parse_bundle, split_envelope
from dynadesk.sync.format.parts import json_of
from dynadesk.sync.rules.board_stats import bundle_stats
from dynadesk.sync.rules.claims import claim_key
from dynadesk.sync.server.migrations import results_key
from dynadesk.sync.server.values import observed_outcomes

T = TypeVar("T")

QUEUE_PER_PROCESS = 8   # uploads admitted per pool process (being checked or waiting for one)
INLINE_MAX_BYTES = 32 * 1024  # a body up to this is checked in the serving process when no flood is on (~1-5 ms)
WORKER_NICE = 19        # CFS weight 15 vs 1024: a busy pool leaves ~98% of a contended core to board reads
BUSY_RETRY_S = 1
# Canonical bytes a bundle's free-form objects may take: they are stored and served for every row.
MAX_SETTINGS_BYTES = 16 * 1024
MAX_ENVIRONMENT_BYTES = 16 * 1024


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, e.g. a container's cpuset), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def default_processes(serve_workers: int = 1) -> int:
    """Pool processes per serving process: the cores shared among ``serve --workers`` (at least one each)."""
    return max(1, math.ceil(usable_cores() / max(1, serve_workers)))


def _worker_start(nice: int) -> None:
    """In each pool process: lower priority; Ctrl-C is the serving process's to handle, not the workers'."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice:
        try:
            os.nice(nice)
        except OSError:  # not permitted here: the pool still works, only without the priority drop
            pass


class UploadPool:
    """Bounded admission plus a process pool (``processes=0``: the checks run in the calling thread).

    :meth:`start` / :meth:`shutdown` belong to the app's lifespan; :meth:`run` before :meth:`start`
    (an app used without its lifespan) runs in the calling thread too."""

    def __init__(self, processes: int, bound: int | None = None, nice: int = WORKER_NICE):
        if processes < 0:
            raise ValueError("processes must be 0 or more")
        self.processes = processes
        self.bound = bound if bound is not None else QUEUE_PER_PROCESS * max(1, processes)
        self.nice = nice
        self._executor: Executor | None = None
        self._in_flight = 0
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._executor is not None

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def start(self) -> None:
        """Create the executor; its processes are forked on demand from a fork server that has imported the
        checks once (never forked from the serving process, whose threads hold database connections)."""
        if self.processes == 0:
            return
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        ctx = multiprocessing.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload([__name__])
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(self.processes, mp_context=ctx, initializer=_worker_start,
                                                     initargs=(self.nice,))

    def shutdown(self) -> None:
        """Wait for the checks under way, cancel queued ones, end the processes."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    @contextmanager
    def admit(self) -> Iterator[None]:
        """One upload's place; :class:`ServerBusyError` (503) when :attr:`bound` are already admitted."""
        with self._lock:
            if self._in_flight >= self.bound:
                raise ServerBusyError(f"the server is checking {self._in_flight} uploads already (its limit per"
                                      f" process); retry in {BUSY_RETRY_S} s", BUSY_RETRY_S)
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    def inline(self, size: int) -> bool:
        """Whether a ``size``-byte body is better checked in the calling thread than in the pool: no pool, or a
        small body while at most half the admission places are taken (more is a flood: the pool takes all)."""
        return self._executor is None or (size <= INLINE_MAX_BYTES and self._in_flight <= self.bound // 2)

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a pool process (blocking the calling thread, not holding its GIL), or here.

        A pool whose process died (killed for memory, say) is replaced, and the upload caught in it is
        answered 503 with ``Retry-After`` (:class:`ServerBusyError`), never a 500."""
        executor = self._executor
        if executor is None:
            return fn(*args)
        try:
            return executor.submit(fn, *args).result()
        except BrokenProcessPool:
            self._replace(executor)
            raise ServerBusyError("the server's upload check process stopped while checking this upload; it has"
                                  f" been restarted: retry in {BUSY_RETRY_S} s", BUSY_RETRY_S) from None

    def _replace(self, broken: Executor) -> None:
        with self._lock:
            if self._executor is not broken:  # another thread has replaced it already
                return
            self._executor = None
        broken.shutdown(wait=False, cancel_futures=True)
        self.start()


# ---------------------------------------------------------------------------------------------- the checks
@dataclass(frozen=True)
class Outcome:
    """What a pool process found: whether the signature verified (the key's rate limit is charged only then),
    the parsed document's facts, or the refusal."""

    verified: bool
    facts: dict[str, Any] | None = None
    error: DynaDeskError | None = None


def _verified(raw: bytes, fmt: str, what: str) -> None:
    split_envelope(raw, what, fmt).verify(what)


def _bundle_facts(raw: bytes, what: str) -> dict[str, Any]:
    """Everything the serving process needs from a signed bundle (not its free-form settings or environment)."""
    bundle = parse_bundle(raw, what)
    p = bundle.payload
    for name, part in (("settings", p.settings), ("request", p.request),  # settings: version 1
                       ("worker_settings", p.worker_settings), ("environment", p.environment)):
        if part is None:
            continue
        size = len(canonical_bytes(json_of(part)))
        limit = MAX_ENVIRONMENT_BYTES if name == "environment" else MAX_SETTINGS_BYTES
        if size > limit:
            raise BundleFormatError(f"payload.{name}: {size} bytes in canonical form; at most {limit} are accepted")
    return {"id": bundle.id, "sha256": hashlib.sha256(bundle.raw).hexdigest(),
            "key_fingerprint": bundle.key_fingerprint, "task": bundle.task, "model": p.model.to_json(),
            "created_at": p.created_at, "task_digest": p.task_digest, "metrics": p.metric_rows(),
            "datasets": [d.to_json() for d in p.datasets], "results_key": results_key(p), "claim_key": claim_key(p),
            "predictions_digest": p.predictions.digest, "observed": observed_outcomes(p),
            "intervals": [iv.to_json() for iv in p.intervals or ()],
            "stats": bundle_stats(p)}  # intervals, outcomes and shared resamples (issue 36), worked out here too


def _attestation_facts(raw: bytes, what: str) -> dict[str, Any]:
    att = _att.parse_attestation(raw, what)
    att.verify()
    return {"id": att.id, "sha256": hashlib.sha256(att.raw).hexdigest(), "bundle_id": att.bundle_id,
            "verdict": att.verdict, "summary": att.summary(), "created_at": att.payload["created_at"],
            "problem": _att.verdict_problem(att.payload)}


def check_document(raw: bytes, fmt: str, what: str, signature_checked: bool = False) -> Outcome:
    """The costly checks of one uploaded document, in a pool process: the signature first (a forged body costs
    one verification, nothing more), then parsing, canonical form and schema. Never raises a refusal: it is
    returned, with whether the signature verified. ``signature_checked``: this very object's signature was
    verified in this process already (:func:`dynadesk.sync.server.ingest.verified_signer`), so not twice."""
    if not signature_checked:
        try:
            _verified(raw, fmt, what)
        except (SignatureError, FingerprintMismatch, BundleFormatError) as exc:
            return Outcome(False, error=exc)
    try:
        return Outcome(True, _bundle_facts(raw, what) if fmt == FORMAT else _attestation_facts(raw, what))
    except DynaDeskError as exc:
        return Outcome(True, error=exc)
