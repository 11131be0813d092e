"""Hostile task files cost nothing (issue 45 item 3): `dynadesk tasks add` and `dynadesk-server tasks add` run as
real subprocesses under a memory cap (RLIMIT_AS) and a time limit, and each attack is refused in one line.

Before: a 556-byte alias bomb took 4.4 GB, a 100,000-label file took minutes (the duplicate check was quadratic),
and look-alike names ("Sentiment", Cyrillic "ѕentiment") and labels with HTML, U+202E or NUL were accepted.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dynadesk.errors import ConfigError
from dynadesk.taskfile_guard import MAX_LABELS, MAX_TASK_FILE_BYTES
from dynadesk.tasks import parse_task_text

MEMORY_CAP = 1 << 30  # 1 GiB of address space: the CLI needs far less; the bomb needs gigabytes
TIME_CAP_S = 30.0

BASE = """\
name: {name}
title: {title}
inputs:
  - name: text
output:
  kind: label
  labels: {labels}
metric: accuracy
fooled_rule:
  kind: label_mismatch
"""


def _task(name: str = "emotion", labels: str = "[joy, anger]", title: str = "Emotion") -> str:
    return BASE.format(name=name, labels=labels, title=title)


def _bomb() -> str:
    """The 'billion laughs': nine levels of nine aliases, 9**9 'lol's once expanded (printing the title)."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n" + _task(title="*a8")


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _run(args: list[str]) -> tuple[int, str, float]:
    """Run a CLI under the memory cap and the time cap; (exit code, output, seconds)."""
    start = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=TIME_CAP_S, preexec_fn=_capped)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


def _dynadesk(home: Path, *args: str) -> tuple[int, str, float]:
    return _run([str(Path(sys.executable).with_name("dynadesk")), "--home", str(home), *args])


def _server(db: Path, *args: str) -> tuple[int, str, float]:
    return _run([str(Path(sys.executable).with_name("dynadesk-server")), *args, "--db", str(db)])


def _write(tmp_path: Path, text: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _one_line_refusal(out: str) -> str:
    assert "Traceback" not in out and "MemoryError" not in out, out[-2000:]
    return out


def test_the_alias_bomb_is_refused_before_expansion_on_both_sides(tmp_path: Path) -> None:
    bomb = _write(tmp_path, _bomb(), "emotion.yaml")
    assert bomb.stat().st_size < 1024
    code, out, took = _dynadesk(tmp_path / "ws", "tasks", "add", str(bomb))
    assert code != 0 and took < TIME_CAP_S
    assert "anchor '&a0' refused" in _one_line_refusal(out) and f"{bomb}:1:" in out
    code, out, took = _server(tmp_path / "board.db", "tasks", "add", str(bomb))
    assert code != 0 and "anchor '&a0' refused" in _one_line_refusal(out)
    # an alias alone (no anchor in this file can define it) and a merge key are refused as well
    with pytest.raises(ConfigError, match="alias"):
        parse_task_text(_task(title="*x"), "t.yaml")
    with pytest.raises(ConfigError, match=r"t.yaml:\d+: YAML anchor"):
        parse_task_text("base: &b {kind: label}\n" + _task(), "t.yaml")


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    deep = _task(title="x") + "validation: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(ConfigError, match="nested deeper than 32 levels"):
        parse_task_text(deep, "t.yaml")


def test_a_100000_label_file_is_refused_fast_under_the_caps(tmp_path: Path) -> None:
    labels = "[" + ", ".join(f"l{i}" for i in range(100_000)) + "]"
    big = _write(tmp_path, _task(labels=labels), "emotion.yaml")
    code, out, took = _dynadesk(tmp_path / "ws", "tasks", "add", str(big))
    assert code != 0 and took < 10, (took, out[-500:])
    assert f"over the {MAX_TASK_FILE_BYTES // 1024} KiB limit" in _one_line_refusal(out)
    code, out, took = _server(tmp_path / "board.db", "tasks", "add", str(big))
    assert code != 0 and took < 10 and "KiB limit" in _one_line_refusal(out)
    # under the size cap, the label cap speaks; duplicates are named, found in one pass
    many = "[" + ", ".join(f"l{i}" for i in range(MAX_LABELS + 1)) + "]"
    with pytest.raises(ConfigError, match=f"lists {MAX_LABELS + 1} labels, over the {MAX_LABELS} limit"):
        parse_task_text(_task(labels=many), "t.yaml")
    dups = "[" + ", ".join(f"l{i % 400}" for i in range(MAX_LABELS)) + "]"
    start = time.monotonic()
    with pytest.raises(ConfigError, match="duplicate labels: l0, l1, "):
        parse_task_text(_task(labels=dups), "t.yaml")
    assert time.monotonic() - start < 2


@pytest.mark.parametrize(("name", "why"), [
    ("Sentiment", "looks like the task 'sentiment'"),
    ("\u0455entiment", "looks like the task 'sentiment'"),  # Cyrillic dze
    ("NLI", "looks like the task 'nli'"),
    ("Hate_Speech", "looks like the task 'hate_speech'"),
    ("ｅｍｏｔｉｏｎ", "not in Unicode NFKC form"),  # full-width
    ("em\u043etion", "mixes scripts"),  # Cyrillic o in a Latin name
])
def test_look_alike_task_names_are_refused(tmp_path: Path, name: str, why: str) -> None:
    path = _write(tmp_path, _task(name=name), f"{name}.yaml")
    code, out, _ = _dynadesk(tmp_path / "ws", "tasks", "add", str(path))
    assert code != 0 and why in _one_line_refusal(out), out
    code, out, _ = _server(tmp_path / "board.db", "tasks", "add", str(path))
    assert code != 0 and why in _one_line_refusal(out), out


def test_a_look_alike_of_a_workspace_or_registered_task_is_refused(tmp_path: Path) -> None:
    first = _write(tmp_path, _task(name="emotion"), "emotion.yaml")
    second = _write(tmp_path, _task(name="Emotion"), "Emotion.yaml")
    assert _dynadesk(tmp_path / "ws", "tasks", "add", str(first))[0] == 0
    code, out, _ = _dynadesk(tmp_path / "ws", "tasks", "add", str(second))
    assert code != 0 and "looks like the task 'emotion'" in out
    db = tmp_path / "board.db"
    assert _server(db, "tasks", "add", str(first))[0] == 0
    assert _server(db, "tasks", "add", str(first))[0] == 0  # the same file again: idempotent, not a look-alike
    code, out, _ = _server(db, "tasks", "add", str(second))
    assert code != 0 and "looks like the task 'emotion'" in out


@pytest.mark.parametrize(("labels", "why"), [
    ('["<b>joy</b>", anger]', "markup character"),
    ('["joy\\u202e", anger]', "bidi control U+202E"),
    ('["joy\\0", anger]', "U+0000"),
    ('["joy\\u200b", anger]', "U+200B"),
    ('[" joy", anger]', "starts or ends with whitespace"),
])
def test_labels_a_reader_would_misread_are_refused(tmp_path: Path, labels: str, why: str) -> None:
    path = _write(tmp_path, _task(labels=labels), "emotion.yaml")
    code, out, _ = _dynadesk(tmp_path / "ws", "tasks", "add", str(path))
    assert code != 0 and why in _one_line_refusal(out), out
    code, out, _ = _server(tmp_path / "board.db", "tasks", "add", str(path))
    assert code != 0 and why in _one_line_refusal(out), out


def test_titles_and_descriptions_hold_no_bidi_control() -> None:
    with pytest.raises(ConfigError, match=r"field 'title' holds the bidi control U\+202E"):
        parse_task_text(_task(title='"Emo\\u202etion"'), "t.yaml")
    ok = parse_task_text(_task() + "description: |\n  two\n  lines\n", "t.yaml")
    assert ok.description == "two\nlines"
