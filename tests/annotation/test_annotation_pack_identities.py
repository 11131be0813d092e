"""Attacks on identities carried by packs: a trusted peer's votes borrowing a local owner's name,
and votes by invented people on a round target the receiver never had (issue 37, item 5)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from support.annotation import make_example, two_machines

from dynadesk import annotation as ann
from dynadesk.errors import AnnotationError, ValidationError


@pytest.fixture
def two(tmp_path, models):
    """Machine A and machine B with the same model and round; B trusts A's pack key."""
    with two_machines(tmp_path, models, mutual=False) as stores:
        yield stores


SOCKS = ("sock1", "sock2", "sock3")


def _vote(ex_uid: str, who: str, verdict: str = "correct") -> dict:
    return {"uid": uuid.uuid4().hex, "example_uid": ex_uid, "annotator": who, "verdict": verdict, "label": None,
            "reason": "", "origin": "ws-forged", "created_at": "2026-01-01T00:00:00Z"}


def _person(name: str, role: str = "annotator") -> dict:
    return {"name": name, "role": role, "created_at": "2026-01-01T00:00:00Z"}


def test_pack_votes_under_a_local_owners_name_do_not_count_as_the_owners(two, tmp_path: Path) -> None:
    """Finding 1: 'correct' votes in a trusted pack, named after B's owner, verified A's examples on B."""
    a, b = two
    ann.add_annotator(b, "boss", "owner")
    ann.add_annotator(b, "amy")  # the author is known here: only the owner's name is borrowed
    fooled = [make_example(a, "amy", f"fooling attempt number {i}", fooled=True) for i in range(4)]
    ann.pack(a, tmp_path / "a.pack")
    body = ann.read_pack_unverified(tmp_path / "a.pack")
    body["annotators"].append(_person("boss", "annotator"))  # nothing claims a role; the name alone is B's owner
    body["validations"] += [_vote(ex.uid, "boss") for ex in fooled]
    ann.write_signed_pack(a, body, tmp_path / "borrowed.pack")

    rep = ann.merge(b, tmp_path / "borrowed.pack")
    assert rep.examples_added == 4
    stats = ann.round_stats(b, "sentiment")
    assert (stats.collected, stats.fooled, stats.verified_fooled, stats.vmer) == (4, 4, 0, 0.0)
    with pytest.raises(ValidationError, match="no examples with status 'verified-fooled'"):
        ann.export_examples(b, "sentiment", status="verified-fooled")
    votes = [v for ex in b.annotation.examples("sentiment") for v in ex.validations]
    assert len(votes) == 4 and {v.role for v in votes} == {"annotator"}
    assert any("boss" in note and "owner" in note for note in rep.conflicts + rep.refused)

    # boss's pack vote still counts as one plain vote: with two local votes the example is verified
    ann.validate(b, fooled[0].uid, "bob", "correct")
    ann.validate(b, fooled[0].uid, "bea", "correct")
    assert ann.round_stats(b, "sentiment").verified_fooled == 1

    # once B's owner binds A's key to boss, votes under that key carry boss's role here
    ann.trust_key(b, tmp_path / "a.pub", person="boss")
    assert ann.round_stats(b, "sentiment").verified_fooled == 4


def test_invented_people_and_an_unknown_target_are_held_until_the_owner_accepts(two, tmp_path: Path) -> None:
    """Finding 2: invented voters and a target model B never had made B's round 9/9 verified fooled."""
    a, b = two
    ann.add_annotator(b, "boss", "owner")
    ann.add_annotator(b, "amy")
    real = make_example(a, "amy", "a real fooling example", fooled=True)
    ann.pack(a, tmp_path / "a.pack")
    body = ann.read_pack_unverified(tmp_path / "a.pack")
    body["rounds"][0]["models"].append({"name": "weak", "digest": "sha256:" + "0" * 64})
    template = body["examples"][0]
    for i in range(9):
        uid = uuid.uuid4().hex
        target = "positive"
        body["examples"].append(template | {"uid": uid, "annotator": "ghost", "inputs": {"statement": f"made up {i}"},
                                            "target": target, "model_name": "weak",
                                            "model_digest": "sha256:" + "0" * 64,
                                            "model_output": {"label": "negative"}, "fooled": True})
        body["validations"] += [_vote(uid, sock) for sock in SOCKS]
    body["validations"] += [_vote(real.uid, sock) for sock in SOCKS]
    body["annotators"] += [_person("ghost")] + [_person(sock) for sock in SOCKS]
    ann.write_signed_pack(a, body, tmp_path / "invented.pack")

    rep = ann.merge(b, tmp_path / "invented.pack")
    assert rep.examples_added == 10 and not rep.refused
    stats = ann.round_stats(b, "sentiment")
    assert (stats.collected, stats.fooled, stats.verified_fooled) == (1, 1, 0)
    assert rep.examples_held == 9 and rep.validations_held == 30
    assert stats.held == 9
    with pytest.raises(ValidationError, match="no examples with status 'verified-fooled'"):
        ann.export_examples(b, "sentiment", status="verified-fooled")
    report = ann.verify(b)
    assert report.ok  # nothing was edited; the held records are listed, not failures
    held = "\n".join(report.held)
    assert len(report.held) == 40
    assert "ghost" in held and "sock1" in held and "'weak'" in held
    assert "sock1" in "\n".join(rep.held)

    with pytest.raises(AnnotationError, match="owner"):
        ann.accept_held(b, "bob")
    accepted = ann.accept_held(b, "boss")
    assert accepted == {"examples": 9, "validations": 30}
    stats = ann.round_stats(b, "sentiment")
    assert (stats.collected, stats.fooled, stats.verified_fooled, stats.held) == (10, 10, 10, 0)
    assert ann.verify(b).held == []


def test_verify_and_accept_commands_report_held_records(two, tmp_path: Path) -> None:
    """A real example answered by a target B never had: held, listed by 'annotate verify', accepted by an owner."""
    from click.testing import CliRunner

    from dynadesk.cli import cli

    a, b = two
    ann.add_annotator(b, "boss", "owner")
    ann.add_annotator(b, "amy")
    make_example(a, "amy", "an example for the cli", fooled=True)
    ann.pack(a, tmp_path / "a.pack")
    body = ann.read_pack_unverified(tmp_path / "a.pack")
    body["rounds"][0]["models"] = [{"name": "weak", "digest": "sha256:" + "1" * 64}]
    body["examples"][0] |= {"model_name": "weak", "model_digest": "sha256:" + "1" * 64}
    ann.write_signed_pack(a, body, tmp_path / "weak.pack")
    home = str(Path(b.path).parent)
    runner = CliRunner()
    res = runner.invoke(cli, ["--home", home, "annotate", "merge", str(tmp_path / "weak.pack")])
    assert res.exit_code == 0, res.output
    assert "held: 1 examples" in res.output and "'weak'" in res.output
    res = runner.invoke(cli, ["--home", home, "annotate", "verify"])
    assert res.exit_code == 0, res.output
    assert "HELD example" in res.output and "HELD target" in res.output
    targets = [m.name for m in ann.list_rounds(b, "sentiment")[0].models]
    assert targets == ["tiny-sentiment"]  # 'weak' is not a target until accepted
    res = runner.invoke(cli, ["--home", home, "annotate", "accept", "--as", "bob"])
    assert res.exit_code != 0 and "not an owner" in str(res.exception)
    res = runner.invoke(cli, ["--home", home, "annotate", "accept", "--as", "boss"])
    assert res.exit_code == 0 and "accepted 1 held examples" in res.output, res.output
    res = runner.invoke(cli, ["--home", home, "annotate", "verify"])
    assert "HELD" not in res.output
    assert [m.name for m in ann.list_rounds(b, "sentiment")[0].models] == ["tiny-sentiment", "weak"]
    assert ann.round_stats(b, "sentiment").collected == 1
