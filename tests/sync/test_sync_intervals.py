"""Bootstrap intervals in a bundle: signed, schema-checked, optional (older bundles still verify)."""

from __future__ import annotations

import json

import pytest
from support.sync import make_run, workspace_with_key

from dynadesk.canonical import canonical_bytes
from dynadesk.errors import BundleFormatError, SignatureError
from dynadesk.scoring import bootstrap as B
from dynadesk.store.evaluations import RunChange
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format.envelope import parse_bundle, verify_bundle

TASK = {"metric": "macro_f1", "output_kind": "label", "labels": ["negative", "neutral", "positive"]}


@pytest.fixture
def made(tmp_path):
    ws, store = workspace_with_key(tmp_path / "ws")
    ev = make_run(store, ws.runs_dir)
    yield ws, store, ev
    store.close()


def _with_intervals(store, ev: int) -> dict:
    rec = store.evaluations.get(ev)
    intervals, outcomes = {}, {}
    for name in rec.datasets:
        golds = [ex["label"] for ex in store.datasets.examples(name)]
        o = B.outcomes(TASK, "macro_f1", ["positive"] * len(golds), golds)
        intervals[name] = B.interval(o, B.derive_seed(rec.predictions_digest, name, "macro_f1"))
        outcomes[name] = B.encode_outcomes(o, "sha256:" + "0" * 64)
    store.evaluations.update(ev, RunChange(profile={**rec.profile, "intervals": intervals, "outcomes": outcomes}))
    return intervals


def _resealed(raw: bytes, payload: dict) -> bytes:
    doc = json.loads(raw)
    doc["payload"] = payload
    return canonical_bytes(doc)


def test_a_run_without_intervals_bundles_as_before(made):
    ws, store, ev = made
    b = create_bundle(ws, store, ev)
    assert b.payload.intervals is None and "intervals" not in b.payload.to_json()
    verify_bundle(parse_bundle(b.raw))


def test_intervals_are_signed_and_tampering_breaks_the_signature(made):
    ws, store, ev = made
    stored = _with_intervals(store, ev)
    b = create_bundle(ws, store, ev)
    verify_bundle(parse_bundle(b.raw))
    signed = {iv["dataset"]: iv for iv in b.payload.to_json()["intervals"]}
    assert set(signed) == set(stored)
    for name, iv in signed.items():
        assert float(iv["low"]).hex() == float(stored[name]["low"]).hex() and iv["seed"] == stored[name]["seed"]
    payload = b.payload.to_json()
    payload["intervals"][0]["high"] = payload["intervals"][0]["low"]
    with pytest.raises(SignatureError):
        verify_bundle(parse_bundle(_resealed(b.raw, payload)))


@pytest.mark.parametrize("mutate, message", [
    (lambda ivs: ivs[0].update(low=ivs[0]["high"] + 1), r"intervals\[0\]: low .* is above high"),
    (lambda ivs: ivs[0].update(dataset="elsewhere"), r"intervals\[0\].dataset"),
    (lambda ivs: ivs[0].update(seed="xyz"), r"intervals\[0\].seed"),
    (lambda ivs: ivs[0].update(level=120), r"intervals\[0\].level"),
    (lambda ivs: ivs[0].update(extra=1), "unknown field"),
    (lambda ivs: ivs.append(dict(ivs[0])), "at most one interval per dataset"),
    (lambda ivs: ivs[1].update(dataset=ivs[0]["dataset"]), r"intervals\[1\].dataset.*once"),
])
def test_malformed_intervals_name_the_field(made, mutate, message):
    ws, store, ev = made
    _with_intervals(store, ev)
    b = create_bundle(ws, store, ev)
    payload = b.payload.to_json()
    mutate(payload["intervals"])
    with pytest.raises(BundleFormatError, match=message):
        parse_bundle(_resealed(b.raw, payload))


def test_outcomes_are_signed_and_decode_to_what_was_stored(made):
    ws, store, ev = made
    _with_intervals(store, ev)
    b = create_bundle(ws, store, ev)
    verify_bundle(parse_bundle(b.raw))
    rec = store.evaluations.get(ev)
    for o in b.payload.to_json()["outcomes"]:
        back = B.decode_outcomes(o)
        again = B.decode_outcomes(rec.profile["outcomes"][o["dataset"]])
        assert back.size == o["n"] and (back.pred == again.pred).all() and (back.gold == again.gold).all()


@pytest.mark.parametrize("mutate, message", [
    (lambda os: os[0].update(n=os[0]["n"] + 1), r"outcomes\[0\].n: is \d+, but dataset"),
    (lambda os: os[0].update(data=os[0]["data"][:-4]), r"outcomes\[0\].data: must be base64 of"),
    (lambda os: os[0].update(data="!" * len(os[0]["data"])), r"outcomes\[0\].data"),
    (lambda os: os[0].update(encoding="zip"), r"outcomes\[0\].encoding"),
    (lambda os: os[0].update(allowed=[1]), r"outcomes\[0\].allowed\[0\]"),
    (lambda os: os[0].pop("data_sha256"), "missing field"),
])
def test_malformed_outcomes_name_the_field(made, mutate, message):
    ws, store, ev = made
    _with_intervals(store, ev)
    b = create_bundle(ws, store, ev)
    payload = b.payload.to_json()
    mutate(payload["outcomes"])
    with pytest.raises(BundleFormatError, match=message):
        parse_bundle(_resealed(b.raw, payload))
