"""Runners: where the evaluation worker runs. One interface, two places, and the one Docker boundary.

``DockerRunner`` is the sandbox: no network, read-only root filesystem (tmpfs
/tmp), model, data and spec mounted read-only, only /out writable, non-root,
no capabilities, no-new-privileges, pids/memory/CPU limits, a watched size limit
on /out and a wall-clock timeout that kills the container. ``LocalRunner`` runs
the same worker in a subprocess for machines without Docker; its results are
marked not sandboxed.

Both turn what happened into one :class:`RunOutcome` with a verdict:
``ok``, ``oom``, ``timeout``, ``disk``, ``error`` (with the log tail),
``missing_image``, ``gpu_unavailable``, ``cancelled`` or ``interrupted``.

This module, :mod:`dynadesk.orchestration.daemon` (connection, daemon and GPU checks) and
:mod:`dynadesk.orchestration.image` are the only ones that import the docker SDK; every docker
error is translated into a library error (:class:`~dynadesk.errors.DockerUnavailable`) or a run
verdict whose message says the fix.
"""

from __future__ import annotations

import abc
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk import defaults
from dynadesk.errors import ConfigError, DockerUnavailable, EvaluationError, RunFolderError
from dynadesk.evaluator.allocator import environment_overrides
from dynadesk.orchestration.daemon import (
    NO_DAEMON_FIX,
    DockerClient,
    DockerContainer,
    docker_client,
    first_line,
    has_image,
    image_id_of,
    remote_docker_host,
    transport_errors,
)
from dynadesk.orchestration.folder import (
    ERROR_FILE,
    RunFolder,
    RunPaths,
    chown_tree_no_follow,
    read_no_follow,
    tree_bytes,
)
from dynadesk.orchestration.loadgen import CONTAINER_DIR, SOCKET_NAME, LoadGen, start_loadgen
from dynadesk.orchestration.observe import (
    CONTAINER_CPU_SECONDS,
    MemoryWatch,
    NoMemoryWatch,
    container_cgroup,
    container_cpu_seconds,
    local_memory,
    observations,
)
from dynadesk.orchestration.output import WorkerOutput, log_tail

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.progress import ProgressFn

__all__ = ["DockerRunner", "Limits", "LocalRunner", "RunOutcome", "RunPaths", "Runner"]

SANDBOX_UID = 65534  # 'nobody' in the image; used when the host side runs as root
POLL_S = 0.2
GPU_FIX = ("install NVIDIA's container toolkit (nvidia-container-toolkit) and restart Docker, or run without "
           "--gpus")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run; the defaults suit a small laptop."""

    cpus: float = 2.0  # default_limits() gives defaults.cpus()
    memory_bytes: int = int(defaults.MEMORY_GIB * (1 << 30))
    pids: int = 256
    timeout_s: float = defaults.TIMEOUT_S
    tmpfs_bytes: int = 1 << 30
    out_bytes: int = 2 << 30  # what the worker may write to /out (predictions, results) before verdict 'disk'
    gpus: str | None = None  # None, "all", or a comma list of device ids

    def __post_init__(self) -> None:
        for name in ("cpus", "timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ConfigError(f"limits.{name} must be a positive number, got {value!r}")
        for name in ("memory_bytes", "pids", "tmpfs_bytes", "out_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"limits.{name} must be a positive integer, got {value!r}")
        if self.gpus is not None and (not isinstance(self.gpus, str) or not self.gpus):
            raise ConfigError(f"limits.gpus must be 'all' or device ids such as '0,1', got {self.gpus!r}")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, raw: object) -> Limits:
        if not isinstance(raw, dict):
            raise ConfigError(f"limits must be an object, got {type(raw).__name__}")
        unknown = sorted(set(raw) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"limits has unknown field(s) {', '.join(unknown)}")
        return cls(**raw)


@dataclass
class RunOutcome:
    verdict: str  # ok | oom | timeout | disk | error | missing_image | gpu_unavailable | cancelled | interrupted
    exit_code: int | None
    log: str
    seconds: float
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


def _error_message(out_dir: Path, exit_code: int | None, log: str) -> str:
    """The worker's own error.json message when it wrote one, else the exit code and log tail."""
    try:
        data = json.loads(read_no_follow(out_dir / ERROR_FILE, 1 << 20))
        return f"the worker failed ({data.get('kind')}): {data.get('message')}"
    except (RunFolderError, ValueError, AttributeError):
        return f"the worker exited with code {exit_code}; last log lines:\n{log_tail(log)}"


def _disk_message(limits: Limits) -> str:
    return (f"the run wrote more than its {limits.out_bytes / (1 << 30):.2f} GiB output limit to /out and was "
            "stopped; its output was removed (raise the limit only for a model you trust)")


class _Watch:
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


class Runner(abc.ABC):
    """Interface: ``run(paths, limits, progress, cancel) -> RunOutcome``."""

    name = "base"
    sandboxed = False

    @abc.abstractmethod
    def run(self, paths: RunPaths, limits: Limits, progress: ProgressFn | None = None,
            cancel: CancelToken | None = None) -> RunOutcome:
        """Run the worker on ``paths`` under ``limits``; never raises for a failed run (see RunOutcome)."""

    @classmethod
    def for_request(cls, request: Any, client: Any = None) -> Runner:
        """The runner for ``request`` (a :class:`RunRequest`); make_runner calls it for the registered class."""
        return cls()

    def check_ready(self) -> None:  # noqa: B027 - a no-op hook: runners with nothing to check keep it
        """Raise a library error now when this runner cannot start (before a run record is made)."""

    def image_id(self) -> str | None:
        """The Id of the image the run uses (None: no image)."""
        return None

    def describe(self) -> dict[str, Any]:
        return {"runner": self.name, "sandboxed": self.sandboxed}


class LocalRunner(Runner):
    """The worker in a subprocess of this Python: same code, no sandbox, no memory limit."""

    name = "local"
    sandboxed = False

    def __init__(self, python: str | None = None):
        self.python = python or sys.executable

    def command(self, paths: RunPaths) -> list[str]:
        """The worker, isolated to the image's packages when it is this Python (see :mod:`.worker_site`)."""
        args = ["run", "--spec", str(paths.spec_dir / "spec.json"), "--out", str(paths.out_dir),
                "--model", str(paths.model_dir), "--data", str(paths.data_dir)]
        if self.python == sys.executable and not getattr(sys, "frozen", False):
            from dynadesk.orchestration import worker_site

            try:
                view = worker_site.site_view()
            except OSError as exc:
                raise EvaluationError(f"cannot prepare the local worker's packages in {worker_site.cache_root()}: "
                                      f"{exc}") from exc
            return worker_site.isolated_command(self.python, view, args)
        return [self.python, "-m", "dynadesk.evaluator", *args]

    def run(self, paths: RunPaths, limits: Limits, progress: ProgressFn | None = None,
            cancel: CancelToken | None = None) -> RunOutcome:
        inherited = set(environment_overrides())  # the worker fixes malloc itself; these would void it
        env = {k: v for k, v in os.environ.items() if k not in inherited}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
        if limits.gpus is None:
            env["CUDA_VISIBLE_DEVICES"] = ""
        elif limits.gpus != "all":
            env["CUDA_VISIBLE_DEVICES"] = limits.gpus
        watch = _Watch(paths, limits, cancel)
        loadgen = start_loadgen(paths.spec_dir / "spec.json", paths.data_dir, paths.out_dir)
        try:
            # the data folder the worker reads is the load generator's, empty until the timed windows are over
            staged = RunPaths(paths.spec_dir, loadgen.sandbox_data, paths.model_dir, paths.out_dir)
            proc = subprocess.Popen([*self.command(staged), "--loadgen", str(loadgen.path)], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)
        except OSError as exc:
            loadgen.close()
            raise EvaluationError(f"cannot start the local worker {self.python}: {exc}") from exc
        verdict = None
        try:  # from the moment the worker exists: a signal while the reader starts must not orphan it
            out = WorkerOutput(progress)
            memory = local_memory(proc.pid)
            stdout = proc.stdout
            assert stdout is not None
            chunks = iter(lambda: stdout.read1(65536), b"")  # type: ignore[attr-defined]  # a BufferedReader
            reader = threading.Thread(target=out.feed, args=(chunks,), daemon=True)
            reader.start()
            while proc.poll() is None:
                out.drain()
                memory.sample(before_windows=loadgen.counting())
                verdict = watch.verdict()
                if verdict:
                    self._kill(proc)
                    break
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=POLL_S)  # a poll's pause that ends the moment the worker does
            proc.wait()
            reader.join(timeout=30)
            out.drain()
            if not reader.is_alive():
                stdout.close()
        except BaseException:  # Ctrl-C or any host-side failure: the worker must not outlive us
            self._kill(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)  # reaped, so it is gone when the exception reaches the caller
            raise
        finally:
            loadgen.close()
        return _outcome(verdict, proc.returncode, out.text(), watch.elapsed(), paths, limits,
                        {"observed": observations(loadgen.report(), memory)})

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _outcome(verdict: str | None, code: int | None, log: str, seconds: float, paths: RunPaths,
             limits: Limits, details: dict[str, Any] | None = None) -> RunOutcome:
    """The verdict of a finished local run (a container's OOM is decided by its caller)."""
    details = details or {}
    if verdict == "timeout":
        return RunOutcome("timeout", code, log, seconds, f"the run exceeded its {limits.timeout_s:g} s limit and "
                                                         "was stopped", details)
    if verdict == "cancelled":
        return RunOutcome("cancelled", code, log, seconds, "cancelled by the user", details)
    if verdict == "disk":
        RunFolder(paths.out_dir.parent).clear_out()
        return RunOutcome("disk", code, log, seconds, _disk_message(limits), details)
    if code == 0:
        return RunOutcome("ok", 0, log, seconds, "", details)
    if code == -signal.SIGKILL:
        return RunOutcome("oom", code, log, seconds, "the worker was killed (SIGKILL), most likely by the "
                                                     "kernel's out-of-memory killer", details)
    refused = ((details.get("observed") or {}).get("loadgen") or {}).get("refused")
    if refused:  # the host's load generator refused the timed windows, and the worker stopped on that
        return RunOutcome("out_of_bounds", code, log, seconds,
                          f"the host refused this run's timed windows: {refused}", details)
    return RunOutcome("error", code, log, seconds, _error_message(paths.out_dir, code, log), details)


IN_SANDBOX_GRACE_S = 5
"""Seconds past its wall-clock limit at which a container stops itself, should nobody be left to stop it."""


def remove_leftover_containers(under: Path, client: DockerClient | None = None) -> int:
    """Remove the evaluation containers (running or not) whose run folder is under ``under``: what a killed
    process of this workspace left behind. Returns how many; Docker's errors become :class:`DockerUnavailable`."""
    root = str(Path(under).resolve())
    try:
        client = client or docker_client()
        found = [c for c in client.containers.list(all=True, filters={"label": "dynadesk.role=evaluation"})
                 if c.labels.get("dynadesk.run-dir", "").startswith(root + os.sep)]
        for c in found:
            _remove(c)
    except transport_errors() as exc:
        raise DockerUnavailable(f"Docker failed listing leftover containers: {first_line(exc)}; "
                                f"{NO_DAEMON_FIX}") from exc
    return len(found)


class DockerRunner(Runner):
    """The worker in a locked-down container (docker SDK; a ``DOCKER_HOST`` on this machine, see check_ready)."""

    name = "docker"
    sandboxed = True

    def __init__(self, image: str, client: DockerClient | None = None):
        self.image = image
        self._client = client

    @classmethod
    def for_request(cls, request: Any, client: Any = None) -> Runner:
        """In the request's image, default: this evaluator version's tag."""
        from dynadesk.orchestration.image import image_tag

        return cls(request.image or image_tag(), client=client)

    @property
    def client(self) -> DockerClient:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def check_ready(self) -> None:
        remote = remote_docker_host(os.environ.get("DOCKER_HOST", ""))
        if remote and self._client is None:
            raise DockerUnavailable(
                f"DOCKER_HOST={remote} names another machine, but the Docker runner bind-mounts this machine's "
                "model, data and run folders, which that daemon cannot see; run 'dynadesk worker' on that machine "
                "and queue jobs with 'dynadesk eval MODEL --queue redis://...' (docs/queue.md)")
        self.client  # noqa: B018 - connects (and pings) now: no daemon is a clear error before any record

    def image_id(self) -> str | None:
        return image_id_of(self.client, self.image)

    def describe(self) -> dict[str, Any]:
        return {"runner": self.name, "sandboxed": True, "image": self.image}

    def user(self, out_dir: Path) -> str:
        """Non-root in the container; when we are root, /out is handed to the sandbox user (links never followed)."""
        uid, gid = os.getuid(), os.getgid()
        if uid != 0:
            return f"{uid}:{gid}"
        chown_tree_no_follow(out_dir, SANDBOX_UID, SANDBOX_UID)
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
        stage = RunFolder(paths.out_dir.parent).snapshot_dir
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
            # the container enforces its own deadline too: if the process watching it dies (a worker SIGKILLed),
            # it still stops IN_SANDBOX_GRACE_S after its limit (exit 124, or 137 after --kill-after)
            command=["timeout", f"--kill-after={IN_SANDBOX_GRACE_S}", "--signal=TERM",
                     str(math.ceil(limits.timeout_s + IN_SANDBOX_GRACE_S)),
                     "python", "-m", "dynadesk.evaluator", "run", "--spec", "/spec/spec.json", "--out", "/out",
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
            cancel: CancelToken | None = None) -> RunOutcome:
        import docker

        if not has_image(self.client, self.image):
            return RunOutcome("missing_image", None, "", 0.0,
                              f"the evaluator image '{self.image}' is not in Docker; build it with "
                              "'dynadesk image build'")
        snapshot = self.readable_model(paths)
        if snapshot is not None:
            paths = RunPaths(paths.spec_dir, paths.data_dir, snapshot, paths.out_dir)
        watch = _Watch(paths, limits, cancel)
        loadgen = start_loadgen(paths.spec_dir / "spec.json", paths.data_dir, paths.out_dir)
        try:
            # /data is the load generator's folder, empty until the timed windows are over (the replay hole)
            staged = RunPaths(paths.spec_dir, loadgen.sandbox_data, paths.model_dir, paths.out_dir)
            opts = self.container_options(staged, limits)  # the host's socket folder, mounted; the worker told
            opts["volumes"][str(loadgen.dir)] = {"bind": CONTAINER_DIR, "mode": "ro"}
            opts["command"] = [*opts["command"], "--loadgen", f"{CONTAINER_DIR}/{SOCKET_NAME}"]
            try:
                container = self.client.containers.create(self.image, **opts)
            except docker.errors.APIError as exc:
                return _refused(exc, limits, watch.elapsed())
            except transport_errors() as exc:
                raise DockerUnavailable(f"Docker failed creating the container: {first_line(exc)}; "
                                        f"{NO_DAEMON_FIX}") from exc
            return self._run_container(container, paths, limits, WorkerOutput(progress), watch, loadgen)
        finally:
            loadgen.close()
            if snapshot is not None:
                shutil.rmtree(snapshot, ignore_errors=True)

    def _run_container(self, container: DockerContainer, paths: RunPaths, limits: Limits, out: WorkerOutput,
                       watch: _Watch, loadgen: LoadGen) -> RunOutcome:
        import docker

        verdict = None
        try:
            try:
                container.start()
            except docker.errors.APIError as exc:
                _remove(container)
                return _refused(exc, limits, watch.elapsed())
            reader = threading.Thread(target=out.feed, args=(container.logs(stream=True, follow=True),), daemon=True)
            reader.start()
            container.reload()
            memory: MemoryWatch = container_cgroup(container.id, container.attrs.get("State", {}).get("Pid")) or \
                NoMemoryWatch("the container's memory cgroup is not readable from this host")
            cpu_seen = 0.0
            while True:
                out.drain()
                memory.sample(before_windows=loadgen.counting())
                cpu_seen = container_cpu_seconds(container.id) or cpu_seen
                container.reload()
                if container.status in ("exited", "dead"):
                    break
                verdict = watch.verdict()
                if verdict:
                    container.kill()
                    container.wait(timeout=30)
                    break
                if reader.is_alive():
                    reader.join(timeout=POLL_S)  # the log stream ends when the container does: no pause past it
                else:
                    time.sleep(POLL_S)
            reader.join(timeout=30)
            out.drain()
            CONTAINER_CPU_SECONDS[0] += container_cpu_seconds(container.id) or cpu_seen
            container.reload()
            state = container.attrs.get("State", {})
        except transport_errors() as exc:
            _remove(container)
            raise DockerUnavailable(f"Docker failed during the run: {first_line(exc)}; {NO_DAEMON_FIX}") from exc
        except BaseException:
            _remove(container)
            raise
        _remove(container)
        loadgen.close()
        code = state.get("ExitCode")
        details = {"exit_code": code, "oom_killed": bool(state.get("OOMKilled")), "image": self.image,
                   "observed": observations(loadgen.report(), memory)}
        if verdict is None and code in (124, 137) and watch.elapsed() >= limits.timeout_s:
            verdict = "timeout"  # the in-sandbox deadline fired before this poll loop saw the limit pass
        if verdict is None and state.get("OOMKilled"):
            return RunOutcome("oom", code, out.text(), watch.elapsed(),
                              f"out of memory: the container hit its {limits.memory_bytes / (1 << 30):.2f} GiB "
                              "limit and was killed (OOMKilled)", details)
        if verdict is None and tree_bytes(paths.out_dir) > limits.out_bytes:
            verdict = "disk"
        outcome = _outcome(verdict, code, out.text(), watch.elapsed(), paths, limits, details)
        if outcome.verdict == "timeout":
            outcome.message = outcome.message.replace("was stopped", "the container was killed")
        return outcome


def _refused(exc: Exception, limits: Limits, seconds: float) -> RunOutcome:
    """Docker refused to create or start the container: a GPU request without NVIDIA's runtime, or else."""
    text = str(getattr(exc, "explanation", None) or exc).strip().splitlines()[0][:300]
    if limits.gpus and ("gpu" in text.lower() or "device driver" in text.lower() or "nvidia" in text.lower()):
        return RunOutcome("gpu_unavailable", None, "", seconds,
                          f"--gpus {limits.gpus}: this Docker has no GPU runtime ({text}); {GPU_FIX}")
    return RunOutcome("error", None, "", seconds, f"Docker refused the container: {text}")


def _remove(container: DockerContainer) -> None:
    try:
        container.remove(force=True)
    except transport_errors():  # already gone, or the daemon with it
        pass
