"""A workspace task on a real server: registered by file, its bundles accepted only under its digest.

A real `dynadesk-server` process on loopback; the workspace's emotion task, data and a succeeded run
(the run row is built as tests/support/sync.py builds them, for the five-label task).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import requests
from click.testing import CliRunner
from support.sync import admin, free_port, start_server, stop_server
from test_tasks_workspace import EMOTION

from dynadesk.cli import cli
from dynadesk.datasets import DatasetOrigin, dataset_digest
from dynadesk.orchestration.folder import RunFolder
from dynadesk.store.evaluations import MetricValue, RunChange, RunSetup, WorkerSettings
from dynadesk.tasks import parse_task_text, task_digest
from dynadesk.workspace import Workspace

LABELS = ("joy", "sadness", "anger", "fear", "surprise")


def _emotion_run_folder(run_dir: Path, model, examples: list[dict]) -> list[dict]:
    """Spec, data and predictions ("joy" for every example) of a run of the emotion task; the host's own rows."""
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec
    from dynadesk.orchestration.recompute import recompute

    folder = RunFolder(run_dir)
    for part in (folder.spec_dir, folder.data_dir, folder.out_dir):
        part.mkdir(parents=True, exist_ok=True)
    members = [("emotion-test", None, None, examples)]
    for kind, suite in (("robustness", "case"), ("fairness", "gender")):  # one suite each: the board needs both
        members.append((f"emotion-test~{suite}", kind, suite, [
            {"id": f"{e['id']}~{suite}", "statement": e["statement"].upper(), "label": e["label"],
             "metadata": {"source_id": e["id"]}} for e in examples]))
    specs, lines = [], []
    for i, (name, kind, suite, rows) in enumerate(members):
        data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows).encode()
        (folder.data_dir / f"d{i:03d}.jsonl").write_bytes(data)
        specs.append(DatasetSpec(name=name, file=f"d{i:03d}.jsonl", sha256=hashlib.sha256(data).hexdigest(),
                                 size=len(rows), role="perturbation" if kind else "test",
                                 derived_from="emotion-test" if kind else None, kind=kind, suite=suite))
        lines += [json.dumps({"dataset": name, "id": r["id"], "prediction": {"label": "joy"}}, sort_keys=True)
                  for r in rows]
    Spec(task=parse_task_text(EMOTION, "emotion.yaml").to_dict(),
         model={"name": model.name, "digest": model.digest, "manifest": model.manifest},
         datasets=specs, settings=Settings(batch_size=32, seed=13, threads=2)).write(folder.spec_file)
    folder.predictions_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows, _notes = recompute(folder.spec_file, folder.data_dir, folder.predictions_file)
    return rows


def _emotion_run(ws: Workspace) -> int:
    store = ws.open_store()
    try:
        examples = [{"id": f"e{i}", "statement": f"sentence {i}", "label": LABELS[i % 5]} for i in range(10)]
        store.datasets.add("emotion-test", "emotion", "test", examples, dataset_digest(examples),
                           {lab: 2 for lab in LABELS}, DatasetOrigin(source="test"))
        digest = "sha256:" + hashlib.sha256(b"emo-bow").hexdigest()
        store.models.add("emo-bow", "emotion", "bag-of-words", "/models/emo-bow", digest,
                         {"task": "emotion", "kind": "bag-of-words", "labels": list(LABELS)})
        m = store.models.get("emo-bow")
        ev = store.evaluations.create(m.id, "emotion", RunSetup(worker=WorkerSettings(seed=13)), runner="docker",
                                      sandboxed=True, datasets=["emotion-test"], status="running")
        run_dir = ws.runs_dir / str(ev)
        rows = _emotion_run_folder(run_dir, m, examples)  # a real run folder: bundle create re-scores it
        pred = RunFolder(run_dir).predictions_file
        store.evaluations.set_metrics(
            ev, [MetricValue(r["dataset"], r["metric"], r["value"], r["unit"], True) for r in rows]
            + [MetricValue("", "throughput", 900.0, "examples/s", False),
               MetricValue("", "memory", 0.4, "GiB", False)],
            RunChange(image_id="sha256:" + "ab" * 32, evaluator_version="sha256:" + "cd" * 32, run_dir=str(run_dir),
                      predictions_digest="sha256:" + hashlib.sha256(pred.read_bytes()).hexdigest(),
                      environment={"cpu": "Test CPU", "cores": 2, "python": "3.11.2", "torch": "2.13.0", "gpu": None}),
            status="succeeded")
        return ev
    finally:
        store.close()


def test_a_workspace_task_syncs_to_a_server_that_registered_it(home: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    task_file = tmp_path / "emotion.yaml"
    task_file.write_text(EMOTION)
    digest = task_digest(parse_task_text(EMOTION, "x"))
    assert runner.invoke(cli, ["tasks", "add", str(task_file)]).exit_code == 0
    assert runner.invoke(cli, ["keys", "init"]).exit_code == 0
    pub = tmp_path / "alice.pub"
    assert runner.invoke(cli, ["keys", "export", "-o", str(pub)]).exit_code == 0
    ws = Workspace(home)
    ev = _emotion_run(ws)
    res = runner.invoke(cli, ["bundle", "create", str(ev), "--json"])
    assert res.exit_code == 0, res.output
    bid = json.loads(res.output)["id"]
    bundle_file = ws.bundles_dir / f"{bid}.json"
    assert json.loads(bundle_file.read_text())["payload"]["task_digest"] == digest
    res = runner.invoke(cli, ["bundle", "show", str(bundle_file)])
    assert res.exit_code == 0 and f"task digest {digest}" in res.output

    db = tmp_path / "board.db"
    admin(db, "keys", "add", str(pub), "--name", "alice")
    # a different definition under the bundled name, and then under the registered name, are refused
    clash = tmp_path / "sentiment.yaml"
    clash.write_text(EMOTION.replace("name: emotion", "name: sentiment"))
    assert "shadows the bundled task" in admin(db, "tasks", "add", str(clash), ok=False).stderr
    assert digest in admin(db, "tasks", "add", str(task_file)).stdout
    other = tmp_path / "other.yaml"
    other.write_text(EMOTION.replace("surprise]", "disgust]"))
    assert "another definition" in admin(db, "tasks", "add", str(other), ok=False).stderr
    assert "emotion" in admin(db, "tasks", "--json").stdout
    assert "accepted 1 dataset(s)" in admin(db, "datasets", "import-workspace", "--home", str(home)).stdout

    port = free_port()
    proc = start_server(db, port)
    url = f"http://127.0.0.1:{port}"
    try:
        res = runner.invoke(cli, ["sync", "--server", url, "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["sent"] == [bid]
        board = requests.get(f"{url}/api/leaderboard/emotion", timeout=10).json()
        assert [r["model"] for r in board["rows"]] == ["emo-bow"], json.dumps(board)[:1500]
        page = requests.get(f"{url}/models/{bid}", timeout=10)
        assert page.status_code == 200 and "emo-bow" in page.text
        assert "labels joy, sadness, anger, fear, surprise; metric macro_f1" in page.text and digest in page.text
        listed = {t["name"]: t for t in requests.get(f"{url}/api/tasks", timeout=10).json()}
        assert listed["emotion"]["definition"]["digest"] == digest and listed["emotion"]["submissions"] == 1
    finally:
        stop_server(proc)


def test_a_server_without_the_task_refuses_its_bundle(home: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    task_file = tmp_path / "emotion.yaml"
    task_file.write_text(EMOTION)
    assert runner.invoke(cli, ["tasks", "add", str(task_file)]).exit_code == 0
    assert runner.invoke(cli, ["keys", "init"]).exit_code == 0
    pub = tmp_path / "alice.pub"
    assert runner.invoke(cli, ["keys", "export", "-o", str(pub)]).exit_code == 0
    ev = _emotion_run(Workspace(home))
    assert runner.invoke(cli, ["bundle", "create", str(ev)]).exit_code == 0
    db = tmp_path / "board.db"
    admin(db, "keys", "add", str(pub), "--name", "alice")
    # the server knows another definition under the same name: the upload is refused naming both digests
    other = tmp_path / "emotion2.yaml"
    other.write_text(EMOTION.replace("votes_needed: 2", "votes_needed: 4"))
    admin(db, "tasks", "add", str(other))
    port = free_port()
    proc = start_server(db, port)
    try:
        res = runner.invoke(cli, ["sync", "--server", f"http://127.0.0.1:{port}", "--json"])
        out = res.output
        assert "payload.task_digest" in out and task_digest(parse_task_text(EMOTION, "x")) in out, out
    finally:
        stop_server(proc)


def test_a_task_added_while_the_server_runs_is_accepted_without_a_restart(home: Path, tmp_path: Path) -> None:
    """`dynadesk-server tasks add` on a running board: the next upload, /api/tasks and the board see it."""
    runner = CliRunner()
    task_file = tmp_path / "emotion.yaml"
    task_file.write_text(EMOTION)
    assert runner.invoke(cli, ["tasks", "add", str(task_file)]).exit_code == 0
    assert runner.invoke(cli, ["keys", "init"]).exit_code == 0
    pub = tmp_path / "alice.pub"
    assert runner.invoke(cli, ["keys", "export", "-o", str(pub)]).exit_code == 0
    ev = _emotion_run(Workspace(home))
    res = runner.invoke(cli, ["bundle", "create", str(ev), "--json"])
    assert res.exit_code == 0, res.output
    bid = json.loads(res.output)["id"]
    db = tmp_path / "board.db"
    admin(db, "keys", "add", str(pub), "--name", "alice")
    port = free_port()
    proc = start_server(db, port)
    url = f"http://127.0.0.1:{port}"
    try:
        res = runner.invoke(cli, ["sync", "--server", url, "--json"])
        assert res.exit_code == 1  # something was rejected (issue 49: sync exits non-zero then)
        refused = json.loads(res.stdout)["rejected"][bid]
        assert "task 'emotion' is not on this board" in refused, res.output  # not registered yet
        assert "emotion" not in {t["name"] for t in requests.get(f"{url}/api/tasks", timeout=10).json()}
        admin(db, "tasks", "add", str(task_file))  # while the server runs
        admin(db, "datasets", "import-workspace", "--home", str(home))
        listed = {t["name"]: t for t in requests.get(f"{url}/api/tasks", timeout=10).json()}
        assert listed["emotion"]["definition"]["digest"] == task_digest(parse_task_text(EMOTION, "x"))
        assert runner.invoke(cli, ["sync", "requeue", bid]).exit_code == 0
        res = runner.invoke(cli, ["sync", "--server", url, "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["sent"] == [bid]
        board = requests.get(f"{url}/api/leaderboard/emotion", timeout=10).json()
        assert [r["model"] for r in board["rows"]] == ["emo-bow"], json.dumps(board)[:1500]
        assert requests.get(f"{url}/models/{bid}", timeout=10).status_code == 200
    finally:
        stop_server(proc)
