"""The worker's side of the timed windows: it answers the queries the host issues (the host is the load generator).

Once its model is loaded, before its prediction pass and before the data are in its folder, the worker
connects to the host's Unix socket (``--loadgen PATH``; in a container a folder the host mounts), says hello,
then answers each query the host sends: the examples arrive with the query (the first time the model sees
them: a cache of earlier answers has nothing to replay), the answer echoes the query's nonce. The host stamps
issue and answer with its own clock; those stamps are the figures, which the host sends back at the end, once
it has put the data files in place, for the worker to write (:func:`dynadesk.evaluator.timing.assemble`).
What the worker still measures itself is the noise of each window (other processes' CPU, steal,
throttling, :func:`measurement.competition`), which it reports when asked. Protocol:
``dynadesk/orchestration/loadgen.py``.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dynadesk.evaluator import timing
from dynadesk.evaluator.measurement import CpuSnapshot, competition, median, snapshot
from dynadesk.evaluator.schema import LOADGEN_PROTOCOL

MAX_LINE = 64 << 20


class ServeError(RuntimeError):
    """The host refused the worker's timed windows, or its connection broke."""


class _Channel:
    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(str(path))
        except OSError as exc:
            raise ServeError(f"cannot reach the host's load generator at {path}: {exc}") from exc
        self.rfile = self.sock.makefile("rb")

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def recv(self) -> dict[str, Any]:
        line = self.rfile.readline(MAX_LINE + 1)
        if not line:
            raise ServeError("the host closed the load generator's connection")
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ServeError("a message from the host that is not an object")
        return message

    def close(self) -> None:
        self.sock.close()


def serve(worker: timing.Timed, threads: int, sync: Callable[[], None] | None, path: Path,
          after: Callable[[], None] | None = None) -> dict[str, Any]:
    """Answer the host's timed queries until it sends its figures; returns :func:`timing.assemble`'s result.
    ``after`` runs before the worker acknowledges the figures: the host counts the windows as on until then
    (the worker gives back what they held, so the host's memory samples after them are the pass's)."""
    channel = _Channel(path)
    try:
        channel.send({"hello": LOADGEN_PROTOCOL})
        return _answer(channel, worker, threads, sync, after)
    except BaseException as exc:
        if not isinstance(exc, ServeError):
            try:
                channel.send({"op": "error", "why": f"{type(exc).__name__}: {exc}"[:300]})
            except OSError:
                pass
        raise
    finally:
        channel.close()


def _answer(channel: _Channel, worker: timing.Timed, threads: int, sync: Callable[[], None] | None,
            after: Callable[[], None] | None) -> dict[str, Any]:
    windows: list[tuple[CpuSnapshot, CpuSnapshot]] = []
    before: CpuSnapshot | None = None
    generation = _GenerationWindows(worker)
    while True:
        message = channel.recv()
        op = message.get("op")
        if op == "query":
            t0 = time.perf_counter()
            preds = worker.predict(message["examples"])
            if sync:
                sync()
            channel.send({"nonce": message.get("nonce"), "predictions": preds, "seconds": time.perf_counter() - t0})
        elif op == "window":
            generation.start(message)
            before = snapshot()
        elif op == "end" and before is not None:
            windows.append((before, snapshot()))
            generation.end()
            before = None
        elif op == "noise":
            harness = message.get("harness_cpu_s")
            harness_s = float(harness) if isinstance(harness, (int, float)) and harness >= 0 else 0.0
            channel.send({"noise": competition(windows, threads, harness_cpu_s=harness_s)})
            windows = []
        elif op == "done":
            result = timing.assemble(generation.added_to(message["datasets"]), worker.spec.settings)
            if after:
                after()
            channel.send({"op": "written"})
            return result
        elif op == "refuse":
            raise ServeError(f"the host refused the timed windows: {message.get('why')}")
        else:
            raise ServeError(f"an unknown message from the host: {str(message)[:80]}")


class _GenerationWindows:
    """A generative adapter's tokens per second (batched windows) and time to first token (batch-1 windows),
    counted inside the host's windows only (warm-up calls excluded). These two are the worker's own figures: the
    host times whole queries, not tokens (docs/measurement.md names them among the in-process figures)."""

    def __init__(self, worker: timing.Timed):
        self.stats = getattr(getattr(worker, "adapter", None), "stats", None)  # generative.GenerationStats
        self.current: tuple[str, str] | None = None
        self.seen: dict[tuple[str, str], dict[str, Any]] = {}

    def start(self, message: dict[str, Any]) -> None:
        self.current = (str(message.get("set", "")), str(message.get("mode", "")))
        if self.stats is not None:
            self.stats.reset()

    def end(self) -> None:
        if self.stats is None or self.current is None:
            return
        acc = self.seen.setdefault(self.current, {"first": [], "tokens": 0, "seconds": 0.0})
        acc["first"] += list(self.stats.first_token_seconds)
        acc["tokens"] += int(self.stats.tokens)
        acc["seconds"] += float(self.stats.seconds)
        self.current = None

    def added_to(self, datasets: dict[str, Any]) -> dict[str, Any]:
        """The host's per-set figures with each set's ``generation`` figures beside them (none for other models)."""
        for name, figures in datasets.items():
            gen: dict[str, float] = {}
            one, many = self.seen.get((name, "batch1")), self.seen.get((name, "batched"))
            if one and one["first"]:
                gen["time_to_first_token_ms"] = 1000.0 * median(one["first"])
            if many and many["tokens"] and many["seconds"] > 0:
                gen["tokens_per_second"] = many["tokens"] / many["seconds"]
            figures["generation"] = gen
        return datasets
