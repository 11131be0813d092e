"""Creating examples against real (tiny) models: live output, fooled verdict, HMAC, refusals."""

from __future__ import annotations

import json
import shutil

import pytest
from support.annotation import open_store, raw_db, register, sentiment_round

from dynadesk import annotation as ann
from dynadesk.errors import AnnotationError, NotFoundError, ValidationError
from dynadesk.evaluator.metrics import squad_f1
from dynadesk.models import predict_live


@pytest.fixture
def st(tmp_path):
    s = open_store(tmp_path / "ws")
    yield s
    s.close()


def test_submit_stores_live_output_and_verdict(st, models, tmp_path):
    sentiment_round(st, models)
    ex = ann.submit_example(st, "sentiment", "ann1", {"statement": "the movie was great"}, "positive",
                            details=ann.ExampleDetails(explanation="sarcasm", time_ms=4200))
    fresh = predict_live(st, "tiny-sentiment", {"statement": "the movie was great"})
    assert ex.model_output["label"] == fresh["label"]
    assert ex.model_output["probs"] == pytest.approx(fresh["probs"], abs=1e-6)
    assert set(ex.model_output["probs"]) == {"negative", "neutral", "positive"}
    assert ex.fooled == (fresh["label"] != "positive")
    assert ex.model_digest == st.models.get("tiny-sentiment").digest
    assert (ex.annotator, ex.round, ex.time_ms, ex.explanation) == ("ann1", 1, 4200, "sarcasm")
    # the two other labels: exactly the ones the model does not predict are fooled
    verdicts = {t: ann.submit_example(st, "sentiment", "ann1", {"statement": "the movie was great"}, t).fooled
                for t in ("negative", "neutral", "positive")}
    assert verdicts == {t: t != fresh["label"] for t in verdicts}
    # committed: visible from a second connection at once
    con = raw_db(tmp_path / "ws" / "dynadesk.db")
    row = con.execute("SELECT annotator, fooled, model_output FROM annotated_examples WHERE uid = ?",
                      [ex.uid]).fetchone()
    assert row[0] == "ann1" and bool(row[1]) == ex.fooled and json.loads(row[2]) == ex.model_output
    assert ann.verify(st).ok


def test_submit_refuses_bad_input_and_stores_nothing(st, models):
    sentiment_round(st, models)
    cases = [
        (dict(inputs={"statement": "  "}, target="positive"), ValidationError, "non-empty"),
        (dict(inputs={"statement": "x", "extra": "y"}, target="positive"), ValidationError, "unknown input 'extra'"),
        (dict(inputs={"statement": "x"}, target="happy"), ValidationError, "not one of the task's labels"),
        (dict(inputs={"statement": "x"}, target="positive", model="tiny-nope"), AnnotationError, "not a target"),
        (dict(inputs={"statement": "x"}, target="positive", details=ann.ExampleDetails(time_ms=-5)),
         ValidationError, "milliseconds"),
        (dict(inputs={"statement": "x"}, target="positive", annotator="ghost"), NotFoundError, "ghost"),
    ]
    for kwargs, exc, msg in cases:
        who = kwargs.pop("annotator", "ann1")
        with pytest.raises(exc, match=msg):
            ann.submit_example(st, "sentiment", who, kwargs.pop("inputs"), kwargs.pop("target"), **kwargs)
    assert st.db.execute("SELECT COUNT(*) FROM annotated_examples").fetchone()[0] == 0


def test_closed_round_and_changed_model_are_refused(st, models, tmp_path):
    sentiment_round(st, models)
    register(st, models, "sentiment2", "sentiment")
    ann.new_round(st, "sentiment", ["tiny-sentiment2"])
    # round 1 is closed now: creation goes to round 2 and its targets only
    with pytest.raises(AnnotationError, match="not a target of round 2"):
        ann.submit_example(st, "sentiment", "ann1", {"statement": "fine"}, "neutral", model="tiny-sentiment")
    assert ann.submit_example(st, "sentiment", "ann1", {"statement": "fine"}, "neutral").round == 2
    # re-registering different weights under the target's name is caught
    from dynadesk.models import register_model

    changed = tmp_path / "changed"
    shutil.copytree(models["sentiment"], changed)
    register_model(st, changed, "sentiment", name="tiny-sentiment2", replace=True)
    with pytest.raises(AnnotationError, match="changed since round 2 opened"):
        ann.submit_example(st, "sentiment", "ann1", {"statement": "fine"}, "neutral")


def test_qa_answer_must_be_in_context_and_f1_rule(st, models):
    ann.add_annotator(st, "qa1")
    register(st, models, "qa", "qa")
    ann.new_round(st, "qa", ["tiny-qa"])
    ctx = "Paris is the capital of France and the river is named the Seine."
    with pytest.raises(ValidationError, match="not a substring"):
        ann.submit_example(st, "qa", "qa1", {"context": ctx, "question": "what river?"}, "the Thames")
    ex = ann.submit_example(st, "qa", "qa1", {"context": ctx, "question": "what river?"}, "the Seine")
    answer = ex.model_output["answer"]
    assert answer in ctx
    assert ex.fooled == (squad_f1(answer, ["the Seine"]) / 100 < 0.4)
    # the model's own answer as target cannot fool it; a disjoint span does
    assert answer.strip(), "the tiny QA model answers a non-empty span for this context"
    assert ann.submit_example(st, "qa", "qa1", {"context": ctx, "question": "what river?"}, answer).fooled is False
    other = next(w for w in ("Paris", "Seine", "river") if squad_f1(answer, [w]) == 0)
    assert ann.submit_example(st, "qa", "qa1", {"context": ctx, "question": "what river?"}, other).fooled is True


def test_nli_pool_context_fills_the_input(st, models, tmp_path):
    ann.add_annotator(st, "n1")
    register(st, models, "nli", "nli")
    pool = tmp_path / "p.txt"
    pool.write_text("A woman is reading a book.\n", encoding="utf-8")
    ann.new_round(st, "nli", ["tiny-nli"], pool)
    ctx = ann.next_context(st, "nli", "n1")
    ex = ann.submit_example(st, "nli", "n1", {"hypothesis": "She reads."}, "entailment",
                            details=ann.ExampleDetails(context_id=ctx.id))
    assert ex.inputs == {"context": "A woman is reading a book.", "hypothesis": "She reads."}
    assert ex.context_id == ctx.id
    with pytest.raises(ValidationError, match="differs from the chosen pool context"):
        ann.submit_example(st, "nli", "n1", {"context": "other", "hypothesis": "h"}, "neutral",
                           details=ann.ExampleDetails(context_id=ctx.id))
    with pytest.raises(ValidationError, match="not in the pool"):
        ann.submit_example(st, "nli", "n1", {"hypothesis": "h"}, "neutral",
                           details=ann.ExampleDetails(context_id="ctx-0000000000000000"))


def test_an_example_takes_no_write_statement_for_the_workspaces_secret_and_id(st, models, tmp_path):
    """Every example and vote signs with the workspace's HMAC secret and names its id: both are written once and
    never change, so a store reads them once. Before, each asked with an ``INSERT OR IGNORE`` (a write statement,
    the database's write lock, beside the hub's other writers) and a read, twice per example. A second workspace's
    store still reads its own secret, and what it signs verifies."""
    sentiment_round(st, models)
    ann.submit_example(st, "sentiment", "ann1", {"statement": "first"}, "positive")
    statements: list[str] = []
    st.db.conn.set_trace_callback(statements.append)
    try:
        for i in range(3):
            ann.submit_example(st, "sentiment", "ann1", {"statement": f"again {i}"}, "negative")
    finally:
        st.db.conn.set_trace_callback(None)
    assert not [s for s in statements if "meta" in s], statements
    assert sum("INSERT INTO annotated_examples" in s for s in statements) == 3
    other = open_store(tmp_path / "other")
    try:
        assert ann.integrity.workspace_secret(other) != ann.integrity.workspace_secret(st)
        assert ann.integrity.workspace_id(other) != ann.integrity.workspace_id(st)
    finally:
        other.close()
    assert ann.verify(st).ok
