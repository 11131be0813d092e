"""``dynadesk worker``: one machine takes one job at a time and runs it in its own Docker sandbox.

The worker has its own workspace; its cache folder (``<home>/queue-cache``) keeps the blobs
and model folders it fetched, so a model travels to a machine once. Each job gets a run
folder under ``<home>/queue-runs/`` laid out like a local run's, so inputs reach the
container exactly as for ``dynadesk eval`` on that machine (read-only bind mounts of local
paths). The evaluator image is the one built for this evaluator version, resolved to its
Id at start and checked again before every run.

The worker trusts nothing in a job (the broker is writable by anyone holding its password):
every digest must be ``sha256:`` and 64 hex digits, a cached model folder is re-verified
against its tree digest before every use, and the limits a job asks for are capped by this
worker's own maxima (printed at start, recorded in the signed result). It signs the digest of
the payload it ran and the coordinator's challenge for the round, which the coordinator
compares with its own copies: a payload edited on the broker is run, but its result never stands. It refuses to start on
a broker that lets a client in without the password. Each result is signed with the worker's
own key (:mod:`dynadesk.queue.identity`), and each claim's lease is held by a fresh secret.

A background thread renews the lease of the running job (and reads cancel requests back),
re-queues the jobs of workers whose lease expired, and announces this worker.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.cancel import CancelToken
from dynadesk.errors import BrokerUnavailable, DynaDeskError, QueueError
from dynadesk.progress import ProgressEvent
from dynadesk.queue import identity, jobs
from dynadesk.queue.broker import BrokerURL, connect, key, refuse_anonymous, translated
from dynadesk.queue.tasks import QUEUE, TASK, make_app, send_job
from dynadesk.queue.transfer import BlobCache, put_file

if TYPE_CHECKING:
    from dynadesk.orchestration.limits import Limits
    from dynadesk.orchestration.request import RunRequest
    from dynadesk.orchestration.runner_base import Runner

DEFAULT_LEASE_S = 60.0
MAX_RESULT_LOG = 1 << 20
GIB = 1 << 30


@dataclass(frozen=True)
class Maxima:
    """The most one job may have on this machine, whatever it asks for (``dynadesk worker --max-...``)."""

    cpus: float = float(os.cpu_count() or 1)
    memory_bytes: int = 16 * GIB
    pids: int = 1024
    tmpfs_bytes: int = 4 * GIB
    out_bytes: int = 8 * GIB
    timeout_s: float = 24 * 3600.0

    def cap(self, limits: Limits) -> Limits:
        """``limits`` with each figure at most this worker's maximum."""
        return replace(limits, **{f: min(getattr(limits, f), getattr(self, f)) for f in self.to_dict()})

    def to_dict(self) -> dict[str, Any]:
        return {"cpus": self.cpus, "memory_bytes": self.memory_bytes, "pids": self.pids,
                "tmpfs_bytes": self.tmpfs_bytes, "out_bytes": self.out_bytes, "timeout_s": self.timeout_s}

    def describe(self) -> str:
        return (f"{self.cpus:g} CPUs, {self.memory_bytes / GIB:g} GiB memory, {self.pids} pids, "
                f"{self.tmpfs_bytes / GIB:g} GiB tmpfs, {self.out_bytes / GIB:g} GiB output, "
                f"{self.timeout_s:g} s")


@dataclass
class WorkerConfig:
    """Who this worker is and what it may run."""

    broker: BrokerURL
    home: Path
    name: str = field(default_factory=socket.gethostname)
    gpus: str | None = None
    lease_s: float = DEFAULT_LEASE_S
    allow_unsandboxed: bool = False  # also run jobs that ask for the local (not sandboxed) runner
    runner: str = "docker"  # the registered sandboxed runner this machine offers (its image checked at start)
    maxima: Maxima = field(default_factory=Maxima)


def _log(message: str) -> None:
    print(f"[dynadesk worker {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Worker:
    """The state one ``dynadesk worker`` process keeps: broker client, cache, image, the job in hand."""

    def __init__(self, config: WorkerConfig):
        self.config = config
        refuse_anonymous(config.broker)
        self.client = connect(config.broker)
        self.key = identity.load_or_create(config.home)
        self.key_fingerprint = identity.fingerprint_of(self.key)
        self.secret = ""
        self.app = make_app(config.broker)
        self.host = socket.gethostname()
        self.cache = BlobCache(config.home / "queue-cache")
        self.runs_dir = config.home / "queue-runs"
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.image, self.image_id = self._image()
        if self.image is not None:  # what this worker's previous life left (it was killed mid-job)
            from dynadesk.orchestration.evaluate import runner_type

            removed = runner_type(config.runner).remove_leftovers(self.runs_dir)
            if removed:
                _log(f"{config.name}: removed {removed} leftover run(s) ({config.runner}) a previous run of this "
                     "worker left")
        self.job: str | None = None
        self.progress: dict[str, Any] = {}
        self.cancel = CancelToken()
        self.hardware_class = ""
        self.request: Any = None
        self.payload_digest: str | None = None  # of the job in hand's payload, as fetched and run
        self._stop = threading.Event()

    def _image(self) -> tuple[str | None, str | None]:
        """The image of this machine's sandboxed runner (``config.runner``, from the runner registry) and its Id;
        when that runner cannot start here only unsandboxed jobs can run (if allowed)."""
        from dynadesk.orchestration.evaluate import machine_runner

        try:
            runner = machine_runner(self.config.runner)
            runner.check_ready()
            image_id = runner.image_id()
        except DynaDeskError as exc:
            if not self.config.allow_unsandboxed:
                raise QueueError(f"worker {self.config.name}: the {self.config.runner} runner is not usable here "
                                 f"({exc})") from None
            return None, None
        tag = runner.image_name()
        if tag is not None and image_id is None and not self.config.allow_unsandboxed:
            raise QueueError(f"worker {self.config.name}: the evaluator image {tag} is not built on this machine; "
                             "run 'dynadesk image build' first")
        return tag, image_id

    # ---------------------------------------------------------------- background: lease, reaper, presence

    def start_background(self) -> threading.Thread:
        thread = threading.Thread(target=self._beat_forever, name="dynadesk-heartbeat", daemon=True)
        thread.start()
        return thread

    def _beat_forever(self) -> None:
        interval = max(0.2, self.config.lease_s / 4)
        while not self._stop.wait(interval):
            try:
                self.beat()
            except DynaDeskError as exc:
                _log(f"heartbeat failed: {exc}")
            except Exception as exc:  # noqa: BLE001 - the heartbeat thread must outlive any one failure
                _log(f"heartbeat failed: {type(exc).__name__}: {exc}")

    def beat(self) -> None:
        """Renew the running job's lease; re-queue expired jobs; say this worker is alive."""
        with translated(self.config.broker):
            job = self.job
            if job is not None:
                answer = jobs.heartbeat(self.client, job, self.secret, self.config.lease_s, self.progress)
                if answer in ("cancel", "lost"):
                    if not self.cancel.cancelled():
                        _log(f"job {job}: {'cancel requested' if answer == 'cancel' else 'lease lost'}; stopping")
                    self.cancel.cancel()
            for job_id, attempt in jobs.reap(self.client):
                _log(f"job {job_id}: its worker stopped renewing the lease; queued again (attempt {attempt})")
                send_job(self.app, job_id, attempt)
            self.client.set(key("worker", self.config.name), json.dumps(
                {"name": self.config.name, "host": self.host, "pid": os.getpid(), "job": job, "seen": time.time(),
                 "hardware_class": self.hardware_class, "image_id": self.image_id, "gpus": self.config.gpus}),
                px=int(self.config.lease_s * 3000))

    # ---------------------------------------------------------------- one job

    def run_job(self, job_id: str, attempt: int) -> str:
        """Claim and run one delivery; returns what happened (``succeeded``, ``skipped: running`` ...)."""
        secret, lease = identity.new_lease_secret()
        with translated(self.config.broker):
            got = jobs.claim(self.client, job_id, attempt, self.config.name, self.config.lease_s, secret)
        if got != "claimed":
            _log(f"job {job_id} attempt {attempt}: not run ({got})")
            return f"skipped: {got}"
        self.cancel.reset()
        self.progress = {}
        self.request = None
        self.payload_digest = None
        self.secret = secret
        self.job = job_id
        with translated(self.config.broker):
            challenge = jobs.challenge(self.client, job_id)  # the coordinator's for this round: signed back
        _log(f"job {job_id} attempt {attempt}: running")
        try:
            state, result = self._execute(job_id, attempt)
        except DynaDeskError as exc:
            state, result = "failed", {"error": str(exc), "verdict": getattr(exc, "verdict", "error")}
        except Exception as exc:  # noqa: BLE001 - any failure of one job is reported on the job, the worker goes on
            state, result = "failed", {"error": f"{type(exc).__name__}: {exc}", "verdict": "error"}
        finally:
            self.job = None
        result.update(worker=self.config.name, host=self.host, attempt=attempt, job=job_id, lease=lease,
                      state=state, maxima=self.config.maxima.to_dict(), challenge=challenge,
                      payload_digest=self.payload_digest)
        result.setdefault("request", self.request)
        signed = identity.sign(self.key, result)
        kept = self._finish(job_id, secret, state, signed)
        _log(f"job {job_id} attempt {attempt}: {state}" + ("" if kept else " (lease lost: result discarded)"))
        return state if kept else "lost"

    def _finish(self, job_id: str, secret: str, state: str, signed: dict[str, Any]) -> bool:
        """Hand the result in, riding out a broker restart for as long as the lease could still be ours (after
        that it has expired and the job is someone else's: the result would be refused anyway)."""
        deadline = time.monotonic() + max(10.0, 2 * self.config.lease_s)
        while True:
            try:
                with translated(self.config.broker):
                    return bool(jobs.finish(self.client, job_id, secret, state, signed))
            except BrokerUnavailable as exc:
                if time.monotonic() > deadline:
                    raise
                _log(f"job {job_id}: cannot hand in the result yet ({exc}); retrying")
                time.sleep(0.5)

    def _execute(self, job_id: str, attempt: int) -> tuple[str, dict[str, Any]]:
        from dynadesk.evaluator.environment import hardware_class_of
        from dynadesk.evaluator.schema import ENVIRONMENT_FILE, evaluator_version
        from dynadesk.orchestration.folder import OUT_FILES, RunFolder
        from dynadesk.orchestration.request import RunRequest

        with translated(self.config.broker):
            payload = jobs.payload(self.client, job_id)
        # what this worker runs is exactly this payload (every blob and the model folder are verified against the
        # digests in it): its digest, signed, is compared with the coordinator's own copy
        self.payload_digest = identity.payload_digest(payload)
        self.request = payload.get("request")
        request = RunRequest.from_dict(payload["request"])
        check_digests(job_id, payload)
        if payload.get("evaluator_version") != evaluator_version():
            return "failed", {"verdict": "refused", "error": (
                f"the job needs evaluator {str(payload.get('evaluator_version'))[:19]}..., this worker has "
                f"{evaluator_version()[:19]}...; update DynaDesk on one side")}
        runner = self._runner(request)
        folder = RunFolder(self.runs_dir / f"{job_id}-{attempt}")
        folder.create()
        try:
            with translated(self.config.broker):
                shutil.copyfile(self.cache.blob(self.client, payload["spec"]), folder.spec_file)
                for name, hexd in payload["data"]:
                    if "/" in name or name.startswith("."):
                        raise QueueError(f"job {job_id} names a data file '{name}'")
                    shutil.copyfile(self.cache.blob(self.client, hexd), folder.data_dir / name)
                    os.chmod(folder.data_dir / name, 0o644)
                model_dir = self.cache.model(self.client, payload["model"]["files"], payload["model"]["digest"])
            folder.open_inputs()
            image_id = runner.image_id()
            if runner.image_name() is not None and image_id != self.image_id:
                return "failed", {"verdict": "refused", "error": (
                    f"the image {runner.image_name()} now has Id {image_id}, not {self.image_id} as at "
                    "start; restart the worker")}
            limits = self.config.maxima.cap(request.limits)
            if limits != request.limits:
                _log(f"job {job_id}: limits capped to this worker's maxima ({self.config.maxima.describe()})")
            if limits.gpus:
                limits = replace(limits, gpus=self.config.gpus or limits.gpus)
            started = time.time()
            outcome = runner.run(folder.paths(model_dir), limits, self._progress, self.cancel)
            strays = folder.strays()
            if strays:
                return "failed", {"verdict": "error", "error": f"the run left files it never writes: {strays}"}
            files = {}
            with translated(self.config.broker):
                for name in sorted(OUT_FILES):
                    path = folder.out_dir / name
                    if path.is_file() and not path.is_symlink():
                        files[name] = put_file(self.client, path)
            if (folder.out_dir / ENVIRONMENT_FILE).is_file():
                env = json.loads(folder.read_out(ENVIRONMENT_FILE))
                self.hardware_class = hardware_class_of(env)
            # this worker's own view of the run (windows, memory) is in the outcome: signed, it bounds the figures
            wire = outcome.to_wire()
            wire["log"] = outcome.log[-MAX_RESULT_LOG:]
            result = {"outcome": wire,
                      "files": files, "image_id": image_id, "hardware_class": self.hardware_class,
                      "limits": limits.to_dict(),
                      "image_build": self._image_build(image_id),
                      "started": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(started))}
            state = "succeeded" if outcome.ok else "cancelled" if outcome.verdict == "cancelled" else "failed"
            return state, result
        finally:
            shutil.rmtree(folder.root, ignore_errors=True)

    def _runner(self, request: RunRequest) -> Runner:
        """The job's runner, from the runner registry (in this worker's image when it runs in one)."""
        from dynadesk.orchestration.evaluate import make_runner
        from dynadesk.orchestration.runner_registry import runner_spec

        spec = runner_spec(request.runner)
        if not spec.sandboxed:
            if not self.config.allow_unsandboxed:
                raise QueueError(f"worker {self.config.name} runs only sandboxed jobs (--runner docker); start it "
                                 f"with --allow-unsandboxed to take --runner {spec.name} jobs")
            return make_runner(request)
        runner = make_runner(request.with_image(request.image or self.image))
        if runner.image_name() is not None and self.image is None:
            raise QueueError(f"worker {self.config.name} has no Docker here; it takes only --runner local jobs")
        return runner

    def _image_build(self, image_id: str | None) -> dict[str, Any] | None:
        from dynadesk.orchestration.evaluate import image_build
        from dynadesk.workspace import Workspace

        return image_build(Workspace(self.config.home).images_dir, image_id) if image_id else None

    def _progress(self, event: ProgressEvent) -> None:
        if event.phase in ("load", "predict", "metrics", "profile"):
            self.progress = ProgressEvent(event.phase, event.done, event.total, event.dataset).to_dict()

    def stop(self) -> None:
        self._stop.set()


def serve(config: WorkerConfig) -> None:
    """Run the Celery worker (solo pool, one message at a time) until stopped."""
    worker = Worker(config)
    app = worker.app

    @app.task(name=TASK, acks_late=True, ignore_result=True)  # type: ignore[untyped-decorator]
    def run_job(job_id: str, attempt: int) -> str:
        return worker.run_job(str(job_id), int(attempt))

    from celery.signals import worker_ready

    worker_ready.connect(lambda **_: _log(f"{config.name}: ready"), weak=False)
    worker.beat()
    worker.start_background()
    _log(f"{config.name} on {worker.host}: broker {config.broker.shown}, image "
         f"{worker.image_id or 'none (unsandboxed jobs only)'}, lease {config.lease_s:g} s; waiting for jobs")
    _log(f"{config.name}: worker key {worker.key_fingerprint} ({identity.key_paths(config.home)[1]}; the "
         "coordinating workspace runs 'dynadesk jobs trust-worker' on that file)")
    _log(f"{config.name}: job limits capped at {config.maxima.describe()}")
    try:
        app.worker_main(["--quiet", "worker", "--pool=solo", "--concurrency=1", "--prefetch-multiplier=1", "-Q", QUEUE,
                         "-n", f"{config.name}@{worker.host}", "--loglevel=WARNING", "--without-gossip",
                         "--without-mingle", "--without-heartbeat"])
    finally:
        worker.stop()


def check_digests(job_id: str, payload: dict[str, Any]) -> None:
    """Every digest a job names is ``sha256:`` + 64 hex digits (blobs: the 64 hex digits), before any is used
    as a file name: a digest is never a path."""
    from dynadesk.sync.format.schema import DIGEST, HEX64

    raw = payload.get("model")
    model: dict[str, Any] = raw if isinstance(raw, dict) else {}
    digest = model.get("digest")
    if not isinstance(digest, str) or not DIGEST.match(digest):
        raise QueueError(f"job {job_id}: model digest {str(digest)[:80]!r} is not sha256:<64 hex digits>; refused")
    blobs = [("spec", payload.get("spec"))]
    blobs += [(f"data file {d[0] if isinstance(d, list) and d else '?'}", d[1] if isinstance(d, list) and len(d) == 2
               else None) for d in payload.get("data") or []]
    blobs += [(f"model file {f[0] if isinstance(f, list) and f else '?'}", f[1] if isinstance(f, list) and len(f) == 2
               else None) for f in model.get("files") or []]
    for what, hexd in blobs:
        if not isinstance(hexd, str) or not HEX64.match(hexd):
            raise QueueError(f"job {job_id}: {what} digest {str(hexd)[:80]!r} is not 64 hex digits; refused")
