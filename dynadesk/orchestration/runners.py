"""Runners: where the evaluation worker runs. One interface, two places.

``DockerRunner`` is the sandbox: no network, read-only root filesystem (tmpfs
/tmp), model, data and spec mounted read-only, only /out writable, non-root,
no capabilities, no-new-privileges, pids/memory/CPU limits and a wall-clock
timeout that kills the container. ``LocalRunner`` runs the same worker in a
subprocess for machines without Docker; its results are marked not sandboxed.

Both turn what happened into one :class:`RunOutcome` with a verdict:
``ok``, ``oom``, ``timeout``, ``error`` (with the log tail), ``missing_image``,
``cancelled`` or ``interrupted``.
"""

from __future__ import annotations

import abc
import contextlib
import io
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from dynadesk.errors import EvaluationError
from dynadesk.evaluator.schema import PROGRESS_PREFIX

ProgressFn = Callable[[dict[str, Any]], None]
SANDBOX_UID = 65534  # 'nobody' in the image; used when the host side runs as root
LOG_TAIL_LINES = 40
MAX_LOG_BYTES = 4 << 20


@dataclass
class Limits:
    """Resource limits of one run; the defaults suit a small laptop."""

    cpus: float = 2.0
    memory_bytes: int = 4 << 30
    pids: int = 256
    timeout_s: float = 3600.0
    tmpfs_bytes: int = 1 << 30
    gpus: str | None = None  # None, "all", or a comma list of device ids

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RunPaths:
    """Host folders of one run: ``spec_dir/spec.json``, read-only inputs, writable ``out_dir``."""

    spec_dir: Path
    data_dir: Path
    model_dir: Path
    out_dir: Path


@dataclass
class RunOutcome:
    verdict: str  # ok | oom | timeout | error | missing_image | cancelled | interrupted
    exit_code: int | None
    log: str
    seconds: float
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


def log_tail(log: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(log.rstrip().splitlines()[-lines:])


class _Output:
    """Collects worker output lines on a reader thread: progress events are queued for
    :meth:`drain`, which the caller's thread runs (so a callback's exception, or Ctrl-C,
    surfaces where the run was started); everything else is the log."""

    def __init__(self, progress: ProgressFn | None):
        self.progress = progress
        self.events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.lines: list[str] = []
        self.size = 0
        self.truncated = False

    def drain(self) -> None:
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return
            if self.progress:
                self.progress(event)

    def feed(self, chunks: Iterable[bytes]) -> None:
        buf = b""
        for chunk in chunks:
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self.line(line.decode("utf-8", "replace"))
        if buf:
            self.line(buf.decode("utf-8", "replace"))

    def line(self, text: str) -> None:
        if text.startswith(PROGRESS_PREFIX):
            try:
                self.events.put(json.loads(text[len(PROGRESS_PREFIX):]))
            except ValueError:
                pass
            return
        self.size += len(text) + 1
        if self.size > MAX_LOG_BYTES:  # a model printing without end must not fill the host's memory
            if not self.truncated:
                self.lines.append("[dynadesk: log truncated at 4 MiB]")
                self.truncated = True
            self.lines = self.lines[:10] + self.lines[-2000:]
        self.lines.append(text)

    def text(self) -> str:
        return "\n".join(self.lines) + ("\n" if self.lines else "")


def _error_message(out_dir: Path, exit_code: int | None, log: str) -> str:
    """The worker's own error.json message when it wrote one, else the exit code and log tail."""
    try:
        data = json.loads((out_dir / "error.json").read_text(encoding="utf-8"))
        return f"the worker failed ({data.get('kind')}): {data.get('message')}"
    except (OSError, ValueError):
        return f"the worker exited with code {exit_code}; last log lines:\n{log_tail(log)}"


class Runner(abc.ABC):
    """Interface: ``run(paths, limits, progress, cancel) -> RunOutcome``."""

    name = "base"
    sandboxed = False

    @abc.abstractmethod
    def run(self, paths: RunPaths, limits: Limits, progress: ProgressFn | None = None,
            cancel: threading.Event | None = None) -> RunOutcome:
        """Run the worker on ``paths`` under ``limits``; never raises for a failed run (see RunOutcome)."""

    def describe(self) -> dict[str, Any]:
        return {"runner": self.name, "sandboxed": self.sandboxed}


class LocalRunner(Runner):
    """The worker in a subprocess of this Python: same code, no sandbox, no memory limit."""

    name = "local"
    sandboxed = False

    def __init__(self, python: str | None = None):
        self.python = python or sys.executable

    def command(self, paths: RunPaths) -> list[str]:
        return [self.python, "-m", "dynadesk.evaluator", "run", "--spec", str(paths.spec_dir / "spec.json"),
                "--out", str(paths.out_dir), "--model", str(paths.model_dir), "--data", str(paths.data_dir)]

    def run(self, paths: RunPaths, limits: Limits, progress: ProgressFn | None = None,
            cancel: threading.Event | None = None) -> RunOutcome:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
                   PYTHONUNBUFFERED="1")
        if limits.gpus is None:
            env["CUDA_VISIBLE_DEVICES"] = ""
        elif limits.gpus != "all":
            env["CUDA_VISIBLE_DEVICES"] = limits.gpus
        start = time.monotonic()
        try:
            proc = subprocess.Popen(self.command(paths), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        except OSError as exc:
            raise EvaluationError(f"cannot start the local worker {self.python}: {exc}") from exc
        out = _Output(progress)
        stdout = cast(io.BufferedReader, proc.stdout)  # stdout=PIPE above
        reader = threading.Thread(target=out.feed, args=(iter(lambda: stdout.read1(65536), b""),), daemon=True)
        reader.start()
        verdict = None
        try:
            while proc.poll() is None:
                out.drain()
                if cancel is not None and cancel.is_set():
                    verdict = "cancelled"
                elif time.monotonic() - start > limits.timeout_s:
                    verdict = "timeout"
                if verdict:
                    self._kill(proc)
                    break
                time.sleep(0.1)
            proc.wait()
            reader.join(timeout=10)
            out.drain()
        except BaseException:  # Ctrl-C or any host-side failure: the worker must not outlive us
            self._kill(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)  # reaped, so it is gone when the exception reaches the caller
            raise
        seconds = time.monotonic() - start
        log = out.text()
        code = proc.returncode
        if verdict == "timeout":
            return RunOutcome("timeout", code, log, seconds, f"the run exceeded its {limits.timeout_s:g} s limit "
                                                             "and was stopped")
        if verdict == "cancelled":
            return RunOutcome("cancelled", code, log, seconds, "cancelled by the user")
        if code == 0:
            return RunOutcome("ok", 0, log, seconds)
        if code == -signal.SIGKILL:
            return RunOutcome("oom", code, log, seconds, "the worker was killed (SIGKILL), most likely by the "
                                                         "kernel's out-of-memory killer")
        return RunOutcome("error", code, log, seconds, _error_message(paths.out_dir, code, log))

    @staticmethod
    def _kill(proc: subprocess.Popen[Any]) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class DockerRunner(Runner):
    """The worker in a locked-down container (docker SDK, any ``DOCKER_HOST``)."""

    name = "docker"
    sandboxed = True

    def __init__(self, image: str, client: Any = None):
        self.image = image
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def describe(self) -> dict[str, Any]:
        return {"runner": self.name, "sandboxed": True, "image": self.image}

    def user(self, out_dir: Path) -> str:
        """Non-root in the container; when we are root, /out is handed to the sandbox user."""
        uid, gid = os.getuid(), os.getgid()
        if uid != 0:
            return f"{uid}:{gid}"
        for root, dirs, files in os.walk(out_dir):
            for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                os.chown(name, SANDBOX_UID, SANDBOX_UID)
        return f"{SANDBOX_UID}:{SANDBOX_UID}"

    def readable_model(self, paths: RunPaths) -> Path | None:
        """A world-readable snapshot of the model when the sandbox user could not read it.

        As root on the host the container runs as 'nobody', and tools such as
        transformers save weights with mode 0600; rather than run the sandbox as root
        or touch the user's folder, such a model is copied (mode 0644) next to the run.
        Returns the snapshot folder, or None when the model is readable as it is.
        """
        if os.getuid() != 0:
            return None
        def readable(p: Path) -> bool:
            mode = p.stat().st_mode
            return bool(mode & 0o004) and (not p.is_dir() or bool(mode & 0o001))
        if all(readable(p) for p in [paths.model_dir, *paths.model_dir.rglob("*")]):
            return None
        stage = paths.out_dir.parent / "model-snapshot"
        shutil.rmtree(stage, ignore_errors=True)
        shutil.copytree(paths.model_dir, stage, symlinks=False)
        for root, _dirs, files in os.walk(stage):
            os.chmod(root, 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        return stage

    def container_options(self, paths: RunPaths, limits: Limits) -> dict[str, Any]:
        """Everything that locks the container down. Tests may extend it in a subclass; users cannot."""
        import docker

        opts: dict[str, Any] = dict(
            command=["python", "-m", "dynadesk.evaluator", "run", "--spec", "/spec/spec.json", "--out", "/out",
                     "--model", "/model", "--data", "/data"],
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={limits.tmpfs_bytes}"},
            volumes={str(paths.model_dir.resolve()): {"bind": "/model", "mode": "ro"},
                     str(paths.data_dir.resolve()): {"bind": "/data", "mode": "ro"},
                     str(paths.spec_dir.resolve()): {"bind": "/spec", "mode": "ro"},
                     str(paths.out_dir.resolve()): {"bind": "/out", "mode": "rw"}},
            user=self.user(paths.out_dir),
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=limits.pids,
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,  # no swap: past the limit means OOM, not thrashing
            nano_cpus=int(limits.cpus * 1e9),
            init=True,  # reaps forked children, forwards signals
            working_dir="/tmp",
            environment={"HOME": "/tmp", "HF_HOME": "/tmp/hf", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                         "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1",
                         "PYTHONDONTWRITEBYTECODE": "1"},
            # the run folder says which workspace and run a container belongs to (docker ps --filter label=...)
            labels={"dynadesk.role": "evaluation", "dynadesk.run-dir": str(paths.out_dir.resolve().parent)},
            detach=True,
        )
        if limits.gpus:
            ids = None if limits.gpus == "all" else limits.gpus.split(",")
            opts["device_requests"] = [docker.types.DeviceRequest(count=-1 if ids is None else None, device_ids=ids,
                                                                  capabilities=[["gpu"]])]
        return opts

    def run(self, paths: RunPaths, limits: Limits, progress: ProgressFn | None = None,
            cancel: threading.Event | None = None) -> RunOutcome:
        import docker

        start = time.monotonic()
        try:
            self.client.images.get(self.image)
        except docker.errors.ImageNotFound:
            return RunOutcome("missing_image", None, "", 0.0,
                              f"the evaluator image '{self.image}' is not in Docker; build it with "
                              "'dynadesk image build'")
        except docker.errors.DockerException as exc:
            raise EvaluationError(f"Docker is not usable: {exc}") from exc
        snapshot = self.readable_model(paths)
        if snapshot is not None:
            paths = RunPaths(paths.spec_dir, paths.data_dir, snapshot, paths.out_dir)
        try:
            try:
                container = self.client.containers.create(self.image, **self.container_options(paths, limits))
            except docker.errors.APIError as exc:
                return RunOutcome("error", None, "", time.monotonic() - start, f"Docker refused the container: {exc}")
            return self._run_container(container, paths, limits, _Output(progress), cancel, start)
        finally:
            if snapshot is not None:
                shutil.rmtree(snapshot, ignore_errors=True)

    def _run_container(self, container: Any, paths: RunPaths, limits: Limits, out: _Output,
                       cancel: threading.Event | None, start: float) -> RunOutcome:
        verdict = None
        try:
            container.start()
            reader = threading.Thread(target=out.feed, args=(container.logs(stream=True, follow=True),), daemon=True)
            reader.start()
            while True:
                out.drain()
                container.reload()
                if container.status in ("exited", "dead"):
                    break
                if cancel is not None and cancel.is_set():
                    verdict = "cancelled"
                elif time.monotonic() - start > limits.timeout_s:
                    verdict = "timeout"
                if verdict:
                    container.kill()
                    container.wait(timeout=30)
                    break
                time.sleep(0.2)
            reader.join(timeout=10)
            out.drain()
            container.reload()
            state = container.attrs.get("State", {})
        except BaseException:
            _remove(container)
            raise
        _remove(container)
        seconds = time.monotonic() - start
        log = out.text()
        code = state.get("ExitCode")
        details = {"exit_code": code, "oom_killed": bool(state.get("OOMKilled")), "image": self.image}
        if verdict == "cancelled":
            return RunOutcome("cancelled", code, log, seconds, "cancelled by the user", details)
        if verdict == "timeout":
            return RunOutcome("timeout", code, log, seconds, f"the run exceeded its {limits.timeout_s:g} s limit; "
                                                             "the container was killed", details)
        if state.get("OOMKilled"):
            return RunOutcome("oom", code, log, seconds, f"out of memory: the container hit its "
                                                         f"{limits.memory_bytes / (1 << 30):.2f} GiB limit and was "
                                                         "killed (OOMKilled)", details)
        if code == 0:
            return RunOutcome("ok", 0, log, seconds, "", details)
        return RunOutcome("error", code, log, seconds, _error_message(paths.out_dir, code, log), details)


def _remove(container: Any) -> None:
    try:
        container.remove(force=True)
    except Exception:  # noqa: BLE001 - already gone
        pass


def docker_client() -> Any:
    """A docker SDK client from the environment (``DOCKER_HOST`` works, ssh:// included)."""
    try:
        import docker

        client = docker.from_env(timeout=120)
        client.ping()
        return client
    except Exception as exc:
        raise EvaluationError(f"no Docker daemon answers ({exc}); start Docker (packaging/start_docker.sh) "
                              "or use --runner local", verdict="error") from exc
