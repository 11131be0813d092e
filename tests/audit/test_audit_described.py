"""An audit report whose every row describes the run that was actually made: a local re-run of a bundle that
says Docker names both runners, both sandboxes and both hardware classes, and the headline (CLI, JSON and the
app) names every field that differs, failing or not.

Real workspace, the tiny model, the real worker through the local runner, bundles signed with the workspace key.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.eval import signed_local_run
from support.sync import signed_payload

from dynadesk.audit.audit import AuditOptions, audit_bundle
from dynadesk.audit.report import DIFFERS, IDENTICAL
from dynadesk.cli import cli


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    ws, store, run, bundle, path = signed_local_run(tmp_path_factory.mktemp("described"))
    yield ws, store, run, bundle, path
    store.close()


def _as_docker_elsewhere(bundle, ws) -> bytes:
    """The same run, signed as a Docker (sandboxed) run on a 64-core machine with another torch."""
    payload = bundle.payload.to_json()
    payload["runner"] = {"kind": "docker", "sandboxed": True}
    payload["request"]["runner"] = "docker"
    env = payload["environment"]
    env["torch"] = "0.0.1-elsewhere"
    if isinstance(env.get("libraries"), dict):
        env["libraries"]["torch"] = "0.0.1-elsewhere"
    env["hardware"]["cores"] = 64  # the hardware class's own record (evaluator/environment.py)
    return signed_payload(payload, ws).raw


@pytest.fixture(scope="module")
def elsewhere(made, tmp_path_factory):
    ws, store, run, bundle, path = made
    raw = _as_docker_elsewhere(bundle, ws)
    out = tmp_path_factory.mktemp("elsewhere") / "bundle.json"
    out.write_bytes(raw)
    return audit_bundle(store, ws, raw, AuditOptions(rerun=True, runner="local")), out


def test_a_local_rerun_of_a_docker_bundle_names_both_runners_and_sandboxes(elsewhere):
    report, _ = elsewhere
    runner = report.get("rerun.runner")
    assert runner.verdict == DIFFERS and (runner.expected, runner.actual) == ("docker", "local")
    assert "local runner" in runner.note and "docker" in runner.note and not runner.fails
    sandbox = report.get("rerun.sandboxed")
    assert sandbox.verdict == DIFFERS and (sandbox.expected, sandbox.actual) == (True, False)
    assert "bundle: docker (sandboxed)" in sandbox.note and "local (not sandboxed)" in sandbox.note
    claim = report.get("runner")  # the bundle's own claim, said as such: not the re-run
    assert claim.verdict == IDENTICAL and claim.note.startswith("the bundle's run: docker (sandboxed)")


def test_the_hardware_class_row_agrees_with_the_headline(elsewhere):
    report, _ = elsewhere
    cls = report.get("environment.hardware_class")
    assert report.not_comparable.startswith("another hardware class")
    assert cls.verdict == DIFFERS and "64 cores" in cls.note and cls.expected != cls.actual
    # the machine/CPU/threads fields are the same here: the row says which fields, never "same class"
    hw = report.get("environment.hardware")
    assert "same class" not in hw.note and (hw.verdict == DIFFERS or hw.note.startswith("same machine"))


def test_every_differing_field_is_named_in_the_headline_cli_json_and_app(elsewhere, made, require_qt):
    report, path = elsewhere
    ws = made[0]
    differing = {c.field for c in report.checks if c.verdict == DIFFERS}
    assert {"rerun.runner", "rerun.sandboxed", "environment.hardware_class", "environment.software"} <= differing
    head = report.verdict_lines()[0]
    assert all(f in head for f in differing), (head, differing)
    res = CliRunner().invoke(cli, ["--home", str(ws.home), "audit", str(path), "--against", str(report.rerun_id)])
    verdict = res.output.split("VERDICT\n", 1)[1].splitlines()[0]
    assert all(f in verdict for f in differing), verdict
    assert "the compared run" in verdict and "docker" in verdict and "local" in verdict
    doc = json.loads(CliRunner().invoke(cli, ["--home", str(ws.home), "audit", str(path), "--against",
                                              str(report.rerun_id), "--json"]).output)
    assert set(doc["other_differences"]) | set(doc["failures"]) | set(doc["measured_failures"]) >= differing
    from dynadesk.gui.pages.audit import verdict_headline

    text, colour = verdict_headline(report)
    assert all(f in text for f in differing) and colour != "#1b5e20", text  # never a plain green pass


def test_a_rerun_as_the_bundle_was_made_says_so(made):
    ws, store, run, bundle, path = made
    report = audit_bundle(store, ws, bundle.raw, AuditOptions(rerun=True, runner="local"))
    for name in ("rerun.runner", "rerun.sandboxed", "environment.hardware_class"):
        assert report.get(name).verdict == IDENTICAL, report.get(name)
    assert "local (not sandboxed)" in report.get("rerun.sandboxed").note
    assert "rerun." not in report.verdict_lines()[0]
