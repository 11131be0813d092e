"""Per-task default weights (Dynatask's ``aggregation_metric.default_weights``), declared once in the task file and
used by every board: the local board (CLI), the app's board model and sliders, and the public board of a server
that registered the task. Metadata field declarations are parsed and refused here too.

Real workspace, real `dynadesk-server` process on loopback (the run and sync as tests/tasks/test_tasks_server.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner
from support.sync import admin, free_port, start_server, stop_server
from test_tasks_server import _emotion_run
from test_tasks_workspace import EMOTION

from dynadesk.cli import cli
from dynadesk.errors import ConfigError
from dynadesk.scoring.board import Weighting
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.task_extras import default_weights
from dynadesk.tasks import Task, parse_task_text, task_digest
from dynadesk.workspace import Workspace

WEIGHTED = EMOTION + """\
aggregation_metric:
  type: dynascore
  default_weights: {perf: 2, throughput: 0, robustness: 3}
metadata:
  create:
    - {name: rationale, type: string, required: true}
  validate:
    - {name: flag_reason, type: multiclass, labels: [offensive, unclear], when: flagged}
"""
DECLARED = {"perf": 2.0, "throughput": 0.0, "memory": 1.0, "robustness": 3.0, "fairness": 1.0}


def test_the_task_file_declares_weights_and_fields_which_round_trip_and_enter_the_digest():
    task = parse_task_text(WEIGHTED, "emotion.yaml")
    assert default_weights(task) == DECLARED
    assert [f.name for f in task.create_metadata] == ["rationale"] and task.validate_metadata[0].when == "flagged"
    assert Task.from_dict({**task.to_dict(), "source": ""}) == task
    plain = parse_task_text(EMOTION, "emotion.yaml")
    assert not {"default_weights", "create_metadata", "validate_metadata"} & set(plain.to_dict())
    assert task_digest(task) != task_digest(plain)  # one name, one definition: weights are part of it
    assert default_weights(plain) == {"perf": 4.0, "throughput": 1.0, "memory": 1.0, "robustness": 1.0,
                                      "fairness": 1.0}


@pytest.mark.parametrize(("change", "named"), [
    ("{perf: 2, speed: 1}", "default_weights names 'speed', not a Dynascore metric"),
    ("{perf: -1}", "default_weights.perf must be a number from 0"),
    ("{perf: .nan}", "default_weights.perf must be a number from 0"),
    ("{perf: 0, throughput: 0, memory: 0, robustness: 0, fairness: 0}", "every weight is 0"),
])
def test_bad_weights_are_refused_naming_the_field_and_line(change, named):
    text = WEIGHTED.replace("{perf: 2, throughput: 0, robustness: 3}", change)
    with pytest.raises(ConfigError) as err:
        parse_task_text(text, "emotion.yaml")
    assert named in str(err.value) and "emotion.yaml:" in str(err.value)


@pytest.mark.parametrize(("change", "named"), [
    ("type: multiclass, labels: [offensive, unclear], when: flagged", None),
    ("type: choice, labels: [offensive, unclear], when: flagged", "type must be one of string, multiclass"),
    ("type: multiclass, labels: [offensive], when: flagged", "needs at least two distinct labels"),
    ("type: multiclass, labels: [offensive, unclear], when: rejected", "when must be one of correct, incorrect"),
    ("type: multiclass, labels: [offensive, unclear], shown: true", "unknown field(s) shown"),
])
def test_bad_metadata_fields_are_refused_naming_the_field(change, named):
    text = WEIGHTED.replace("type: multiclass, labels: [offensive, unclear], when: flagged", change)
    if named is None:
        parse_task_text(text, "emotion.yaml")
        return
    with pytest.raises(ConfigError) as err:
        parse_task_text(text, "emotion.yaml")
    assert named in str(err.value) and "metadata.validate[0]" in str(err.value)


def _add_task(tmp_path: Path) -> Path:
    task_file = tmp_path / "emotion.yaml"
    task_file.write_text(WEIGHTED)
    res = CliRunner().invoke(cli, ["tasks", "add", str(task_file)])
    assert res.exit_code == 0, res.output
    return task_file


def test_the_local_board_and_the_apps_sliders_take_the_tasks_weights(home, tmp_path):
    _add_task(tmp_path)
    ws = Workspace(home)
    _emotion_run(ws)
    store = ws.open_store()
    try:
        board = build_leaderboard(store, "emotion")  # what `dynadesk board` and the app's board model rank with
        assert {k: s.weight for k, s in board.metrics.items()} == DECLARED
        # a query's weight wins; others stay
        asked = build_leaderboard(store, "emotion", Weighting(weights={"perf": 5.0}))
        assert {k: s.weight for k, s in asked.metrics.items()} == {**DECLARED, "perf": 5.0}
        assert default_weights("emotion") == DECLARED  # what the app's metric sliders start at
        res = CliRunner().invoke(cli, ["leaderboard", "emotion", "--json"])
        assert res.exit_code == 0, res.output
        assert {k: v["weight"] for k, v in json.loads(res.output)["metrics"].items()} == DECLARED
    finally:
        store.close()


def test_the_public_board_of_a_server_that_registered_the_task_takes_its_weights(home, tmp_path):
    task_file = _add_task(tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["keys", "init"]).exit_code == 0
    pub = tmp_path / "alice.pub"
    assert runner.invoke(cli, ["keys", "export", "-o", str(pub)]).exit_code == 0
    ev = _emotion_run(Workspace(home))
    assert runner.invoke(cli, ["bundle", "create", str(ev), "--json"]).exit_code == 0
    db = tmp_path / "board.db"
    admin(db, "keys", "add", str(pub), "--name", "alice")
    admin(db, "tasks", "add", str(task_file))
    admin(db, "datasets", "import-workspace", "--home", str(home))
    port = free_port()
    proc = start_server(db, port)
    url = f"http://127.0.0.1:{port}"
    try:
        res = runner.invoke(cli, ["sync", "--server", url, "--json"])
        assert res.exit_code == 0, res.output
        board = requests.get(f"{url}/api/leaderboard/emotion", timeout=10).json()
        assert {k: v["weight"] for k, v in board["metrics"].items()} == DECLARED, json.dumps(board)[:800]
        asked = requests.get(f"{url}/api/leaderboard/emotion?weight.throughput=2", timeout=10).json()
        assert {k: v["weight"] for k, v in asked["metrics"].items()} == {**DECLARED, "throughput": 2.0}
    finally:
        stop_server(proc)
