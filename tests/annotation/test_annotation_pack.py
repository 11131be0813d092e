"""Pack / merge between two offline workspaces: stable ids, no duplicates, strict pack checks."""

from __future__ import annotations

import json

import pytest
from support.annotation import make_example, raw_db, two_machines

from dynadesk import annotation as ann
from dynadesk.errors import AnnotationError, ValidationError


@pytest.fixture
def two(tmp_path, models):
    """Machine A and machine B, each with the same model registered and the same round 1."""
    with two_machines(tmp_path, models, mutual=True) as stores:
        yield stores


def _counts(st):
    return (st.db.execute("SELECT COUNT(*) FROM annotated_examples").fetchone()[0],
            st.db.execute("SELECT COUNT(*) FROM validations").fetchone()[0])


def test_pack_merge_both_ways_keeps_everything_once(two, tmp_path):
    a, b = two
    a1 = make_example(a, "amy", "amy wrote this one", fooled=True)
    a2 = make_example(a, "abe", "abe wrote this", fooled=False)
    ann.validate(a, a1.uid, "abe", "correct")
    b1 = make_example(b, "bea", "bea wrote that", fooled=True)
    ann.validate(b, b1.uid, "bob", "correct")
    ann.pack(a, tmp_path / "a.pack")
    ann.pack(b, tmp_path / "b.pack")

    rep = ann.merge(b, tmp_path / "a.pack")
    assert (rep.examples_added, rep.validations_added, rep.annotators_added) == (2, 1, 2)
    assert (rep.examples_held, rep.validations_held) == (2, 1)  # amy and abe are new to B
    assert _counts(b) == (3, 2)
    ann.add_annotator(b, "bo", "owner")
    ann.accept_held(b, "bo")
    # b now validates a's example, which a did not have
    ann.validate(b, a1.uid, "bob", "correct")
    again = ann.merge(b, tmp_path / "a.pack")  # idempotent
    assert (again.examples_added, again.validations_added, again.examples_present) == (0, 0, 2)
    assert _counts(b) == (3, 3)

    ann.merge(a, tmp_path / "b.pack")
    ann.add_annotator(a, "al", "owner")
    ann.accept_held(a, "al")
    ann.pack(b, tmp_path / "b2.pack")
    ann.merge(a, tmp_path / "b2.pack")
    ann.accept_held(a, "al")
    assert _counts(a) == _counts(b) == (3, 3)
    # same ids, same content, both sides' validations, and a's HMACs verify with a's own secret
    ea = {e.uid: e for e in a.annotation.examples("sentiment")}
    eb = {e.uid: e for e in b.annotation.examples("sentiment")}
    assert set(ea) == set(eb) == {a1.uid, a2.uid, b1.uid}
    # each side's votes are its own people's; the other machine's come under its pack identity
    assert sorted(v.annotator for v in ea[a1.uid].validations) == ["abe", _pack_name(b, "bob")]
    assert sorted(v.annotator for v in eb[a1.uid].validations) == [_pack_name(a, "abe"), "bob"]
    assert ea[b1.uid].model_output == b1.model_output and ea[b1.uid].origin == b1.origin
    assert ann.verify(a).ok and ann.verify(b).ok
    assert ann.round_stats(a, "sentiment").collected == 3


def _pack_name(store, name: str) -> str:
    from dynadesk.annotation.signing import own_fingerprint

    return f"{name}@pack:{own_fingerprint(store).removeprefix('sha256:')[:16]}"


def test_the_same_name_on_two_machines_stays_two_identities(two, tmp_path):
    """'zoe' on B is not known to be 'zoe' on A (a pack's key proves the machine, not the person): B's vote is
    merged under zoe@pack:<B's key>, A's zoe keeps her own vote, and the report says where it went."""
    a, b = two
    ex = make_example(a, "amy", "one example", fooled=True)
    ann.pack(a, tmp_path / "a.pack")
    ann.merge(b, tmp_path / "a.pack")
    ann.add_annotator(b, "bo", "owner")
    ann.accept_held(b, "bo")  # amy is new to B
    ann.add_annotator(a, "zoe")
    ann.add_annotator(b, "zoe")
    ann.validate(a, ex.uid, "zoe", "correct")
    ann.validate(b, ex.uid, "zoe", "flagged", reason="typo")  # the same person voted on both machines
    ann.pack(b, tmp_path / "b.pack")
    rep = ann.merge(a, tmp_path / "b.pack")
    assert rep.validations_added == 1 and any(_pack_name(b, "zoe") in c for c in rep.conflicts)
    assert [(v.annotator, v.verdict) for v in a.annotation.get_example(ex.uid).validations] == [
        ("zoe", "correct"), (_pack_name(b, "zoe"), "flagged")]
    assert ann.merge(a, tmp_path / "b.pack").validations_added == 0  # once


def test_edited_examples_are_not_packed_and_conflicts_stop_a_merge(two, tmp_path):
    a, b = two
    ex = make_example(a, "amy", "to be edited", fooled=True)
    ann.pack(a, tmp_path / "a.pack")
    ann.merge(b, tmp_path / "a.pack")
    con = raw_db(tmp_path / "a" / "dynadesk.db")
    con.execute("UPDATE annotated_examples SET target = '\"negative\"' WHERE uid = ?", [ex.uid])
    con.commit()
    con.close()
    with pytest.raises(AnnotationError, match="fail the HMAC check"):
        ann.pack(a, tmp_path / "edited.pack")
    assert not (tmp_path / "edited.pack").exists()
    # a pack whose example differs from b's copy of the same id (even signed by a trusted key) is refused
    body = ann.read_pack_unverified(tmp_path / "a.pack")
    body["examples"][0]["inputs"]["statement"] = "something else"
    ann.write_signed_pack(a, body, tmp_path / "conflict.pack")
    before = _counts(b)
    rep = ann.merge(b, tmp_path / "conflict.pack")
    assert any(ex.uid in r and "differs from the example with this id here" in r for r in rep.refused)
    assert _counts(b) == before


def _rewrite(store, path, mutate):
    """Edit a pack and sign it again with ``store``'s (trusted) key, so only the structural checks can refuse it."""
    body = ann.read_pack_unverified(path)
    mutate(body)
    ann.write_signed_pack(store, body, path)


def test_pack_files_are_checked_strictly(two, tmp_path):
    a, b = two
    ex = make_example(a, "amy", "strict checks", fooled=True)
    ann.validate(a, ex.uid, "abe", "correct")
    good = tmp_path / "good.pack"
    ann.pack(a, good)
    text = good.read_text()
    # truncated, foreign, unsigned and hand-edited files: tests/assets/malformed/ (test_annotation_malformed_packs.py)
    mutations = {
        "self-vote": (lambda b_: b_["validations"][0].update(annotator="amy"), "validates their own example"),
        "verdict": (lambda b_: b_["validations"][0].update(verdict="meh"), "validations\\[0\\].verdict"),
        "label": (lambda b_: b_["examples"][0].update(target="ecstatic"), "examples\\[0\\]: target"),
        "round": (lambda b_: b_["examples"][0].update(round=9), "round 9 of 'sentiment' is not in the pack"),
        "uid": (lambda b_: b_["examples"][0].update(uid="../x"), "examples\\[0\\].uid"),
        "task": (lambda b_: b_["rounds"][0].update(task="poetry"), "rounds\\[0\\].task: unknown task"),
        "dup": (lambda b_: b_["examples"].append(dict(b_["examples"][0])), "listed twice"),
        "type": (lambda b_: b_["examples"][0].update(time_ms="soon"), "time_ms: expected int"),
        "model name": (lambda b_: b_["rounds"][0]["models"][0].update(name="../../x"), "models\\[0\\].name"),
    }
    for name, (mutate, match) in mutations.items():
        p = tmp_path / f"{name}.pack"
        p.write_text(text)
        _rewrite(a, p, mutate)
        with pytest.raises(ValidationError, match=match):
            ann.merge(b, p)
    assert _counts(b) == (0, 0) and ann.list_annotators(b)[0].name == "bea"
    assert [r.number for r in ann.list_rounds(b)] == [1]


def test_a_pack_carries_its_task_definitions_and_a_missing_task_is_named_by_digest(two, tmp_path):
    from dynadesk.annotation.pack_tasks import pack_task_problems
    from dynadesk.tasks import get_task, task_digest

    a, b = two
    make_example(a, "amy", "amy wrote this one", fooled=True)
    ann.pack(a, tmp_path / "a.pack")
    body = json.loads((tmp_path / "a.pack").read_text())
    body = body.get("body", body)
    assert body["tasks"]["sentiment"]["digest"] == task_digest(get_task("sentiment"))
    assert pack_task_problems(body) == []
    # a receiver without the pack's task (a lab's own, here unknown) is told to add it, naming the digest
    lacking = {"tasks": {"emotion": {"digest": "sha256:" + "ab" * 32, "definition": {}}}}
    [problem] = pack_task_problems(lacking)
    assert "no task 'emotion'" in problem and "dynadesk tasks add" in problem and "sha256:" + "ab" * 32 in problem
    other = {"tasks": {"sentiment": {"digest": "sha256:" + "cd" * 32, "definition": {}}}}
    assert "defined differently here" in pack_task_problems(other)[0]
