"""CLI errors a person can act on: a read-only workspace in one line, a re-formatted bundle named as such with
the way back, and training that refuses a test split or the dev set as training data unless asked."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from support import REPO

from dynadesk.data import import_file
from dynadesk.oserrors import write_problem

ASSETS = REPO / "tests" / "assets"


def _cli(home: Path, *args: str, user: int | None = None) -> subprocess.CompletedProcess[str]:
    prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user is not None else []
    return subprocess.run([*prefix, sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                           *args], capture_output=True, text=True, check=False, cwd=REPO)


def test_a_read_only_workspace_is_one_line_naming_it_and_the_fix():
    tmp_path = Path(tempfile.mkdtemp(prefix="dynadesk-ro-"))  # under /tmp: an ordinary account can reach it
    try:
        _read_only_case(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _read_only_case(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    assert _cli(home, "tasks", "list").returncode == 0  # the workspace and its database exist
    data = tmp_path / "d.csv"
    data.write_text("id,statement,label\ns1,good,positive\n", encoding="utf-8")
    user = None
    if os.geteuid() == 0:  # root writes anything: the workspace belongs to an ordinary account instead
        user = 65534
        for path in [tmp_path, *tmp_path.rglob("*")]:
            os.chown(path, user, user)
    for path in [p for p in home.rglob("*") if p.is_file()]:
        path.chmod(0o400)
    try:
        res = _cli(home, "data", "import", str(data), "--task", "sentiment", user=user)
    finally:
        for path in [p for p in home.rglob("*") if p.is_file()]:
            path.chmod(0o600)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"the workspace at {home} is read-only" in lines[0] and f"chmod -R u+w {home}" in lines[0]


def test_write_problem_names_a_read_only_database_and_leaves_other_errors_alone(tmp_path):
    db = tmp_path / "x.db"
    sqlite3.connect(db).execute("CREATE TABLE t (a)").connection.commit()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute("INSERT INTO t VALUES (1)")
    except sqlite3.OperationalError as exc:
        line = write_problem(exc, tmp_path)
    assert line is not None and "is read-only" in line and "--home" in line
    assert write_problem(sqlite3.OperationalError("no such table: t")) is None
    assert write_problem(ValueError("x")) is None


def test_a_pretty_printed_bundle_is_named_re_formatted_and_restored_by_bundle_canonical(home, tmp_path):
    pretty = tmp_path / "bundle.json"
    pretty.write_text(json.dumps(json.loads((ASSETS / "bundle_v1.json").read_bytes()), indent=2), encoding="utf-8")
    res = _cli(home, "bundle", "verify", str(pretty))
    assert res.returncode == 1
    assert "not in RFC 8785 canonical form" in res.stderr and "re-formatted after it was written" in res.stderr
    assert "dynadesk bundle canonical" in res.stderr
    out = tmp_path / "restored.json"
    res = _cli(home, "bundle", "canonical", str(pretty), "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert out.read_bytes() == (ASSETS / "bundle_v1.json").read_bytes().rstrip(b"\n")
    assert _cli(home, "bundle", "verify", str(out)).returncode == 0


def test_training_refuses_a_test_split_and_the_dev_set_as_training_data_unless_asked(home, store, tmp_path):
    rows = "".join(json.dumps({"id": f"s{i}", "statement": f"text {i}", "label": lab}) + "\n"
                   for i, lab in enumerate(["positive", "negative"] * 4))
    src = tmp_path / "rows.jsonl"
    src.write_text(rows, encoding="utf-8")
    for name, split in [("tr", "train"), ("dv", "dev"), ("te", "test")]:
        import_file(store, "sentiment", src, name=name, split=split)
    res = _cli(home, "models", "train", "m1", "--task", "sentiment", "--data", "te", "--dev", "dv")
    assert res.returncode == 1 and "dataset 'te' is a test split and cannot be training data" in res.stderr
    assert "--allow-test-data" in res.stderr
    res = _cli(home, "models", "train", "m1", "--task", "sentiment", "--data", "tr", "--dev", "te")
    assert res.returncode == 1 and "'te' is a test split and cannot be the dev set" in res.stderr
    res = _cli(home, "models", "train", "m1", "--task", "sentiment", "--data", "tr", "--dev", "tr")
    assert res.returncode == 1 and "'tr' is both training data and the dev set" in res.stderr
    assert not store.models.exists("m1")


def test_a_refused_output_path_outside_the_workspace_is_named_with_its_own_fix(tmp_path):
    home = tmp_path / "ws"
    exc = PermissionError(13, "Permission denied", str(tmp_path / "out" / "x.jsonl"))
    line = write_problem(exc, home)
    assert line is not None and f"cannot write {tmp_path / 'out' / 'x.jsonl'}" in line
    assert "choose a path you may write" in line and "chmod -R u+w" not in line
    inside = write_problem(PermissionError(13, "Permission denied", str(home / "dynadesk.db")), home)
    assert inside is not None and f"chmod -R u+w {home}" in inside
