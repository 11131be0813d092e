"""Real parts for the queue tests: a password-protected redis-server on loopback and `dynadesk worker` processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from support import missing
from support.sync import free_port

DYNADESK = [sys.executable, "-c", "from dynadesk.cli import main; main()"]
PASSWORD = "queue-test-secret"


@dataclass
class RedisServer:
    port: int
    proc: subprocess.Popen
    password: str = PASSWORD

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def client(self):
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, password=self.password)


def start_redis(folder: Path, argv: list[str] | None = None, port: int | None = None,
                password: str = PASSWORD) -> RedisServer:
    """redis-server on loopback with requirepass, its files in ``folder`` (``argv``: a command line to run instead)."""
    exe = shutil.which("redis-server")
    if exe is None:
        missing("redis-server", "apt-get install redis-server (packaging/system_deps.sh)")
    folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    argv = argv or [exe, "--port", str(port), "--bind", "127.0.0.1", "--requirepass", password,
                    "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(argv, stdout=open(folder / "redis.log", "wb"), stderr=subprocess.STDOUT, cwd=folder)
    server = RedisServer(port, proc, password)
    deadline = time.monotonic() + 20
    while True:
        try:
            server.client().ping()
            return server
        except Exception:  # noqa: BLE001 - not up yet
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start: {(folder / 'redis.log').read_text()}") from None
            time.sleep(0.1)


def serve_redis(tmp_path: Path):
    """The body of each queue test module's ``redis_server`` fixture: a server for one test, then stopped."""
    server = start_redis(tmp_path / "redis")
    yield server
    server.proc.terminate()
    server.proc.wait(timeout=10)


@dataclass
class WorkerProc:
    name: str
    home: Path
    proc: subprocess.Popen
    log: Path = field(default=Path())

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def kill9(self) -> None:
        """SIGKILL the worker and everything in its session (a local evaluator child too)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def start_worker(server: RedisServer, home: Path, name: str, *extra: str, lease: float = 3.0) -> WorkerProc:
    """A real `dynadesk worker` in its own session and workspace; returns once it announced itself."""
    return spawn_worker(server, home, name, ["worker", "--broker", server.url, "--name", name, "--lease", str(lease),
                                             *extra])


def spawn_worker(server: RedisServer, home: Path, name: str, args: list[str],
                 env: dict[str, str] | None = None) -> WorkerProc:
    """Run ``dynadesk --home HOME ARGS...`` (a worker command line) and wait until worker ``name`` is ready."""
    home.mkdir(parents=True, exist_ok=True)
    log = home.parent / f"{name}.log"
    proc = subprocess.Popen([*DYNADESK, "--home", str(home), *args], stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, start_new_session=True, env=env)
    worker = WorkerProc(name, home, proc, log)
    client = server.client()
    deadline = time.monotonic() + 90
    while not client.exists(f"dynadesk:worker:{name}"):
        if proc.poll() is not None or time.monotonic() > deadline:
            worker.stop()
            raise RuntimeError(f"worker {name} did not start:\n{worker.text()}")
        time.sleep(0.2)
    while "ready" not in worker.text() and time.monotonic() < deadline:  # celery's consumer is attached
        time.sleep(0.2)
    return worker


def job_states(server: RedisServer) -> dict[str, dict]:
    """Every job hash on the broker, decoded (payload and result left as JSON text)."""
    client = server.client()
    out = {}
    for raw in client.zrange("dynadesk:jobs", 0, -1):
        job = raw.decode()
        out[job] = {k.decode(): v.decode() for k, v in client.hgetall(f"dynadesk:job:{job}").items()
                    if k.decode() not in ("payload",)}
    return out


def result_of(state: dict) -> dict:
    return json.loads(state["result"]) if state.get("result") else {}


def run_cli(*args: str, home: Path, check: bool = True, timeout: float = 600,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([*DYNADESK, "--home", str(home), *args], capture_output=True, text=True, timeout=timeout,
                          env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"dynadesk {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def remove_containers(client, under: Path) -> None:
    """Evaluation containers a killed worker left behind (only those of this test's folders)."""
    for c in client.containers.list(all=True, filters={"label": "dynadesk.role=evaluation"}):
        if c.labels.get("dynadesk.run-dir", "").startswith(str(Path(under).resolve())):
            c.remove(force=True)


def trust(store, worker: WorkerProc) -> str:
    """Trust ``worker``'s key (created at its start) in the coordinating workspace ``store``; its fingerprint."""
    from dynadesk.queue.identity import key_paths, read_public_keyfile
    from dynadesk.store import worker_keys

    fpr, raw = read_public_keyfile(key_paths(worker.home)[1])
    worker_keys.trust(store, fpr, raw, worker.name)
    return fpr


def wait_for(what: str, until, timeout: float = 180.0, poll: float = 0.2):
    """``until()``'s first truthy value, polled every ``poll`` seconds; an AssertionError naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = until()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll)


def majority_workspace(store, tmp_path: Path, size: int = 12, perturbed: bool = True) -> str:
    """A registered majority baseline and a test set of ``size`` examples (with its perturbation sets unless not
    ``perturbed``): real jobs, a few seconds each in Docker, no torch at set-up. Returns the model's name."""
    from dynadesk.models.bow import write_majority
    from dynadesk.models.registry import register_model
    from support.eval import LABELS, add_test_set

    folder = tmp_path / "models" / "maj"
    write_majority(folder, "sentiment", LABELS, ["statement"], ["positive", "negative", "positive"])
    register_model(store, folder, "sentiment", name="maj")
    add_test_set(store, "set0-test", size, seed=0, perturbed=perturbed)
    return "maj"
