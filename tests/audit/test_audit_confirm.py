"""A timed dispute is confirmed by a second measurement before it is signed (dynadesk/audit/confirm.py).

Real parts: a tiny model evaluated and signed here, the audit's re-run and its re-measurement through the local
runner. The unlucky first measurement (slowed by what the noise check cannot see) is made by writing slower
figures into the stored re-run; the second measurement is real, so each verdict is checked against what it gave.
"""

from __future__ import annotations

import copy

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.eval import signed_local_run

from dynadesk.audit.audit import AuditOptions, audit_bundle
from dynadesk.audit.compare import TIMED, compare_results, metric_field, results_from_record
from dynadesk.audit.confirm import confirm_timed, timed_disputes
from dynadesk.audit.report import DIFFERS, WITHIN, AuditReport
from dynadesk.audit.tolerances import tolerance_for, within
from dynadesk.store.evaluations import MetricValue, RunChange
from dynadesk.sync.format import keys as K
from dynadesk.sync.format.envelope import parse_bundle, sign_payload


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    ws, store, run, bundle, path = signed_local_run(tmp_path_factory.mktemp("confirm"), min_seconds=0.2)
    yield ws, store, run, bundle
    store.close()


def _forged(payload: dict, factor: float):
    """The bundle re-signed with its run-level throughput claim ``factor`` times higher (the forger's edit)."""
    p = copy.deepcopy(payload)
    next(m for m in p["metrics"] if m["metric"] == "throughput" and not m["dataset"])["value"] *= factor
    key = Ed25519PrivateKey.generate()
    p["submitter"]["key_fingerprint"] = K.fingerprint(K.public_raw(key))
    return parse_bundle(sign_payload(p, key).raw, "forged")


def _slowed(store, record_id: int, factor: float) -> None:
    """The stored re-run as an unlucky first measurement: every timed figure ``factor`` times worse, and its
    summary quiet (what the noise check could not see)."""
    record = store.evaluations.get(record_id)
    values = [MetricValue(m.dataset, m.metric, m.value * factor if m.unit == "ms" else m.value / factor, m.unit,
                          m.deterministic) if m.metric in TIMED else m for m in record.metrics]
    env = dict(record.environment or {})
    env["measurement"] = {**(env.get("measurement") or {}), "noisy": False, "noisy_measurements": []}
    store.evaluations.set_metrics(record_id, values, RunChange(environment=env))


def test_a_slowed_first_measurement_is_measured_again_and_only_what_both_contradict_stays_disputed(made):
    ws, store, run, bundle = made
    forged = _forged(bundle.payload.to_json(), 1000)
    first = audit_bundle(store, ws, forged.raw, AuditOptions(rerun=True, runner="local"))
    if not first.not_comparable:  # a quiet re-run: the 1000x claim was measured again and confirmed, unless that
        # second measurement was noisy (a loaded machine), which then says it can neither confirm nor clear
        assert "metrics[(run)].throughput" in [c.field for c in first.measured_failures]
        assert any("confirmed by run" in c.note for c in first.checks if c.field == "metrics[(run)].throughput") \
            or any("cannot confirm or clear" in n for n in first.notes), first.notes
    _slowed(store, first.rerun_id, 20)
    p = forged.payload
    report = AuditReport(forged.id, p.task, p.model.name)
    report.add(*compare_results(p, results_from_record(store.evaluations.get(first.rerun_id))))
    disputed = timed_disputes(p, report.checks)
    assert len(disputed) >= 4 and all(f.split(".")[-1] in TIMED for f in disputed)  # every timed claim, 20x off
    before = {r.id for r in store.evaluations.list()}

    confirm_timed(store, ws, p, report, store.evaluations.get(first.rerun_id))

    (second_id,) = {r.id for r in store.evaluations.list()} - before
    second = store.evaluations.get(second_id)
    assert second.status == "succeeded" and second.remeasure_of == first.rerun_id and second.purpose == "audit"
    figures = {metric_field(m.dataset, m.metric): m.value for m in second.metrics}
    claims = {metric_field(m.dataset, m.metric): m for m in p.metrics}
    quiet = not (second.environment or {}).get("measurement", {}).get("noisy")
    checks = {c.field: c for c in report.checks}
    for name in disputed:
        c = checks[name]
        held = within(figures[name], claims[name].value, tolerance_for(p, claims[name].metric)[0])
        if quiet and held:  # cleared: within the second measurement, and the note names both
            assert c.verdict == WITHIN and f"run {first.rerun_id}'s" in c.note and f"run {second_id}'s" in c.note
        else:
            assert c.verdict == DIFFERS, (name, c)
    assert checks["metrics[(run)].throughput"].verdict == DIFFERS  # 1000x: outside both
    if quiet:
        assert "confirmed by run" in checks["metrics[(run)].throughput"].note
        assert any(c.verdict == WITHIN for n, c in checks.items() if n in disputed), report.notes
    assert any(f"(run {second_id})" in n for n in report.notes), report.notes


def test_a_confirmation_that_cannot_be_made_clears_nothing(made):
    """The next attacker's hope: make the auditor's confirmation fail. One that cannot be made leaves every dispute."""
    ws, store, run, bundle = made
    forged = _forged(bundle.payload.to_json(), 1000)
    first = audit_bundle(store, ws, forged.raw, AuditOptions(rerun=True, runner="local"))
    _slowed(store, first.rerun_id, 20)
    record = store.evaluations.get(first.rerun_id)
    report = AuditReport(forged.id, forged.payload.task, forged.payload.model.name)
    report.add(*compare_results(forged.payload, results_from_record(record)))
    store.evaluations.update(record.id, RunChange(run_dir="/nonexistent/run"))  # no folder to measure again from
    confirm_timed(store, ws, forged.payload, report, store.evaluations.get(record.id))
    assert [c.verdict for c in report.checks if c.field == "metrics[(run)].throughput"] == [DIFFERS]
    assert any("could not be made" in n and "stay disputed" in n for n in report.notes), report.notes
