"""The operator's listing commands (``orgs``, ``keys``, ``keys events``, ``tasks``, ``datasets``, ``snapshot``) print
through one ``echo_listing``: with ``--json`` exactly the records as indented JSON, else an aligned table under its
headers with one line a record, on a real SQLite server database."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dynadesk.sync.server.cli import cli as server_cli
from dynadesk.tasks import load_tasks, task_digest


@pytest.fixture
def admin(tmp_path):
    db = str(tmp_path / "server.db")

    def run(*args: str) -> str:
        done = CliRunner().invoke(server_cli, [*args, "--db", db], catch_exceptions=False)
        assert done.exit_code == 0, done.output
        return done.output

    return run


def table(out: str) -> tuple[list[str], list[list[str]]]:
    head, rule, *rows = out.rstrip("\n").splitlines()
    assert set(rule.replace(" ", "")) == {"-"}
    return head.split(), [r.split() for r in rows]


def test_each_listing_prints_its_records_as_json_or_as_one_table_line_each(admin):
    admin("orgs", "add", "acme-lab")
    admin("orgs", "add", "beta-lab")
    orgs = json.loads(admin("orgs", "list", "--json"))
    assert [o["name"] for o in orgs] == ["acme-lab", "beta-lab"] and all(o["added_at"] for o in orgs)
    headers, rows = table(admin("orgs", "list"))
    assert headers == ["name", "added"] and rows == [[o["name"], o["added_at"]] for o in orgs]

    bundled = load_tasks()
    tasks = json.loads(admin("tasks", "--json"))
    assert tasks == [{"name": t.name, "title": t.title, "metric": t.metric, "digest": task_digest(t)}
                     for t in bundled.values()]
    headers, rows = table(admin("tasks"))
    assert headers == ["task", "title", "metric", "digest"]
    assert [(r[0], r[-2], r[-1]) for r in rows] == [(t["name"], t["metric"], t["digest"]) for t in tasks]

    for args, heads in ((("datasets", "list"), "task name version split size digest"),
                        (("snapshot", "list"), "id log entry task title taken"),
                        (("keys", "list"), "fingerprint name role added revoked")):
        assert json.loads(admin(*args, "--json")) == []
        assert table(admin(*args)) == (heads.split(), [])
