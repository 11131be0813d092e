"""Micro-batching of live predictions: one queue and one thread per model.

Annotators in a room submit at about the same time; each request waits at most ``window_s`` for others
to the same model, then one forward pass answers them all (:meth:`LivePredictor.predict_batch`). Each model
has its own thread and its own :class:`LivePredictor`, so a slow (or loading) model never holds up the
others, and callers block only their own worker thread, never the event loop. When a batch fails, its
requests are answered one by one, so one bad input does not fail its neighbours.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

RunBatch = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]

DEFAULT_WINDOW_S = 0.005
DEFAULT_MAX_BATCH = 16


@dataclass
class BatchInfo:
    """What one answer cost: time queued, the batch's forward pass, the batch's size."""

    queued_ms: float
    predict_ms: float
    batch_size: int


Answer = tuple[dict[str, Any], BatchInfo]


@dataclass
class _Job:
    inputs: dict[str, Any]
    future: Future[Answer] = field(default_factory=Future)
    queued_at: float = field(default_factory=time.monotonic)


class MicroBatcher:
    """Collect requests for ``window_s`` (or until ``max_batch``), run one batch, answer each request."""

    def __init__(self, name: str, run_batch: RunBatch, window_s: float = DEFAULT_WINDOW_S,
                 max_batch: int = DEFAULT_MAX_BATCH):
        if max_batch < 1 or window_s < 0:
            raise ValueError("max_batch must be >= 1 and window_s >= 0")
        self.name = name
        self.window_s = window_s
        self.max_batch = max_batch
        self._run = run_batch
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._busy = False
        self._waiting = 0
        self.batches = 0
        self.answered = 0
        self._thread = threading.Thread(target=self._loop, name=f"hub-model-{name}", daemon=True)
        self._thread.start()

    def submit(self, inputs: dict[str, Any]) -> Future[Answer]:
        job = _Job(inputs)
        with self._lock:
            self._waiting += 1
        self._queue.put(job)
        return job.future

    def predict(self, inputs: dict[str, Any]) -> Answer:
        """Blocking: this request's answer and what it cost (raises the model's error for this input)."""
        return self.submit(inputs).result()

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {"model": self.name, "busy": self._busy, "waiting": self._waiting, "batches": self.batches,
                    "answered": self.answered}

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)

    def _collect(self, first: _Job) -> tuple[list[_Job], bool]:
        batch, stop = [first], False
        deadline = time.monotonic() + self.window_s
        while len(batch) < self.max_batch:
            left = deadline - time.monotonic()
            try:
                job = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if job is None:
                stop = True
                break
            batch.append(job)
        return batch, stop

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch, stop = self._collect(first)
            with self._lock:
                self._busy = True
            try:
                self._answer(batch)
            finally:
                with self._lock:
                    self._busy = False
                    self._waiting -= len(batch)
                    self.batches += 1
                    self.answered += len(batch)
            if stop:
                return

    def _answer(self, batch: list[_Job]) -> None:
        started = time.monotonic()
        try:
            outputs = self._run([j.inputs for j in batch])
        except Exception:  # noqa: BLE001 - answer one by one: each request gets its own result or error
            outputs = None
        if outputs is not None and len(outputs) == len(batch):
            took = (time.monotonic() - started) * 1000
            for job, out in zip(batch, outputs):
                job.future.set_result((out, BatchInfo((started - job.queued_at) * 1000, took, len(batch))))
            return
        for job in batch:
            one = time.monotonic()
            try:
                out = self._run([job.inputs])[0]
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller, who raises it
                job.future.set_exception(exc)
            else:
                job.future.set_result((out, BatchInfo((started - job.queued_at) * 1000,
                                                      (time.monotonic() - one) * 1000, 1)))


class BatcherPool:
    """One :class:`MicroBatcher` per model digest, made on first use (a changed model gets a new one)."""

    def __init__(self, make_run: Callable[[Any], RunBatch], window_s: float = DEFAULT_WINDOW_S,
                 max_batch: int = DEFAULT_MAX_BATCH):
        self._make_run = make_run
        self.window_s = window_s
        self.max_batch = max_batch
        self._by_digest: dict[str, MicroBatcher] = {}
        self._lock = threading.Lock()

    def for_record(self, record: Any) -> MicroBatcher:
        with self._lock:
            b = self._by_digest.get(record.digest)
            if b is None:
                b = MicroBatcher(record.name, self._make_run(record), self.window_s, self.max_batch)
                self._by_digest[record.digest] = b
            return b

    def status(self) -> list[dict[str, Any]]:
        with self._lock:
            return [b.status() for b in self._by_digest.values()]

    def close(self) -> None:
        with self._lock:
            batchers, self._by_digest = list(self._by_digest.values()), {}
        for b in batchers:
            b.close()
