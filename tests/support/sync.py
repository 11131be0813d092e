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

from dynadesk.datasets import DatasetOrigin, dataset_digest
from dynadesk.store.evaluations import ImageBuild, MetricValue, RunChange, RunSetup, WorkerSettings

TEST_SETS = ("vader-movies-test", "vader-tweets-test")
LABELS = ("negative", "neutral", "positive")


SET_SIZE = 300  # 100 per label: every whole-number perf, robustness and fairness is exactly reachable
PREDICTIONS_PER_RUN = len(TEST_SETS) * 3 * SET_SIZE  # make_run: each test set, its robustness and fairness sets


def predictions_file(run_dir) -> Path:
    """Where a run folder keeps its predictions (``out/predictions.jsonl``)."""
    return Path(run_dir) / "out" / "predictions.jsonl"


def ensure_datasets(store, names=TEST_SETS, size: int = SET_SIZE) -> None:
    for name in names:
        if store.datasets.exists(name):
            continue
        examples = [{"id": f"{name}-{i}", "statement": f"statement {i} of {name} é", "label": LABELS[i % 3]}
                    for i in range(size)]
        counts = {lab: sum(1 for e in examples if e["label"] == lab) for lab in LABELS}
        store.datasets.add(name, "sentiment", "test", examples, dataset_digest(examples), counts,
                           DatasetOrigin(source="test"))


IMAGE_EPOCH = 1_700_000_000  # the recorded image build's SOURCE_DATE_EPOCH


def stored_model(store, model: str):
    """A bag-of-words sentiment model record named ``model`` (registered once, digest from its name)."""
    if not store.models.exists(model):
        digest = "sha256:" + hashlib.sha256(model.encode()).hexdigest()
        store.models.add(model, "sentiment", "bag-of-words", f"/models/{model}", digest,
                         {"task": "sentiment", "kind": "bag-of-words", "labels": list(LABELS)})
    return store.models.get(model)


def _other(label: str) -> str:
    return LABELS[(LABELS.index(label) + 1) % len(LABELS)]


def _scored_predictions(examples: list[dict], perf: float) -> dict[str, str]:
    """Labels for ``examples`` whose macro-F1 is ``perf``: per gold label the same share of its examples is
    predicted as the next label (the errors go round the labels, so every label's precision and recall are
    that share, and macro-F1 equals accuracy). Exact on balanced sets whose per-label count makes it whole."""
    out, seen = {}, {lab: 0 for lab in LABELS}
    per_label = {lab: sum(1 for e in examples if e["label"] == lab) for lab in LABELS}
    for ex in examples:
        lab = ex["label"]
        wrong = round((1 - perf / 100.0) * per_label[lab])
        out[ex["id"]] = _other(lab) if seen[lab] < wrong else lab
        seen[lab] += 1
    return out


def _write_jsonl(path: Path, rows: list[dict]) -> str:
    with open(path, "w", encoding="utf-8") as fh:  # as dynadesk.orchestration.evaluate writes a run's data
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_run_folder(store, run_dir: Path, model, datasets, perf: float, robustness: float, fairness: float,
                     step: float = 1.0, predict=None) -> list[MetricValue]:
    """A real run folder (``spec/spec.json``, ``data/``, ``out/predictions.jsonl``) for ``model`` on the test sets
    ``datasets``, with one robustness and one fairness perturbation set each, whose predictions score ``perf``
    (+ ``step`` per further test set), ``robustness`` and ``fairness``; returns the host's own deterministic rows
    for it (:func:`dynadesk.orchestration.recompute.recompute`), which is what the run must store."""
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec
    from dynadesk.orchestration.folder import RunFolder
    from dynadesk.orchestration.recompute import recompute
    from dynadesk.tasks import get_task

    folder = RunFolder(Path(run_dir))
    for part in (folder.spec_dir, folder.data_dir, folder.out_dir):
        part.mkdir(parents=True, exist_ok=True)
    entries, lines = [], []
    for i, name in enumerate(datasets):
        examples = store.datasets.examples(name)
        preds = _scored_predictions(examples, perf + step * i) if predict is None else \
            dict(zip([e["id"] for e in examples], predict([e["label"] for e in examples]), strict=True))
        members = [(name, "test", None, None, examples, preds)]
        for kind, suite, target in (("robustness", "case", robustness), ("fairness", "gender", fairness)):
            kept = round(target / 100.0 * len(examples))
            derived = [{"id": f"{e['id']}~{suite}", "statement": e["statement"].upper(), "label": e["label"],
                        "metadata": {"source_id": e["id"]}} for e in examples]
            flipped = {d["id"]: preds[e["id"]] if n < kept else _other(preds[e["id"]])
                       for n, (d, e) in enumerate(zip(derived, examples))}
            members.append((f"{name}~{suite}", "perturbation", kind, suite, derived, flipped))
        for member, role, kind, suite, rows, labels in members:
            file = f"d{len(entries):03d}.jsonl"
            sha = _write_jsonl(folder.data_dir / file, rows)
            entries.append(DatasetSpec(name=member, file=file, sha256=sha, size=len(rows), role=role,
                                       derived_from=name if role == "perturbation" else None, kind=kind, suite=suite))
            lines += [json.dumps({"dataset": member, "id": r["id"], "prediction": {
                "label": labels[r["id"]], "probs": {lab: 0.8 if lab == labels[r["id"]] else 0.1 for lab in LABELS}}},
                sort_keys=True) for r in rows]
    Spec(task=get_task("sentiment").to_dict(), model={"name": model.name, "digest": model.digest,
                                                       "manifest": model.manifest},
         datasets=entries, settings=Settings(batch_size=32, seed=13, threads=2)).write(folder.spec_file)
    folder.predictions_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows, _notes = recompute(folder.spec_file, folder.data_dir, folder.predictions_file)
    return [MetricValue(r["dataset"], r["metric"], r["value"], r["unit"], True) for r in rows]


def make_run(store, runs_dir: Path, model: str = "bow-a", perf: float = 70.0, throughput: float = 900.0,
             memory: float = 0.4, robustness: float = 60.0, fairness: float = 80.0,
             datasets=TEST_SETS, predict=None) -> int:
    """A succeeded sentiment evaluation with a real run folder (spec, data, predictions) the host re-scores at
    ``bundle create``; perf is ``perf`` on the first test set, +1 on each next one (or each test set's predictions
    are ``predict(golds)``); returns its id."""
    ensure_datasets(store, datasets)
    m = stored_model(store, model)
    ev = store.evaluations.create(m.id, "sentiment", RunSetup(worker=WorkerSettings(batch_size=32, seed=13, threads=2)),
                                  runner="docker", sandboxed=True, datasets=list(datasets), status="running")
    # what a Docker run records from the workspace's image build record (orchestration.image_build)
    store.evaluations.update(ev, RunChange(image_build=ImageBuild(IMAGE_EPOCH, "sha256:" + "ef" * 32)))
    run_dir = Path(runs_dir) / str(ev)
    metrics = write_run_folder(store, run_dir, m, datasets, perf, robustness, fairness, predict=predict)
    metrics += [MetricValue("", "throughput", throughput, "examples/s", False),
                MetricValue("", "latency_p99_ms", 3.25, "ms", False),
                MetricValue("", "memory", memory, "GiB", False)]
    pred = run_dir / "out" / "predictions.jsonl"
    store.evaluations.set_metrics(
        ev, metrics,
        RunChange(image_id="sha256:" + "ab" * 32, evaluator_version="sha256:" + "cd" * 32, run_dir=str(run_dir),
                  predictions_digest="sha256:" + hashlib.sha256(pred.read_bytes()).hexdigest(),
                  environment={"cpu": "Test CPU", "cores": 2, "python": "3.11.2", "torch": "2.13.0", "gpu": None}),
        status="succeeded")
    return ev


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_bin() -> str:
    return str(Path(sys.executable).with_name("dynadesk-server"))


def admin(db: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """``dynadesk-server ARGS --db DB`` as the operator types it; asserts it succeeded (or failed, ``ok=False``)."""
    res = subprocess.run([server_bin(), *args, "--db", str(db)], capture_output=True, text=True, timeout=60)
    assert (res.returncode == 0) == ok, res.stdout + res.stderr
    return res


NO_LIMITS = ("--address-rate", "1000000/1000000", "--key-rate", "1000000/1000000")


def start_server(db: Path, port: int, limits: tuple[str, ...] = NO_LIMITS) -> subprocess.Popen:
    """Run ``dynadesk-server serve`` as a real process and wait until it answers (rate limits off unless given:
    tests/server/test_server_adversarial.py tests them)."""
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


def board_db(db_path: Path, ws, holder: str = "alice") -> Path:
    """A leaderboard server's database that accepts ``ws``'s key (held by ``holder``) and holds the workspace's
    datasets, closed: what a test's board server is started on."""
    from dynadesk.sync.format.keys import key_info
    from dynadesk.sync.server.admin import import_workspace_datasets
    from dynadesk.sync.server.db import ServerDB

    db = ServerDB(db_path)
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), holder)
    import_workspace_datasets(db, ws.home)
    db.close()
    return db_path


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
