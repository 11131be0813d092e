"""Attacks on annotation packs: hand edits with the digest recomputed, and lies signed by a trusted peer."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from support.annotation import make_example, open_store, register, two_machines

from dynadesk import annotation as ann
from dynadesk.errors import AnnotationError, DynaDeskError, SignatureError, ValidationError


@pytest.fixture
def two(tmp_path, models):
    """Machine A and machine B with the same model and round; B trusts A's pack key."""
    with two_machines(tmp_path, models, mutual=False) as stores:
        yield stores


def _counts(st) -> tuple[int, int, int]:
    return tuple(st.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]  # type: ignore[return-value]
                 for t in ("annotated_examples", "validations", "annotators"))


def _forge(body: dict, ex_uid: str) -> None:
    """What an attacker edits: the model got it right, but now it is fooled and verified by invented people."""
    body["examples"][0]["fooled"] = True
    for name in ("sock1", "sock2", "sock3"):
        body["annotators"].append({"name": name, "role": "annotator", "created_at": "2026-01-01T00:00:00Z"})
        body["validations"].append({"uid": uuid.uuid4().hex, "example_uid": ex_uid, "annotator": name,
                                    "verdict": "correct", "label": None, "reason": "", "origin": "ws-x",
                                    "created_at": "2026-01-01T00:00:00Z"})
    body["annotators"].append({"name": "boss", "role": "owner", "created_at": "2026-01-01T00:00:00Z"})


def test_hand_edited_pack_with_recomputed_digest_is_refused(two, tmp_path: Path) -> None:
    from dynadesk.canonical import digest

    a, b = two
    ex = make_example(a, "amy", "the model got this one right", fooled=False)
    ann.pack(a, tmp_path / "a.pack")
    body = json.loads((tmp_path / "a.pack").read_text())
    body.pop("content_digest", None)
    _forge(body, ex.uid)
    body["content_digest"] = digest(body)  # the old, unkeyed digest: anyone can recompute it
    (tmp_path / "forged.pack").write_text(json.dumps(body))
    before = _counts(b)
    with pytest.raises(DynaDeskError, match="signature"):
        ann.merge(b, tmp_path / "forged.pack")
    assert _counts(b) == before
    assert "boss" not in {x.name for x in ann.list_annotators(b)}
    assert ann.verify(b).ok


def test_pack_from_an_untrusted_key_is_refused_and_names_the_key(two, tmp_path: Path, models) -> None:
    _, b = two
    c = open_store(tmp_path / "c")
    ann.add_annotator(c, "cat")
    register(c, models, "sentiment", "sentiment")
    ann.new_round(c, "sentiment", ["tiny-sentiment"])
    make_example(c, "cat", "from a stranger", fooled=True)
    ann.pack(c, tmp_path / "c.pack")
    before = _counts(b)
    with pytest.raises(AnnotationError, match="not trusted.*annotate trust"):
        ann.merge(b, tmp_path / "c.pack")
    assert _counts(b) == before
    c.close()


def test_trusted_peer_cannot_lie_about_fooled_grant_roles_or_edit_responses(two, tmp_path: Path) -> None:
    """Even a validly signed pack is checked record by record; each refusal is reported."""
    a, b = two
    right = make_example(a, "amy", "the model got this right", fooled=False)
    flipped = make_example(a, "amy", "the model also got this right", fooled=False)
    honest = make_example(a, "abe", "a genuine fooling example", fooled=True)
    ann.validate(a, honest.uid, "amy", "correct")
    ann.pack(a, tmp_path / "a.pack")
    body = ann.read_pack_unverified(tmp_path / "a.pack")
    by_uid = {e["uid"]: e for e in body["examples"]}
    by_uid[right.uid]["fooled"] = True  # claims fooled although output == target
    # edits the recorded model response so that "fooled" looks right by the task rule
    other = next(lab for lab in ("negative", "neutral", "positive") if lab != by_uid[flipped.uid]["target"])
    by_uid[flipped.uid]["model_output"]["label"] = other
    by_uid[flipped.uid]["fooled"] = True
    for person in body["annotators"]:
        if person["name"] == "abe":
            person["role"] = "owner"
    ann.write_signed_pack(a, body, tmp_path / "lying.pack")

    rep = ann.merge(b, tmp_path / "lying.pack")
    assert rep.examples_added == 1 and rep.validations_added == 1
    refused = "\n".join(rep.refused)
    assert right.uid in refused and "fooled" in refused
    assert flipped.uid in refused and "model" in refused
    assert any("abe" in c and "owner" in c for c in rep.refused)
    assert {x.name: x.role for x in ann.list_annotators(b)}["abe"] == "annotator"
    # abe and amy are not known on B: the honest example is merged, held until B's owner accepts it
    stored = {ident for kind, ident, _ in b.annotation.held_records() if kind == "example"}
    assert stored == {honest.uid} and b.annotation.examples("sentiment") == []
    assert ann.verify(b).ok


def test_merge_cli_reports_refusals_and_trust_command(two, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dynadesk.cli import cli

    a, _ = two
    ex = make_example(a, "amy", "cli check", fooled=False)
    ann.pack(a, tmp_path / "a.pack")
    body = ann.read_pack_unverified(tmp_path / "a.pack")
    body["examples"][0]["fooled"] = True
    ann.write_signed_pack(a, body, tmp_path / "lie.pack")
    home_c = tmp_path / "c"
    runner = CliRunner()
    res = runner.invoke(cli, ["--home", str(home_c), "annotate", "trust", str(tmp_path / "a.pub")])
    assert res.exit_code == 0, res.output
    assert "sha256:" in res.output
    res = runner.invoke(cli, ["--home", str(home_c), "annotate", "merge", str(tmp_path / "lie.pack")])
    assert res.exit_code == 0, res.output
    assert "refused" in res.output and ex.uid in res.output


def test_unsigned_old_packs_are_refused_and_own_packs_need_no_trust(two, tmp_path: Path) -> None:
    from dynadesk.errors import ValidationError

    a, b = two
    make_example(a, "amy", "my own work", fooled=True)
    ann.pack(a, tmp_path / "a.pack")
    rep = ann.merge(a, tmp_path / "a.pack")  # this workspace's own key is always trusted
    assert (rep.examples_added, rep.examples_present, rep.refused) == (0, 1, [])
    body = ann.read_pack_unverified(tmp_path / "a.pack")
    for key in ("signer", "signature"):
        body.pop(key)
    body["version"] = 1
    (tmp_path / "v1.pack").write_text(json.dumps(body))
    with pytest.raises(ValidationError, match="unsigned version 1 pack"):
        ann.merge(b, tmp_path / "v1.pack")
    body["version"] = 2
    (tmp_path / "nosig.pack").write_text(json.dumps(body))
    with pytest.raises(SignatureError, match="no Ed25519 signature"):
        ann.merge(b, tmp_path / "nosig.pack")


def test_a_signed_pack_entry_that_is_not_an_object_is_named_in_every_section(two, tmp_path: Path) -> None:
    """A trusted peer's pack whose lists hold a bare string, number or list where a record belongs is refused with
    each such entry named by its JSON path (one checker walks every section), and nothing is merged."""
    a, b = two
    ex = make_example(a, "amy", "an example to carry", fooled=True)
    ann.validate(a, ex.uid, "abe", "correct")
    ann.pack(a, tmp_path / "a.pack")
    before = _counts(b)

    body = ann.read_pack_unverified(tmp_path / "a.pack")
    body["annotators"].append("mallory")
    body["rounds"].insert(0, 7)
    ann.write_signed_pack(a, body, tmp_path / "heads.pack")
    with pytest.raises(ValidationError, match="nothing was merged") as refused:
        ann.merge(b, tmp_path / "heads.pack")
    assert f"annotators[{len(body['annotators']) - 1}]: expected an object" in refused.value.problems
    assert "rounds[0]: expected an object" in refused.value.problems

    for section, entry, where in (("examples", ["not", "a", "record"], "examples[1]"), ("validations", None,
                                                                                    "validations[1]")):
        body = ann.read_pack_unverified(tmp_path / "a.pack")
        body[section].append(entry)
        ann.write_signed_pack(a, body, tmp_path / f"{section}.pack")
        with pytest.raises(ValidationError, match="nothing was merged") as refused:
            ann.merge(b, tmp_path / f"{section}.pack")
        assert refused.value.problems == [f"{where}: expected an object"]
    assert _counts(b) == before
