"""Shared builders for the sync tests: real evaluation rows, run folders and servers (no mocks)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from dynadesk.datasets import dataset_digest
from dynadesk.store.evaluations import ImageBuild, MetricValue, WorkerSettings

TEST_SETS = ("vader-movies-test", "vader-tweets-test")
LABELS = ("negative", "neutral", "positive")


def ensure_datasets(store, names=TEST_SETS, size: int = 12) -> None:
    for name in names:
        if store.datasets.exists(name):
            continue
        examples = [{"id": f"{name}-{i}", "statement": f"statement {i} of {name} é", "label": LABELS[i % 3]}
                    for i in range(size)]
        counts = {lab: sum(1 for e in examples if e["label"] == lab) for lab in LABELS}
        store.datasets.add(name, "sentiment", "test", examples, dataset_digest(examples), counts, source="test")


IMAGE_EPOCH = 1_700_000_000  # the recorded image build's SOURCE_DATE_EPOCH


def stored_model(store, model: str):
    """A bag-of-words sentiment model record named ``model`` (registered once, digest from its name)."""
    if not store.models.exists(model):
        digest = "sha256:" + hashlib.sha256(model.encode()).hexdigest()
        store.models.add(model, "sentiment", "bag-of-words", f"/models/{model}", digest,
                         {"task": "sentiment", "kind": "bag-of-words", "labels": list(LABELS)})
    return store.models.get(model)


def make_run(store, runs_dir: Path, model: str = "bow-a", perf: float = 70.0, throughput: float = 900.0,
             memory: float = 0.4, robustness: float = 60.0, fairness: float = 80.0,
             datasets=TEST_SETS) -> int:
    """A succeeded sentiment evaluation with realistic metrics and a predictions.jsonl; returns its id."""
    ensure_datasets(store, datasets)
    m = stored_model(store, model)
    ev = store.evaluations.create(m.id, "sentiment", runner="docker", sandboxed=True, datasets=list(datasets),
                                  worker=WorkerSettings(batch_size=32, seed=13, threads=2), status="running")
    # what a Docker run records from the workspace's image build record (orchestration.image_build)
    store.evaluations.update(ev, image_build=ImageBuild(IMAGE_EPOCH, "sha256:" + "ef" * 32))
    run_dir = Path(runs_dir) / str(ev)
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for name in datasets:
        for ex in store.datasets.examples(name):
            probs = {"negative": 0.2, "neutral": 0.3, "positive": 0.5}
            lines.append(json.dumps({"dataset": name, "id": ex["id"],
                                     "prediction": {"label": "positive", "probs": probs}}, sort_keys=True))
    pred = run_dir / "predictions.jsonl"
    pred.write_text("\n".join(lines) + "\n", encoding="utf-8")
    metrics = []
    for i, name in enumerate(datasets):
        metrics += [MetricValue(name, "perf", perf + i, "score", True),
                    MetricValue(name, "macro_f1", perf + i, "score", True),
                    MetricValue(name, "robustness", robustness, "score", True),
                    MetricValue(name, "fairness", fairness, "score", True)]
    metrics += [MetricValue("", "throughput", throughput, "examples/s", False),
                MetricValue("", "latency_p99_ms", 3.25, "ms", False),
                MetricValue("", "memory", memory, "GiB", False)]
    store.evaluations.set_metrics(
        ev, metrics, status="succeeded", image_id="sha256:" + "ab" * 32, evaluator_version="sha256:" + "cd" * 32,
        run_dir=str(run_dir), predictions_digest="sha256:" + hashlib.sha256(pred.read_bytes()).hexdigest(),
        environment={"cpu": "Test CPU", "cores": 2, "python": "3.11.2", "torch": "2.13.0", "gpu": None})
    return ev


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_bin() -> str:
    return str(Path(sys.executable).with_name("dynadesk-server"))


NO_LIMITS = ("--address-rate", "1000000/1000000", "--key-rate", "1000000/1000000")


def start_server(db: Path, port: int, limits: tuple[str, ...] = NO_LIMITS) -> subprocess.Popen:
    """Run ``dynadesk-server serve`` as a real process and wait until it answers (rate limits off unless given:
    tests/test_sync_adversarial.py tests them)."""
    proc = subprocess.Popen([server_bin(), "serve", "--db", str(db), "--port", str(port), *limits],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stdout.read().decode()}")
        try:
            requests.get(f"http://127.0.0.1:{port}/api/tasks", timeout=1)
            return proc
        except requests.RequestException:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start within 30 s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def workspace_with_key(home: Path, passphrase: str | None = None):
    """A fresh workspace (Workspace, Store) holding a submitter key."""
    from dynadesk.sync.format.keys import generate_key
    from dynadesk.workspace import Workspace

    ws = Workspace(home).ensure()
    store = ws.open_store()
    generate_key(ws.keys_dir, passphrase)
    return ws, store


def signed_payload(payload: dict, ws):
    """Sign an arbitrary payload with the workspace key (for tamper tests that re-sign)."""
    from dynadesk.sync.format.envelope import sign_payload
    from dynadesk.sync.format.keys import PRIVATE_NAME, load_private_key

    return sign_payload(payload, load_private_key(ws.keys_dir / PRIVATE_NAME))
