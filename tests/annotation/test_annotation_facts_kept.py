"""The round facts kept between calls (dynadesk.store.annotation_facts) equal the facts read whole, after every
kind of write a workspace sees: examples and votes added (in and out of date order, held or not, in two rounds),
held records accepted, an example removed, annotators and trusted pack keys added, a role changed; and a call
after an added vote reads only what was added (the other examples' facts are the same objects as before)."""

from __future__ import annotations

import random
import uuid

from support.annotation import open_store, sentiment_round

from dynadesk import annotation as ann
from dynadesk.store.annotation_records import AnnotatedExample, Validation

WRITERS = ["w1", "w2", "w3"]
VOTERS = ["v1", "v2", "boss"]


def _stamp(rng: random.Random, now: int) -> str:
    """A creation time: mostly the next one, sometimes one from before (a merged pack's rows keep their own)."""
    second = now if rng.random() < 0.7 else rng.randrange(0, now + 1)
    return f"2026-12-06T10:{second // 60 % 60:02d}:{second % 60:02d}+00:00"


def _example(rng: random.Random, now: int, number: int, held: bool) -> AnnotatedExample:
    return AnnotatedExample(
        uid=uuid.UUID(int=rng.getrandbits(128)).hex, task="sentiment", round=number, annotator=rng.choice(WRITERS),
        inputs={"statement": "s"}, target="positive", model_name="tiny-sentiment", model_digest="d",
        model_output={"label": "negative"}, fooled=rng.random() < 0.6, explanation="", time_ms=rng.randrange(10**4),
        hmac="h", origin="here", created_at=_stamp(rng, now), context_id=None, held="unproven" if held else None)


def _apply_one(st, rng: random.Random, now: int) -> str:
    """One random write through the store (and, for what no library call does, its SQL); returns what it was."""
    db = st.annotation.db
    uids = [r[0] for r in db.execute("SELECT uid FROM annotated_examples")]
    kind = rng.choices(["example", "vote", "accept", "remove", "annotator", "key", "role"],
                       weights=[30, 40, 3, 2, 2, 2, 2])[0]
    if kind == "example" or not uids:
        number = rng.choice([1, 2])
        st.annotation.insert_example(_example(rng, now, number, rng.random() < 0.15),
                                     st.annotation.round_id("sentiment", number))
        return "example"
    if kind == "vote":
        uid = rng.choice(uids)
        writer = db.execute("SELECT annotator FROM annotated_examples WHERE uid = ?", [uid]).fetchone()[0]
        voters = [v for v in VOTERS + WRITERS if v != writer and not st.annotation.has_vote(uid, v)]
        if voters:
            signed = rng.random() < 0.2
            st.annotation.insert_validation(Validation(
                uid=uuid.UUID(int=rng.getrandbits(128)).hex, example_uid=uid, annotator=rng.choice(voters),
                verdict=rng.choice(["correct", "incorrect", "flagged"]), label="neutral", origin="here",
                created_at=_stamp(rng, now), held="unproven" if rng.random() < 0.1 else None,
                signer="sha256:" + "ab" * 32 if signed else None))
        return "vote"
    if kind == "accept":
        st.annotation.accept_held()
    elif kind == "remove":
        with st.annotation.atomic() as tx:
            tx.execute("DELETE FROM annotated_examples WHERE uid = ?", [rng.choice(uids)])
    elif kind == "annotator":
        ann.add_annotator(st, f"late{now}", rng.choice(["annotator", "owner"]))
    elif kind == "key":  # binds the votes signed under it to a person here: an owner's key makes them owner votes
        st.annotation.trust_key("sha256:" + "ab" * 32, "00" * 32, "pack", person=rng.choice(VOTERS + WRITERS))
    else:
        with st.annotation.atomic() as tx:
            tx.execute("UPDATE annotators SET role = ? WHERE name = ?", [rng.choice(["annotator", "owner"]),
                                                                          rng.choice(VOTERS + WRITERS)])
    return kind


def test_kept_facts_equal_a_whole_read_after_every_step_of_random_writes(tmp_path, models):
    st = open_store(tmp_path / "ws")
    sentiment_round(st, models, people=[(w, "annotator") for w in WRITERS + ["v1", "v2"]] + [("boss", "owner")])
    ann.new_round(st, "sentiment", ["tiny-sentiment"])  # round 2 open; round 1 still takes rows (a merge's)
    other = open_store(tmp_path / "ws")  # a second connection, as each of the hub's threads holds its own
    rng = random.Random(50)
    kinds: set[str] = set()
    for step in range(400):
        kinds.add(_apply_one(st if step % 3 else other, rng, step))
        for reader in (st, other):
            for number in (1, 2):
                kept = reader.annotation.example_facts("sentiment", number)
                assert kept == reader.annotation.example_facts_whole("sentiment", number), (step, kinds)
    assert kinds == {"example", "vote", "accept", "remove", "annotator", "key", "role"}
    assert any(v.role == "owner" and v.signer for f in st.annotation.example_facts("sentiment", 1)
               + st.annotation.example_facts("sentiment", 2) for v in f.validations)
    st.close()
    other.close()


def test_an_added_vote_reads_only_what_was_added_and_an_accepted_hold_reads_the_round_again(tmp_path, models):
    st = open_store(tmp_path / "ws")
    sentiment_round(st, models, people=[(w, "annotator") for w in WRITERS + ["v1", "v2"]] + [("boss", "owner")])
    rng = random.Random(1)
    rid = st.annotation.round_id("sentiment", 1)
    for i in range(20):
        st.annotation.insert_example(_example(rng, 100 + i, 1, held=(i == 5)), rid)
    before = st.annotation.example_facts("sentiment", 1)
    target = before[3]
    st.annotation.insert_validation(Validation(uid=uuid.uuid4().hex, example_uid=target.uid, annotator="v1",
                                               verdict="correct", origin="here", created_at="2026-12-06T11:00:00"))
    after = st.annotation.example_facts("sentiment", 1)
    assert [v.annotator for v in after[3].validations] == ["v1"] and before[3].validations == []  # copy on write
    assert all(a is b for i, (a, b) in enumerate(zip(after, before)) if i != 3)  # the rest not read again
    assert len(after) == 19  # the held one counts nowhere
    st.annotation.accept_held()
    accepted = st.annotation.example_facts("sentiment", 1)
    assert len(accepted) == 20 and accepted == st.annotation.example_facts_whole("sentiment", 1)
    assert not any(a is b for a, b in zip(accepted, after))  # read whole again: the counter moved
    st.close()
