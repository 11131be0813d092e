"""The remote runner's agent: the other machine's end, which runs each run it is sent with a registered runner.

Start it on the machine that should run evaluations (see docs/remote-runner.md)::

    python -m dynadesk.orchestration.remote_agent --listen 127.0.0.1:7611 --runner docker \\
        --work ~/dynadesk-remote --token-file ~/.dynadesk-remote-token

It listens on a stream socket (loopback: the host reaches it through an SSH tunnel, which carries the
authentication and the encryption) and answers one connection at a time. A connection starts with the shared
token (compared in constant time); then ``hello`` (which runner, sandboxed or not, its image and evaluator
version), ``gpu`` (the runner's own :meth:`Runner.gpu_status`) or ``run``: the spec, the model's view of the data,
the model and any earlier ``out/`` arrive as one archive, the agent's runner (from the runner registry, exactly as
the queue worker takes its own) runs them in a fresh folder under ``--work``, progress goes back as it comes, then
the :class:`RunOutcome` (with this machine's :class:`HostObservation` of the run) and the ``out/`` folder. Closing
the connection, or a ``cancel`` message, cancels the run. The gold labels never leave the host: a runner is only
ever given the model's view.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import shutil
import socket
import sys
import threading
import uuid
from pathlib import Path

from dynadesk.cancel import CancelToken
from dynadesk.errors import DynaDeskError
from dynadesk.evaluator.schema import evaluator_version
from dynadesk.orchestration.folder import RunPaths
from dynadesk.orchestration.limits import Limits
from dynadesk.orchestration.remote_wire import WireError, recv_archive, recv_json, send_archive, send_json
from dynadesk.orchestration.runner_base import Runner, RunOutcome
from dynadesk.progress import ProgressEvent

__all__ = ["Agent", "main"]

INPUTS = {"spec", "data", "model", "out"}
MAX_INPUT = 64 << 30  # what one run may send (the model is the bulk): past it the run is refused


class Agent:
    """One machine's agent: its runner, its work folder and the token a host must present."""

    def __init__(self, runner: str, work: Path, token: str):
        from dynadesk.orchestration.evaluate import machine_runner, runner_type

        self.kind = runner
        self.runner_type = runner_type(runner)
        self.runner: Runner = machine_runner(runner)
        self.work = work
        self.token = token
        self.work.mkdir(parents=True, exist_ok=True)

    def hello(self) -> dict[str, object]:
        return {"runner": self.kind, "sandboxed": self.runner.sandboxed, "image_id": self.runner.image_id(),
                "image": self.runner.image_name(), "evaluator_version": evaluator_version(),
                "enforced_limits": sorted(self.runner.enforced_limits)}

    def serve(self, server: socket.socket) -> None:
        """Answer connections one at a time until the process is stopped."""
        while True:
            conn, _addr = server.accept()
            with conn:
                try:
                    self.answer(conn)
                except (OSError, WireError) as exc:  # a host that went away: the next one is served
                    print(f"[dynadesk remote agent] connection ended: {exc}", file=sys.stderr, flush=True)

    def answer(self, conn: socket.socket) -> None:
        first = recv_json(conn)
        token = first.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self.token.encode()):
            send_json(conn, {"error": "the token does not match this agent's --token-file; copy that file to the "
                                      "host and name it in DYNADESK_REMOTE_TOKEN_FILE"})
            return
        op = first.get("op")
        if op == "hello":
            send_json(conn, {"hello": self.hello()})
        elif op == "gpu":
            status = self.runner_type.gpu_status()
            send_json(conn, {"gpu": {"ok": status.ok, "detail": status.detail}})
        elif op == "run":
            self.run(conn, first)
        else:
            send_json(conn, {"error": f"unknown operation {op!r} (hello, gpu or run)"})

    def run(self, conn: socket.socket, first: dict[str, object]) -> None:
        try:
            limits = Limits.from_dict(first.get("limits"))
        except DynaDeskError as exc:
            send_json(conn, {"error": f"the run's limits are not understood here: {exc}"})
            return
        root = self.work / f"run-{uuid.uuid4().hex}"
        root.mkdir()
        try:
            recv_archive(conn, root, INPUTS, MAX_INPUT)
            for name in INPUTS:
                (root / name).mkdir(exist_ok=True)
            paths = RunPaths(root / "spec", root / "data", root / "model", root / "out")
            send_json(conn, {"started": True})
            outcome = self._run_watched(conn, paths, limits)
            send_json(conn, {"outcome": outcome.to_wire(), "image_id": self.runner.image_id()})
            send_archive(conn, [("out", paths.out_dir)])
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def _run_watched(self, conn: socket.socket, paths: RunPaths, limits: Limits) -> RunOutcome:
        """The run, cancelled when the host says so or goes away; its progress sent back as it comes."""
        cancel = CancelToken()
        lock = threading.Lock()

        def listen() -> None:  # the host sends nothing more but 'cancel'; an end of stream means it is gone
            try:
                message = recv_json(conn)
                if message.get("op") != "cancel":
                    print(f"[dynadesk remote agent] unexpected message {message!r}", file=sys.stderr, flush=True)
            except (OSError, WireError):
                pass
            cancel.cancel()

        def progress(event: ProgressEvent) -> None:
            with lock:
                try:
                    send_json(conn, {"progress": event.to_dict()})
                except OSError:
                    cancel.cancel()

        threading.Thread(target=listen, name="dynadesk-remote-cancel", daemon=True).start()
        return self.runner.run(paths, limits, progress, cancel)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynadesk.orchestration.remote_agent",
                                     description="Run the evaluations a DynaDesk host sends (docs/remote-runner.md).")
    parser.add_argument("--listen", default="127.0.0.1:7611", help="HOST:PORT to listen on (port 0: any free one)")
    parser.add_argument("--runner", default="docker", help="the registered runner that runs each run here")
    parser.add_argument("--work", type=Path, required=True, help="folder for the runs in progress")
    parser.add_argument("--token-file", type=Path, required=True, help="file holding the token a host must send")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    try:
        token = args.token_file.read_text(encoding="utf-8").strip()
        if len(token) < 16:
            raise DynaDeskError(f"{args.token_file}: the token must be at least 16 characters")
        agent = Agent(args.runner, args.work, token)
        agent.runner.check_ready()
        server = socket.create_server((host or "127.0.0.1", int(port)))
    except (DynaDeskError, OSError, ValueError) as exc:
        print(f"dynadesk remote agent: {exc}", file=sys.stderr)
        return 2
    bound = server.getsockname()
    print(f"dynadesk remote agent: listening on {bound[0]}:{bound[1]} (runner {args.runner})", flush=True)
    if not ipaddress.ip_address(bound[0]).is_loopback:
        print(f"dynadesk remote agent: {bound[0]} is not a loopback address: the token and the runs travel in the "
              "clear; listen on 127.0.0.1 and reach this agent through an SSH tunnel (docs/remote-runner.md)",
              file=sys.stderr, flush=True)
    try:
        agent.serve(server)
    except KeyboardInterrupt:
        return 0
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
