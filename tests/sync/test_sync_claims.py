"""Which bundles an attestation speaks for (sync/rules/claims.py): the pure rule the server, the model page, the
reference set and the snapshot verifier share; each case where a badge or a dispute shows, and where it does not."""

from __future__ import annotations

import copy

from dynadesk.sync.rules.claims import ClaimFacts, attach, claim_key, is_reproduced

BASE = {"created_at": "2026-01-01T00:00:00.000Z", "task": "sentiment", "model": {"name": "m", "digest": "sha256:a"},
        "metrics": [{"dataset": "", "metric": "perf", "value": 70.0}], "environment": {"cpu": "x"},
        "predictions": {"digest": "sha256:p"}, "submitter": {"key_fingerprint": "sha256:k"}}


def facts(bid: str, party: str = "k", name: str = "m", model: str = "a", preds: str = "p", claim: str = "c"):
    return ClaimFacts.of(bid, party, None, name, model, preds, claim)


def att(verdict: str, seq: int, auditor: str = "X") -> dict:
    return {"verdict": verdict, "auditor_fingerprint": auditor, "log_seq": seq}


def test_the_claim_key_is_every_signed_field_but_the_time():
    later = dict(copy.deepcopy(BASE), created_at="2027-01-01T00:00:00.000Z")
    assert claim_key(later) == claim_key(BASE)
    for change in (lambda p: p["metrics"][0].update(value=99.0), lambda p: p["environment"].update(cpu="y"),
                   lambda p: p["model"].update(name="n"), lambda p: p["predictions"].update(digest="sha256:q")):
        other = copy.deepcopy(BASE)
        change(other)
        assert claim_key(other) != claim_key(BASE)


def test_a_badge_shows_on_the_exact_claim_only():
    made = facts("b1")
    found = attach([facts("b2"), facts("b3", claim="other"), facts("b4", claim="")], [(made, att("reproduced", 1))])
    assert set(found) == {"b2"} and is_reproduced({"attestations": found["b2"]})
    assert not is_reproduced({"attestations": found.get("b3", [])})
    assert attach([facts("b1", claim="")], [(facts("b1", claim=""), att("reproduced", 1))])["b1"]  # its own id


def test_a_dispute_follows_the_same_partys_model_and_only_its_auditor_lifts_it():
    disputed = (facts("b1"), att("disputed", 1))
    for target in (facts("t", claim="n", preds="q"), facts("t", claim="n", model="z", name="z"),
                   facts("t", claim="n", model="z", preds="q")):
        assert [a["verdict"] for a in attach([target], [disputed])["t"]] == ["disputed"]
    assert attach([facts("t", party="other", claim="n")], [disputed]) == {}
    assert attach([facts("t", claim="n", model="z", name="z", preds="q")], [disputed]) == {}
    t = facts("t", claim="n", preds="q")
    lifted = attach([t], [disputed, (facts("t", claim="n", preds="q"), att("reproduced", 2))])["t"]
    assert is_reproduced({"attestations": lifted})
    other_auditor = attach([t], [disputed, (facts("t", claim="n", preds="q"), att("reproduced", 2, "Y"))])["t"]
    assert not is_reproduced({"attestations": other_auditor})
    earlier = attach([t], [(facts("t", claim="n", preds="q"), att("reproduced", 1)), (facts("b1"), att("disputed", 2))])
    assert not is_reproduced({"attestations": earlier["t"]})
