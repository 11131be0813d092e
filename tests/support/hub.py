"""Helpers shared by tests/hub/: a workspace with tiny real models and open sentiment and QA rounds,
a real hub (uvicorn in a thread, or ``dynadesk hub serve`` as a subprocess) on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

QA_PASSAGES = [
    "The lighthouse at Point Reyes was built in 1870 and guided ships through fog for over a century.",
    "Marie Curie won two Nobel prizes, one in physics in 1903 and one in chemistry in 1911.",
    "The river Danube flows through ten countries before it reaches the Black Sea.",
    "Honey bees communicate the direction of flowers with a waggle dance inside the hive.",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_workspace(home: Path, models_root: Path) -> dict[str, Any]:
    """Tiny sentiment and QA models registered, a sentiment round and a QA round (with a context pool) open."""
    from dynadesk import annotation as ann
    from dynadesk.workspace import Workspace
    from support.annotation import build_tiny_models, register

    models = build_tiny_models(models_root)
    store = Workspace(home).open_store()
    try:
        register(store, models, "sentiment", "sentiment")
        register(store, models, "qa", "qa")
        ann.new_round(store, "sentiment", ["tiny-sentiment"])
        pool = models_root / "passages.txt"
        pool.write_text("\n".join(QA_PASSAGES) + "\n", encoding="utf-8")
        ann.new_round(store, "qa", ["tiny-qa"], contexts_file=pool)
    finally:
        store.close()
    return models


@dataclass
class ThreadHub:
    url: str
    core: Any
    server: Any
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@contextmanager
def hub_in_thread(home: Path, **options: Any) -> Iterator[ThreadHub]:
    """The hub's real app under uvicorn on a free loopback port, in this process (so a test can reach its
    batchers); ``options`` go to :class:`HubCore` (session_hours, window_s, max_batch) or ``create_app``."""
    import uvicorn

    from dynadesk.hub.app import create_app
    from dynadesk.hub.service import HubCore

    core_keys = {"session_hours", "window_s", "max_batch"}
    core = HubCore(Path(home), **{k: v for k, v in options.items() if k in core_keys})
    app = create_app(core, **{k: v for k, v in options.items() if k not in core_keys})
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the hub did not start")
        time.sleep(0.05)
    hub = ThreadHub(f"http://127.0.0.1:{port}", core, server, thread)
    try:
        yield hub
    finally:
        hub.stop()


def dynadesk(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).with_name("dynadesk"))
    proc = subprocess.run([exe, "--home", str(home), *args], capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"dynadesk {' '.join(args)} failed: {proc.stdout}{proc.stderr}")
    return proc


def invite(home: Path, name: str, role: str) -> str:
    """A one-time code from the real CLI (its last line of output)."""
    return dynadesk(home, "hub", "invite", name, "--role", role).stdout.strip().splitlines()[-1]


@contextmanager
def hub_process(home: Path, *extra: str) -> Iterator[str]:
    """``dynadesk hub serve`` as a real subprocess on a free loopback port; yields its URL."""
    port = free_port()
    exe = str(Path(sys.executable).with_name("dynadesk"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen([exe, "--home", str(home), "hub", "serve", "--port", str(port), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"hub serve exited {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}")
            try:
                if requests.get(url + "/", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("hub serve did not answer within 60 s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Client:
    """One signed-in person over HTTP (a requests session keeps the cookie; the CSRF token is sent)."""

    def __init__(self, url: str, code: str | None = None):
        self.url = url
        self.http = requests.Session()
        self.me: dict[str, Any] = {}
        if code is not None:
            resp = self.post("/api/signin", {"code": code}, csrf=False)
            assert resp.status_code == 200, resp.text
            self.me = resp.json()

    def get(self, path: str, **params: Any) -> requests.Response:
        return self.http.get(self.url + path, params=params, timeout=60)

    def post(self, path: str, body: dict[str, Any], csrf: bool = True, headers: dict[str, str] | None = None
             ) -> requests.Response:
        h = dict(headers or {})
        if csrf and self.me:
            h.setdefault("X-CSRF-Token", self.me["csrf"])
        return self.http.post(self.url + path, json=body, headers=h, timeout=120)


def rid(n: int | str) -> str:
    """A fresh request id (what the page makes per form submission)."""
    import hashlib

    return f"req-{hashlib.sha256(str(n).encode()).hexdigest()[:8]}-{time.monotonic_ns()}"
