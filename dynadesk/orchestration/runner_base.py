"""The runner contract: where the evaluation worker runs, as one typed interface every runner implements.

A runner takes a run folder's paths (:class:`~.folder.RunPaths`: spec, data, model, out) and the run's
:class:`~.limits.Limits`, runs ``python -m dynadesk.evaluator`` on them somewhere (a subprocess, a container,
another machine), and returns a :class:`RunOutcome`: a verdict, the log, and the :class:`~.observe.HostObservation`
(the timed windows it issued and the memory it sampled) that bounds the worker's measured figures. It never raises
for a failed run. Nothing here imports docker: the Docker runner is :mod:`.docker_runner`, the subprocess one
:mod:`.local_runner`, the other-machine one :mod:`.remote_runner`; :mod:`.runners` re-exports them all.
"""

from __future__ import annotations

import abc
import contextlib
import json
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from dynadesk.errors import RunFolderError
from dynadesk.orchestration.daemon import DaemonStatus, host_gpu_count
from dynadesk.orchestration.folder import ERROR_FILE, RunFolder, RunPaths, read_no_follow, tree_bytes
from dynadesk.orchestration.limits import ALL_LIMITS, Limits
from dynadesk.orchestration.observe import HostObservation
from dynadesk.orchestration.output import log_tail

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.orchestration.daemon import DockerClient
    from dynadesk.orchestration.request import RunRequest
    from dynadesk.progress import ProgressFn

__all__ = ["VERDICTS", "HostObservation", "Limits", "RunOutcome", "RunPaths", "Runner", "Watch", "finished"]

POLL_S = 0.2
VERDICTS = ("ok", "oom", "timeout", "disk", "error", "missing_image", "gpu_unavailable", "cancelled", "interrupted",
            "out_of_bounds")


@dataclass
class RunOutcome:
    """What happened to one run, wherever it ran: the verdict, the worker's log and what the host observed."""

    verdict: str  # one of VERDICTS
    exit_code: int | None
    log: str
    seconds: float
    message: str = ""
    details: dict[str, object] = field(default_factory=dict)  # a runner's own extras (Docker: OOMKilled, image)
    observed: HostObservation | None = None  # None: the run never got as far as its timed windows

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    def to_wire(self) -> dict[str, object]:
        """The outcome as JSON, as it crosses machines (a queue worker's signed result, a remote agent's answer)."""
        return {"verdict": self.verdict, "exit_code": self.exit_code, "message": self.message,
                "seconds": self.seconds, "log": self.log,
                "observed": self.observed.to_dict() if self.observed is not None else None}

    @classmethod
    def from_wire(cls, raw: dict[str, object], log_limit: int | None = None) -> RunOutcome:
        """The outcome :meth:`to_wire` wrote (from another machine: each field checked for its type)."""
        verdict, code, seconds = raw.get("verdict"), raw.get("exit_code"), raw.get("seconds", 0.0)
        if verdict not in VERDICTS:
            verdict = "error"
        log = str(raw.get("log") or "")
        return cls(str(verdict), code if isinstance(code, int) and not isinstance(code, bool) else None,
                   log[-log_limit:] if log_limit else log,
                   float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else 0.0,
                   str(raw.get("message") or ""), observed=HostObservation.from_dict(raw.get("observed")))


class Runner(abc.ABC):
    """Interface: ``run(paths, limits, progress, cancel) -> RunOutcome``; see the module docstring."""

    name: ClassVar[str] = "base"
    sandboxed: ClassVar[bool] = False
    enforced_limits: ClassVar[frozenset[str]] = ALL_LIMITS  # the Limits fields this kind of runner applies

    @abc.abstractmethod
    def run(self, paths: RunPaths, limits: Limits, progress: ProgressFn | None = None,
            cancel: CancelToken | None = None) -> RunOutcome:
        """Run the worker on ``paths`` under ``limits``; never raises for a failed run (see RunOutcome)."""

    @classmethod
    def for_request(cls, request: RunRequest, client: DockerClient | None = None) -> Runner:
        """The runner for ``request``; make_runner calls it for the registered class (``client``: a Docker
        client to reuse, for the runners that use one)."""
        return cls()

    @classmethod
    def gpu_status(cls, timeout: float = 3.0) -> DaemonStatus:
        """Can a run on this kind of runner get a GPU (the app's GPU box asks this, never the runner's name)."""
        n = host_gpu_count()
        return DaemonStatus(n > 0, f"{n} GPU(s)" if n else "no GPU answers on this machine (no NVIDIA driver or "
                                                             "device)")

    @classmethod
    def remove_leftovers(cls, under: Path) -> int:
        """Remove what runs under ``under`` left behind when the process watching them was killed (a queue worker
        restarting); how many. A subprocess dies with its session: nothing to remove by default."""
        return 0

    def check_ready(self) -> None:  # noqa: B027 - a no-op hook: runners with nothing to check keep it
        """Raise a library error now when this runner cannot start (before a run record is made)."""

    def image_id(self) -> str | None:
        """The Id of the image the run uses (None: no image)."""
        return None

    def image_name(self) -> str | None:
        """The name of the image the run uses, as asked (None: no image)."""
        return None

    def describe(self) -> dict[str, str | bool]:
        """What a run records of its runner (``runner``, ``sandboxed``, and ``image`` for an image's runner)."""
        return {"runner": self.name, "sandboxed": self.sandboxed}


def error_message(out_dir: Path, exit_code: int | None, log: str) -> str:
    """The worker's own error.json message when it wrote one, else the exit code and log tail."""
    try:
        data = json.loads(read_no_follow(out_dir / ERROR_FILE, 1 << 20))
        return f"the worker failed ({data.get('kind')}): {data.get('message')}"
    except (RunFolderError, ValueError, AttributeError):
        return f"the worker exited with code {exit_code}; last log lines:\n{log_tail(log)}"


def disk_message(limits: Limits) -> str:
    return (f"the run wrote more than its {limits.out_bytes / (1 << 30):.2f} GiB output limit to /out and was "
            "stopped; its output was removed (raise the limit only for a model you trust)")


@contextlib.contextmanager
def interrupts_held() -> Iterator[list[int]]:
    """Hold Ctrl-C and SIGTERM while a worker starts (a process, a container); yields the signals that arrived
    meanwhile, which the caller raises again (:func:`raise_held`) once the worker is in its hands.

    A signal inside ``subprocess.Popen`` after its fork (the parent waits there for the child's exec, tens of
    milliseconds on a loaded machine) raised KeyboardInterrupt out of Popen itself: the caller never got the
    process, so its interrupt handler could not stop it and the worker outlived the interrupted CLI (seen once in
    a clean-clone run, and 1 in 5 under three busy loops, of the SIGTERM test in tests/eval/test_eval_local.py).
    The same inside Docker's ``containers.create`` left the made container behind. The same signal a second time
    is not held: its handler runs at once (a user pressing Ctrl-C twice, a daemon that does not answer).
    Only the main thread can set handlers; elsewhere (the app's and the queue's threads) nothing is held, and a
    handler set outside Python is left as it is."""
    arrived: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield arrived
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    held = [sig for sig, handler in previous.items() if handler is not None and handler != signal.SIG_IGN]

    def restore() -> None:
        for sig in held:
            signal.signal(sig, previous[sig])

    def hold(signum: int, _frame: object) -> None:
        if signum in arrived:  # the second one: no longer held
            restore()
            signal.raise_signal(signum)
        arrived.append(signum)
    for sig in held:
        signal.signal(sig, hold)
    try:
        yield arrived
    finally:
        restore()


def raise_held(arrived: list[int]) -> None:
    """Deliver the signals :func:`interrupts_held` held, to the handlers they would have met."""
    for sig in dict.fromkeys(arrived):
        signal.raise_signal(sig)


class Watch:
    """The checks of a run's poll loop: cancel, wall-clock timeout, /out size."""

    def __init__(self, paths: RunPaths, limits: Limits, cancel: CancelToken | None):
        self.paths, self.limits, self.cancel = paths, limits, cancel
        self.start = time.monotonic()

    def verdict(self) -> str | None:
        if self.cancel is not None and self.cancel.cancelled():
            return "cancelled"
        if time.monotonic() - self.start > self.limits.timeout_s:
            return "timeout"
        if tree_bytes(self.paths.out_dir) > self.limits.out_bytes:
            return "disk"
        return None

    def elapsed(self) -> float:
        return time.monotonic() - self.start


def finished(verdict: str | None, code: int | None, log: str, seconds: float, paths: RunPaths, limits: Limits,
             observed: HostObservation | None = None, details: dict[str, object] | None = None) -> RunOutcome:
    """The verdict of a finished run from its poll loop's verdict and exit code (a container's OOM is decided by
    its caller)."""
    details = details or {}

    def outcome(verdict: str, message: str) -> RunOutcome:
        return RunOutcome(verdict, code, log, seconds, message, details, observed)
    if verdict == "timeout":
        return outcome("timeout", f"the run exceeded its {limits.timeout_s:g} s limit and was stopped")
    if verdict == "cancelled":
        return outcome("cancelled", "cancelled by the user")
    if verdict == "disk":
        RunFolder(paths.out_dir.parent).clear_out()
        return outcome("disk", disk_message(limits))
    if code == 0:
        return outcome("ok", "")
    if code == -signal.SIGKILL:
        return outcome("oom", "the worker was killed (SIGKILL), most likely by the kernel's out-of-memory killer")
    refused = observed.refused if observed is not None else None
    if refused:  # the host's load generator refused the timed windows, and the worker stopped on that
        return outcome("out_of_bounds", f"the host refused this run's timed windows: {refused}")
    return outcome("error", error_message(paths.out_dir, code, log))
