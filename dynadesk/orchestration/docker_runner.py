"""The Docker runner: the evaluation worker in a locked-down container, and the one place that runs containers.

``DockerRunner`` is the sandbox: no network, read-only root filesystem (tmpfs
/tmp), model, data and spec mounted read-only, only /out writable, non-root,
no capabilities, no-new-privileges, pids/memory/CPU limits, a watched size limit
on /out and a wall-clock timeout that kills the container. It turns what happened into one
:class:`~.runner_base.RunOutcome`: ``ok``, ``oom``, ``timeout``, ``disk``, ``error`` (with the log tail),
``missing_image``, ``gpu_unavailable``, ``cancelled`` or ``interrupted``.

This module, :mod:`dynadesk.orchestration.daemon` (connection, daemon and GPU checks) and
:mod:`dynadesk.orchestration.image` are the only ones that import the docker SDK; every docker
error is translated into a library error (:class:`~dynadesk.errors.DockerUnavailable`) or a run
verdict whose message says the fix.
"""

from __future__ import annotations

import math
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.errors import DockerUnavailable
from dynadesk.orchestration.daemon import (
    NO_DAEMON_FIX,
    DaemonStatus,
    DockerClient,
    DockerContainer,
    docker_client,
    docker_gpu_status,
    first_line,
    has_image,
    image_id_of,
    remote_docker_host,
    transport_errors,
)
from dynadesk.orchestration.folder import RunFolder, RunPaths, chown_tree_no_follow, tree_bytes
from dynadesk.orchestration.limits import Limits
from dynadesk.orchestration.loadgen import CONTAINER_DIR, SOCKET_NAME, LoadGen, start_loadgen
from dynadesk.orchestration.observe import (
    CONTAINER_CPU_SECONDS,
    MemoryWatch,
    NoMemoryWatch,
    container_cgroup,
    container_cpu_seconds,
    observations,
)
from dynadesk.orchestration.output import WorkerOutput
from dynadesk.orchestration.runner_base import (
    POLL_S,
    Runner,
    RunOutcome,
    Watch,
    finished,
    interrupts_held,
    raise_held,
)

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.orchestration.request import RunRequest
    from dynadesk.progress import ProgressFn

__all__ = ["IN_SANDBOX_GRACE_S", "DockerRunner", "remove_leftover_containers"]

SANDBOX_UID = 65534  # 'nobody' in the image; used when the host side runs as root
GPU_FIX = ("install NVIDIA's container toolkit (nvidia-container-toolkit) and restart Docker, or run without "
           "--gpus")


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
    def for_request(cls, request: RunRequest, client: DockerClient | None = None) -> Runner:
        """In the request's image, default: this evaluator version's tag."""
        from dynadesk.orchestration.image import image_tag

        return cls(request.image or image_tag(), client=client)

    @classmethod
    def remove_leftovers(cls, under: Path) -> int:
        """The evaluation containers of run folders under ``under`` (:func:`remove_leftover_containers`)."""
        return remove_leftover_containers(under)

    @classmethod
    def gpu_status(cls, timeout: float = 3.0) -> DaemonStatus:
        """A GPU answers here and this Docker has NVIDIA's runtime."""
        return docker_gpu_status(timeout)

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

    def image_name(self) -> str | None:
        return self.image

    def describe(self) -> dict[str, str | bool]:
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
        watch = Watch(paths, limits, cancel)
        loadgen = start_loadgen(paths.spec_dir / "spec.json", paths.data_dir, paths.out_dir, paths.model_dir)
        try:
            # /data is the load generator's folder, empty until the timed windows are over (the replay hole)
            staged = RunPaths(paths.spec_dir, loadgen.sandbox_data, paths.model_dir, paths.out_dir)
            opts = self.container_options(staged, limits)  # the host's socket folder, mounted; the worker told
            opts["volumes"][str(loadgen.dir)] = {"bind": CONTAINER_DIR, "mode": "ro"}
            opts["command"] = [*opts["command"], "--loadgen", f"{CONTAINER_DIR}/{SOCKET_NAME}"]
            # a Ctrl-C while the daemon makes the container would leave us without the container to remove
            try:
                with interrupts_held() as arrived:
                    container = self.client.containers.create(self.image, **opts)
            except docker.errors.APIError as exc:
                raise_held(arrived)  # no container: nothing to remove
                return _refused(exc, limits, watch.elapsed())
            except transport_errors() as exc:
                raise_held(arrived)
                raise DockerUnavailable(f"Docker failed creating the container: {first_line(exc)}; "
                                        f"{NO_DAEMON_FIX}") from exc
            return self._run_container(container, paths, limits, Started(WorkerOutput(progress), watch, loadgen,
                                                                         arrived))
        finally:
            loadgen.close()
            if snapshot is not None:
                shutil.rmtree(snapshot, ignore_errors=True)

    def _run_container(self, container: DockerContainer, paths: RunPaths, limits: Limits,
                       started: Started) -> RunOutcome:
        import docker

        out, watch, loadgen = started.out, started.watch, started.loadgen
        verdict = None
        try:
            raise_held(started.held)  # from the moment the container exists: removed below
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
        details: dict[str, object] = {"exit_code": code, "oom_killed": bool(state.get("OOMKilled")),
                                      "image": self.image}
        observed = observations(loadgen.report(), memory)
        if verdict is None and code in (124, 137) and watch.elapsed() >= limits.timeout_s:
            verdict = "timeout"  # the in-sandbox deadline fired before this poll loop saw the limit pass
        if verdict is None and state.get("OOMKilled"):
            return RunOutcome("oom", code, out.text(), watch.elapsed(),
                              f"out of memory: the container hit its {limits.memory_bytes / (1 << 30):.2f} GiB "
                              "limit and was killed (OOMKilled)", details, observed)
        if verdict is None and tree_bytes(paths.out_dir) > limits.out_bytes:
            verdict = "disk"
        outcome = finished(verdict, code, out.text(), watch.elapsed(), paths, limits, observed, details)
        if outcome.verdict == "timeout":
            outcome.message = outcome.message.replace("was stopped", "the container was killed")
        return outcome


@dataclass(frozen=True)
class Started:
    """What a run has when its container exists: the worker's output reader, the run's watch, the host's load
    generator, and the signals held while the daemon made the container (raised where it is removed)."""

    out: WorkerOutput
    watch: Watch
    loadgen: LoadGen
    held: list[int]


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
