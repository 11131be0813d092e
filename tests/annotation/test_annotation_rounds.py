"""Annotators, rounds and context pools (store + library), on real SQLite files."""

from __future__ import annotations

import sqlite3

import pytest
from support.annotation import open_store, register

from dynadesk import annotation as ann
from dynadesk.errors import AlreadyExistsError, AnnotationError, NotFoundError, ValidationError


@pytest.fixture
def st(tmp_path):
    s = open_store(tmp_path / "ws")
    yield s
    s.close()


def test_annotators_profiles_and_active(st, tmp_path):
    assert ann.active_annotator(st) is None
    with pytest.raises(AnnotationError, match="none is active"):
        ann.resolve_annotator(st, None)
    ann.add_annotator(st, "alice")
    ann.add_annotator(st, "bob", "owner")
    assert ann.active_annotator(st).name == "alice"  # the first one becomes active
    ann.use_annotator(st, "bob")
    assert ann.resolve_annotator(st, None).name == "bob"
    assert [(a.name, a.role) for a in ann.list_annotators(st)] == [("alice", "annotator"), ("bob", "owner")]
    with pytest.raises(AlreadyExistsError, match="alice"):
        ann.add_annotator(st, "alice")
    with pytest.raises(ValidationError, match="role 'boss'"):
        ann.add_annotator(st, "carol", "boss")
    with pytest.raises(ValidationError, match="annotator name"):
        ann.add_annotator(st, "has\nnewline")
    with pytest.raises(NotFoundError, match="zed"):
        ann.use_annotator(st, "zed")
    st.close()
    again = open_store(tmp_path / "ws")  # persisted
    assert ann.active_annotator(again).name == "bob"
    again.close()


def test_new_round_closes_previous_and_numbers(st, models):
    register(st, models, "sentiment", "sentiment")
    register(st, models, "sentiment2", "sentiment")
    r1 = ann.new_round(st, "sentiment", ["tiny-sentiment"])
    assert (r1.number, r1.status) == (1, "open")
    r2 = ann.new_round(st, "sentiment", ["tiny-sentiment", "tiny-sentiment2"])
    assert (r2.number, r2.status, [m.name for m in r2.models]) == (2, "open", ["tiny-sentiment", "tiny-sentiment2"])
    rounds = ann.list_rounds(st, "sentiment")
    assert [(r.number, r.status) for r in rounds] == [(1, "closed"), (2, "open")]
    assert rounds[0].closed_at
    assert ann.open_round(st, "sentiment").number == 2
    assert r2.models[1].digest == st.models.get("tiny-sentiment2").digest
    # each task numbers its own rounds
    register(st, models, "nli", "nli")
    assert ann.new_round(st, "nli", ["tiny-nli"]).number == 1
    # the database itself refuses a second open round for one task
    with pytest.raises(sqlite3.IntegrityError):
        st.db.execute("UPDATE rounds SET status = 'open' WHERE task = 'sentiment' AND number = 1")


def test_round_models_must_exist_and_fit_the_task(st, models):
    register(st, models, "nli", "nli")
    with pytest.raises(NotFoundError, match="no model named 'nope'"):
        ann.new_round(st, "sentiment", ["nope"])
    with pytest.raises(ValidationError, match="'nli' model, not a 'sentiment'"):
        ann.new_round(st, "sentiment", ["tiny-nli"])
    with pytest.raises(ValidationError, match="at least one target model"):
        ann.new_round(st, "sentiment", [])
    with pytest.raises(NotFoundError, match="unknown task"):
        ann.new_round(st, "poetry", ["tiny-nli"])
    assert ann.list_rounds(st) == []
    with pytest.raises(NotFoundError, match="no annotation round yet"):
        ann.open_round(st, "sentiment")


def test_context_pool_import_and_draw(st, models, tmp_path):
    register(st, models, "nli", "nli")
    ann.add_annotator(st, "alice")
    pool = tmp_path / "premises.jsonl"
    pool.write_text('{"text": "A man plays a guitar."}\n\n{"context": "Two dogs run in a park."}\n'
                    '{"text": "A man plays a guitar."}\n', encoding="utf-8")
    rnd = ann.new_round(st, "nli", ["tiny-nli"], pool)
    assert rnd.n_contexts == 2  # the duplicate is dropped
    drawn = {ann.next_context(st, "nli", "alice", seed=s).id for s in range(20)}
    assert len(drawn) == 2
    ctx = ann.next_context(st, "nli", "alice", seed=0)
    ann.submit_example(st, "nli", "alice", {"hypothesis": "Someone makes music."}, "entailment",
                       details=ann.ExampleDetails(context_id=ctx.id))
    # once used in this round, a context is not served to the same annotator again
    for s in range(10):
        assert ann.next_context(st, "nli", "alice", seed=s).id != ctx.id
    other = ann.next_context(st, "nli", "alice")
    ann.submit_example(st, "nli", "alice", {"hypothesis": "Nothing moves."}, "contradiction",
                       details=ann.ExampleDetails(context_id=other.id))
    with pytest.raises(AnnotationError, match="used all 2 contexts"):
        ann.next_context(st, "nli", "alice")
    # a pool round needs a pool context
    with pytest.raises(ValidationError, match="has a context pool"):
        ann.submit_example(st, "nli", "alice", {"context": "x y", "hypothesis": "y"}, "neutral")


def test_bad_context_files_are_reported_by_line(st, models, tmp_path):
    register(st, models, "nli", "nli")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\nnot json\n{"other": 1}\n{"text": "  "}\n', encoding="utf-8")
    with pytest.raises(ValidationError) as err:
        ann.new_round(st, "nli", ["tiny-nli"], bad)
    assert [p.split(":")[0] for p in err.value.problems] == ["line 2", "line 3", "line 4"]
    assert ann.list_rounds(st) == []  # nothing opened
    register(st, models, "sentiment", "sentiment")
    txt = tmp_path / "pool.txt"
    txt.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="no context field"):
        ann.new_round(st, "sentiment", ["tiny-sentiment"], txt)
    ok = ann.new_round(st, "nli", ["tiny-nli"], txt)
    assert ok.n_contexts == 2
