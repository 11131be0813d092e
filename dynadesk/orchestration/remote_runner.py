"""The remote runner: a run on another machine, reached over a stream socket (an SSH tunnel in practice).

Another machine is a *runner* (docs/remote-runner.md says why): this class sends a run's spec, the model's view of
the data, the model and any earlier ``out/`` to the agent on that machine (:mod:`.remote_agent`), which runs them
with its own registered runner (``docker`` there, or ``local``) and sends back the progress, the
:class:`RunOutcome` with that machine's :class:`HostObservation` of the run (the timed windows its load generator
issued, the memory it sampled) and the ``out/`` folder. Everything after that (the host's recomputation of every
deterministic figure, the bounds on the measured ones, the store, the bundle) is what a local run gets.

Where the agent is: ``DYNADESK_REMOTE=HOST:PORT`` (the local end of the tunnel) and the shared token in the file
``DYNADESK_REMOTE_TOKEN_FILE``. The run is marked not sandboxed: this host cannot see how the agent's machine runs
it. The gold labels stay here: a runner is only ever given the model's view.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from dynadesk.errors import ConfigError, EvaluationError
from dynadesk.orchestration.daemon import DaemonStatus
from dynadesk.orchestration.folder import RunFolder, RunPaths
from dynadesk.orchestration.limits import Limits
from dynadesk.orchestration.remote_wire import WireError, recv_archive, recv_json, send_archive, send_json
from dynadesk.orchestration.runner_base import POLL_S, Runner, RunOutcome
from dynadesk.progress import ProgressEvent

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.orchestration.daemon import DockerClient
    from dynadesk.orchestration.request import RunRequest
    from dynadesk.progress import ProgressFn

__all__ = ["ADDRESS_VAR", "TOKEN_VAR", "RemoteRunner"]

ADDRESS_VAR = "DYNADESK_REMOTE"
TOKEN_VAR = "DYNADESK_REMOTE_TOKEN_FILE"
CONNECT_S = 10.0
GRACE_S = 30.0  # past its limit, how long the agent has to stop the run and answer
FIX = (f"start the agent on that machine (python -m dynadesk.orchestration.remote_agent), forward its port with "
       f"'ssh -L PORT:127.0.0.1:PORT host', and set {ADDRESS_VAR}=127.0.0.1:PORT and {TOKEN_VAR} "
       "(docs/remote-runner.md)")


def _address(raw: str) -> tuple[str, int]:
    host, _, port = raw.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{ADDRESS_VAR}={raw!r} is not HOST:PORT; {FIX}")
    return host, int(port)


class RemoteRunner(Runner):
    """The worker on another machine, through its agent; not sandboxed as far as this host can tell."""

    name = "remote"
    sandboxed = False
    enforced_limits: ClassVar[frozenset[str]] = frozenset({"timeout_s", "out_bytes"})  # here; the agent's own too

    def __init__(self, address: tuple[str, int], token: str):
        self.address = address
        self.token = token
        self.agent: dict[str, object] = {}

    @classmethod
    def from_environment(cls) -> RemoteRunner:
        """The agent named by ``DYNADESK_REMOTE`` and ``DYNADESK_REMOTE_TOKEN_FILE``."""
        raw, token_file = os.environ.get(ADDRESS_VAR, ""), os.environ.get(TOKEN_VAR, "")
        if not raw or not token_file:
            raise ConfigError(f"the remote runner needs {ADDRESS_VAR} and {TOKEN_VAR}; {FIX}")
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"{TOKEN_VAR}={token_file}: cannot read the token ({exc.strerror or exc})") from None
        return cls(_address(raw), token)

    @classmethod
    def for_request(cls, request: RunRequest, client: DockerClient | None = None) -> Runner:
        return cls.from_environment()

    @classmethod
    def gpu_status(cls, timeout: float = 3.0) -> DaemonStatus:
        """Asked of the agent, which asks its own runner (a GPU there, and its Docker's NVIDIA runtime)."""
        try:
            answer = cls.from_environment()._ask("gpu", timeout)
        except (ConfigError, EvaluationError) as exc:
            return DaemonStatus(False, str(exc))
        gpu = answer.get("gpu")
        if not isinstance(gpu, dict):
            return DaemonStatus(False, f"the remote agent at {cls.from_environment().shown} did not say")
        return DaemonStatus(bool(gpu.get("ok")), f"remote: {gpu.get('detail')}")

    @property
    def shown(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    def _connect(self, timeout: float) -> socket.socket:
        try:
            return socket.create_connection(self.address, timeout=timeout)
        except OSError as exc:
            raise EvaluationError(f"the remote agent at {self.shown} does not answer ({exc.strerror or exc}); "
                                  f"{FIX}") from None

    def _open(self, op: str, timeout: float, **fields: object) -> socket.socket:
        sock = self._connect(timeout)
        try:
            send_json(sock, {"token": self.token, "op": op, **fields})
        except OSError as exc:
            sock.close()
            raise EvaluationError(f"the remote agent at {self.shown} closed the connection: {exc}") from None
        return sock

    def _ask(self, op: str, timeout: float = CONNECT_S) -> dict[str, object]:
        with self._open(op, timeout) as sock:
            try:
                answer = recv_json(sock)
            except (OSError, WireError) as exc:
                raise EvaluationError(f"the remote agent at {self.shown} did not answer '{op}': {exc}") from None
        if "error" in answer:
            raise EvaluationError(f"the remote agent at {self.shown} refused: {answer['error']}")
        return answer

    def check_ready(self) -> None:
        """The agent answers, knows the token and runs this installation's evaluator (a spec is not portable
        across evaluator versions)."""
        from dynadesk.evaluator.schema import evaluator_version

        hello = self._ask("hello").get("hello")
        if not isinstance(hello, dict):
            raise EvaluationError(f"the remote agent at {self.shown} did not say hello")
        theirs = str(hello.get("evaluator_version"))
        if theirs != evaluator_version():
            raise EvaluationError(f"the remote agent at {self.shown} has evaluator {theirs[:19]}..., this host "
                                  f"{evaluator_version()[:19]}...; install the same DynaDesk on both",
                                  verdict="refused")
        self.agent = hello

    def image_id(self) -> str | None:
        got = self.agent.get("image_id")
        return got if isinstance(got, str) else None

    def describe(self) -> dict[str, str | bool]:
        return {"runner": self.name, "sandboxed": self.sandboxed, "agent": self.shown,
                "agent_runner": str(self.agent.get("runner", "?"))}

    def run(self, paths: RunPaths, limits: Limits, progress: ProgressFn | None = None,
            cancel: CancelToken | None = None) -> RunOutcome:
        start = time.monotonic()
        sock = self._open("run", CONNECT_S, limits=limits.to_dict())
        try:
            send_archive(sock, [("spec", paths.spec_dir), ("data", paths.data_dir), ("model", paths.model_dir),
                                ("out", paths.out_dir)])
            first = recv_json(sock)
            if "error" in first:
                raise EvaluationError(f"the remote agent at {self.shown} refused the run: {first['error']}")
            return self._follow(sock, paths, limits, progress, cancel, start)
        except (OSError, WireError) as exc:
            return RunOutcome("error", None, "", time.monotonic() - start,
                              f"the connection to the remote agent at {self.shown} failed: {exc}")
        finally:
            sock.close()

    def _follow(self, sock: socket.socket, paths: RunPaths, limits: Limits, progress: ProgressFn | None,
                cancel: CancelToken | None, start: float) -> RunOutcome:
        """Relay progress until the outcome; ask the agent to stop on cancel or past the time limit."""
        stop_sent: str | None = None
        sock.settimeout(GRACE_S)
        while True:
            elapsed = time.monotonic() - start
            if stop_sent is None and ((cancel is not None and cancel.cancelled()) or elapsed > limits.timeout_s):
                stop_sent = "cancelled" if cancel is not None and cancel.cancelled() else "timeout"
                send_json(sock, {"op": "cancel"})
            if stop_sent is not None and elapsed > limits.timeout_s + GRACE_S:
                return RunOutcome(stop_sent, None, "", elapsed, f"the remote agent at {self.shown} did not stop the "
                                  "run when asked; the connection was closed")
            ready, _, _ = select.select([sock], [], [], POLL_S)
            if not ready:
                continue
            message = recv_json(sock)  # a whole message, however long it takes to arrive (GRACE_S per chunk)
            if "progress" in message:
                if progress is not None:
                    with contextlib.suppress(ValueError, TypeError):
                        progress(ProgressEvent.from_dict(message["progress"]))
                continue
            raw = message.get("outcome")
            if not isinstance(raw, dict):
                raise WireError(f"expected progress or the outcome, got {sorted(message)}")
            RunFolder(paths.out_dir.parent).clear_out()  # the agent's out/ is this run's (it had ours)
            recv_archive(sock, paths.out_dir.parent, {"out"}, limits.out_bytes)
            outcome = RunOutcome.from_wire(raw)
            if stop_sent == "timeout" and outcome.verdict == "cancelled":
                outcome.verdict, outcome.message = "timeout", (f"the run exceeded its {limits.timeout_s:g} s limit "
                                                               "and the remote agent stopped it")
            outcome.seconds = time.monotonic() - start
            return outcome
