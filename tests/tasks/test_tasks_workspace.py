"""Workspace tasks: `dynadesk tasks add FILE.yaml` validates, stores and exposes a lab's own task.

Each malformed file is refused whole with a line naming the problem and its line, and nothing is
stored; a stored task is seen by every `get_task` lookup; `tasks remove` refuses while data uses it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from support import REPO

from dynadesk.cli import cli
from dynadesk.errors import ConfigError, NotFoundError
from dynadesk.store import Store
from dynadesk.tasks import TASK_FILE_SCHEMA, get_task, load_tasks, parse_task_text, task_digest
from dynadesk.workspace import open_workspace

EMOTION = """\
name: emotion
title: Five-way emotion
description: Which emotion does the sentence express?
inputs:
  - name: statement
    description: the sentence
output:
  kind: label
  labels: [joy, sadness, anger, fear, surprise]
metric: macro_f1
secondary_metrics: [accuracy]
fooled_rule:
  kind: label_mismatch
perturbations:
  fields: [statement]
  robustness: [case, typos]
  fairness: [gender]
validation:
  votes_needed: 2
"""

SPAN = """\
name: clinic_qa
inputs:
  - name: note
    is_context: true
  - name: question
output:
  kind: span
  span_of: note
metric: squad_f1
fooled_rule:
  kind: answer_f1_below
  threshold: 0.4
"""


def _cli(home: Path, *args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["--home", str(home), *args])
    return res.exit_code, res.output + (str(res.exception) if res.exception else "")


def _file(tmp_path: Path, text: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _stored(home: Path) -> list[str]:
    store = open_workspace(home)[1]
    try:
        return sorted(store.tasks.all())
    finally:
        store.close()


def test_add_show_list_and_lookup_everywhere(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    code, out = _cli(home, "tasks", "add", str(_file(tmp_path, EMOTION)))
    assert code == 0, out
    digest = task_digest(parse_task_text(EMOTION, "x"))
    assert digest in out and digest.startswith("sha256:")
    code, out = _cli(home, "tasks", "show", "emotion")
    assert code == 0 and f"digest {digest}" in out and "joy, sadness, anger, fear, surprise" in out
    code, out = _cli(home, "tasks", "list", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["emotion"]["defined"] == "workspace" and rows["nli"]["defined"] == "bundled"
    assert len(rows) == 5
    # the single place tasks are resolved sees it while the store is open, and not after it closes
    store = Store.open(home / "dynadesk.db")
    assert get_task("emotion").labels == ("joy", "sadness", "anger", "fear", "surprise")
    assert get_task("emotion").votes_needed == 2
    store.close()
    with pytest.raises(NotFoundError):
        get_task("emotion")
    assert set(load_tasks()) == {"nli", "sentiment", "hate_speech", "qa"}


def test_stores_over_one_file_are_read_once_and_a_dropped_one_hands_over_to_the_next(tmp_path: Path) -> None:
    """The hub opens a store per worker thread: their task sources name the same file, so a lookup reads it once.
    A store dropped without closing (its source answers None) must not hide the file from the stores still open,
    and two workspaces' files are still two sources."""
    import gc

    home, other = tmp_path / "ws", tmp_path / "other"
    assert _cli(home, "tasks", "add", str(_file(tmp_path, EMOTION)))[0] == 0
    assert _cli(other, "tasks", "add", str(_file(tmp_path, SPAN, "span.yaml")))[0] == 0
    first = Store.open(home / "dynadesk.db")
    second = Store.open(home / "dynadesk.db")
    third = Store.open(other / "dynadesk.db")
    try:
        assert {"emotion", "clinic_qa"} <= set(load_tasks())
        del first  # registered first, dropped without close(): its source now answers None
        gc.collect()
        assert get_task("emotion").labels == ("joy", "sadness", "anger", "fear", "surprise")
        assert get_task("clinic_qa").span_of == "note"
    finally:
        second.close()
        third.close()
    with pytest.raises(NotFoundError):
        get_task("emotion")


def test_a_workspace_made_again_at_the_same_path_is_read_anew_and_held_connections_are_bounded(tmp_path: Path) -> None:
    """Task lookups keep a read-only connection to each workspace file (one opened per lookup was 13 % of the hub's
    CPU). A workspace removed and made again at the same path, while a store over the old one is still open, is
    another file: the next lookup must read its tasks, not the removed file's (a connection kept on the old file
    still could). A closed store leaves no connection to its file (Windows cannot delete an open file), and lookups
    over many workspaces keep at most a few open (a test session makes thousands)."""
    import shutil

    from dynadesk.store.tasks import _READERS

    def workspace(home: Path, task_file: Path) -> Store:
        assert _cli(home, "tasks", "add", str(task_file))[0] == 0
        return Store.open(home / "dynadesk.db")

    home = tmp_path / "ws"
    old = workspace(home, _file(tmp_path, EMOTION))
    try:
        assert get_task("emotion").labels[0] == "joy"
        workspace(tmp_path / "fresh", _file(tmp_path, SPAN, "span.yaml")).close()
        shutil.rmtree(home)
        shutil.move(tmp_path / "fresh", home)  # made elsewhere, moved into place: no store here closed meanwhile
        new = Store.open(home / "dynadesk.db")
        try:
            assert get_task("clinic_qa").span_of == "note"
            with pytest.raises(NotFoundError):
                get_task("emotion")  # the removed workspace's task
        finally:
            new.close()
    finally:
        old.close()
    assert home / "dynadesk.db" not in _READERS.held
    for i in range(_READERS.KEEP + 4):
        many = workspace(tmp_path / f"many{i}", _file(tmp_path, EMOTION))
        assert get_task("emotion").labels[0] == "joy"
        del many  # dropped without close(), as a crashed worker's store is: its connection stays until evicted
    assert len(_READERS.held) <= _READERS.KEEP


def test_span_task_over_any_context_field(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    code, out = _cli(home, "tasks", "add", str(_file(tmp_path, SPAN)))
    assert code == 0, out
    store = Store.open(home / "dynadesk.db")
    try:
        t = get_task("clinic_qa")
        assert t.output_kind == "span" and t.span_of == "note" and t.context_field == "note"
    finally:
        store.close()


def test_remove_refuses_while_data_uses_the_task(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    assert _cli(home, "tasks", "add", str(_file(tmp_path, EMOTION)))[0] == 0
    data = tmp_path / "emo.jsonl"
    data.write_text("".join(json.dumps({"uid": f"e{i}", "statement": f"s {i}", "label": lab}) + "\n"
                            for i, lab in enumerate(["joy", "anger", "fear", "surprise", "sadness"])))
    code, out = _cli(home, "data", "import", str(data), "--task", "emotion", "--name", "emo")
    assert code == 0, out
    code, out = _cli(home, "tasks", "remove", "emotion")
    assert code != 0 and "in use" in out and "1 dataset(s)" in out
    assert _stored(home) == ["emotion"]
    code, out = _cli(home, "data", "show", "emo", "--json")
    assert code == 0 and json.loads(out)["task"] == "emotion"


def test_remove_an_unused_task(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    assert _cli(home, "tasks", "add", str(_file(tmp_path, EMOTION)))[0] == 0
    code, out = _cli(home, "tasks", "remove", "emotion")
    assert code == 0, out
    assert _stored(home) == []


def test_a_second_add_under_the_same_name_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    assert _cli(home, "tasks", "add", str(_file(tmp_path, EMOTION)))[0] == 0
    other = EMOTION.replace("surprise]", "disgust]")
    code, out = _cli(home, "tasks", "add", str(_file(tmp_path, other, "b.yaml")))
    assert code != 0 and "already in this workspace" in out


MALFORMED = {
    "missing field": (EMOTION.replace("metric: macro_f1\n", ""), r":\d+: missing field 'metric'"),
    "unknown metric": (EMOTION.replace("metric: macro_f1", "metric: bleu"),
                       r":10: field 'metric' is 'bleu', not a registered metric"),
    "one label": (EMOTION.replace("[joy, sadness, anger, fear, surprise]", "[joy]"),
                  r":9: output.labels must list at least two labels, got 1"),
    "span over a non-input": (SPAN.replace("span_of: note", "span_of: passage"),
                              r":8: output.span_of names 'passage', which is not an input"),
    "duplicate labels": (EMOTION.replace("fear, surprise]", "fear, joy]"),
                         r":9: output.labels has duplicate labels: joy"),
    "shadows a bundled task": (EMOTION.replace("name: emotion", "name: sentiment"),
                               r":1: field 'name' is 'sentiment', which shadows the bundled task"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_task_files_are_refused_naming_the_problem_and_nothing_is_stored(tmp_path: Path, case: str) -> None:
    text, pattern = MALFORMED[case]
    home = tmp_path / "ws"
    path = _file(tmp_path, text)
    code, out = _cli(home, "tasks", "add", str(path))
    assert code != 0
    assert re.search(re.escape(str(path)) + pattern, out), out
    assert _stored(home) == []


def test_every_problem_is_named_at_once() -> None:
    text = EMOTION.replace("metric: macro_f1", "metric: bleu").replace("[joy, sadness, anger, fear, surprise]", "[joy]")
    with pytest.raises(ConfigError) as err:
        parse_task_text(text, "f.yaml")
    assert "f.yaml:10: field 'metric'" in str(err.value) and "f.yaml:9: output.labels" in str(err.value)


def test_docs_schema_table_matches_the_code() -> None:
    docs = (REPO / "docs" / "tasks.md").read_text()
    for path, kind, required, what in TASK_FILE_SCHEMA:
        assert f"| `{path}` | {kind} | {required} | {what} |" in docs, path


def test_one_lookup_answers_a_block_from_its_first_lookup_and_only_there(tmp_path: Path) -> None:
    """The hub's requests each run inside ``one_lookup``: a create asked for its task five times or more, each a
    glob and stat of the task files and a read of the workspace's table. Inside the block the workspace is read
    once and a task added meanwhile is not seen (the request sees one version of the tasks); outside, and in the
    next block, it is; another thread's lookups are its own."""
    import threading

    from dynadesk.task_sources import one_lookup, register_task_source, unregister_task_source

    reads: list[int] = []
    extra = {"emotion": parse_task_text(EMOTION, "x")}
    source: dict[str, object] = {}

    def workspace() -> dict[str, object]:
        reads.append(1)
        return dict(source)

    register_task_source("memory#test", workspace)  # type: ignore[arg-type]
    try:
        with one_lookup():
            assert "emotion" not in load_tasks()
            source.update(extra)  # a task added while a request runs
            for _ in range(5):
                with pytest.raises(NotFoundError):
                    get_task("emotion")
            assert len(reads) == 1
            seen: list[bool] = []
            worker = threading.Thread(target=lambda: seen.append("emotion" in load_tasks()))
            worker.start()
            worker.join()
            assert seen == [True] and len(reads) == 2  # another thread is not inside this block
        assert get_task("emotion").votes_needed == 2 and len(reads) == 3
        with one_lookup():
            assert get_task("emotion").votes_needed == 2 and get_task("sentiment").name == "sentiment"
        assert len(reads) == 4
    finally:
        unregister_task_source("memory#test")
    assert "emotion" not in load_tasks()
