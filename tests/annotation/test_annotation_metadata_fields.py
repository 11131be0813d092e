"""Create/validate metadata fields declared in the task file (Dynatask's ``metadata.create`` / ``metadata.validate``):
checked on submission, stored with the example or vote, exported with them; the CLI takes them as ``--field``.

Real workspace, real tiny model answering live, real CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.annotation import open_store
from support.meta_task import NOTES_TASK
from support.tiny_models import make_tiny_classifier

from dynadesk import annotation as ann
from dynadesk.cli import cli
from dynadesk.errors import ValidationError
from dynadesk.tasks import parse_task_text


@pytest.fixture
def st(tmp_path):
    from dynadesk.models import register_model

    s = open_store(tmp_path / "ws")
    s.tasks.add(parse_task_text(NOTES_TASK, "sentiment_notes.yaml"), NOTES_TASK)
    for name in ("writer", "v1", "v2"):
        ann.add_annotator(s, name, "annotator")
    folder = make_tiny_classifier(tmp_path / "tiny-notes", ["negative", "neutral", "positive"],
                                  task="sentiment_notes", seed=1)
    register_model(s, folder, "sentiment_notes", name="tiny-notes")
    ann.new_round(s, "sentiment_notes", ["tiny-notes"])
    yield s
    s.close()


def test_declared_fields_are_checked_stored_and_exported(st):
    with pytest.raises(ValidationError, match="metadata field 'rationale' is required"):
        ann.submit_example(st, "sentiment_notes", "writer", {"statement": "the soup was cold"}, "negative")
    with pytest.raises(ValidationError, match=r"metadata field\(s\) mood not declared.*declared: rationale, topic"):
        ann.submit_example(st, "sentiment_notes", "writer", {"statement": "x"}, "negative",
                           details=ann.ExampleDetails(metadata={"rationale": "r", "mood": "sad"}))
    with pytest.raises(ValidationError, match="'topic' is 'sports', not one of food, film, other"):
        ann.submit_example(st, "sentiment_notes", "writer", {"statement": "x"}, "negative",
                           details=ann.ExampleDetails(metadata={"rationale": "r", "topic": "sports"}))
    assert st.annotation.examples("sentiment_notes") == []  # nothing refused was half-stored

    ex = ann.submit_example(st, "sentiment_notes", "writer", {"statement": "the soup was cold"}, "negative",
                            details=ann.ExampleDetails(
                                metadata={"rationale": "  sarcasm the model misses ", "topic": "food"}))
    with pytest.raises(ValidationError, match="flag_reason' is required"):
        ann.validate(st, ex.uid, "v1", "flagged")
    with pytest.raises(ValidationError, match=r"corrected_why.*not declared by the task for a 'flagged' vote"):
        ann.validate(st, ex.uid, "v1", "flagged", metadata={"flag_reason": "unclear", "corrected_why": "x"})
    v, _ = ann.validate(st, ex.uid, "v1", "flagged", metadata={"flag_reason": "unclear"})
    assert v.reason == "flag_reason: unclear"  # the declared flag field says why: no separate --reason needed
    other = next(lab for lab in ("neutral", "positive") if lab != ex.target)
    ann.validate(st, ex.uid, "v2", "incorrect", label=other, metadata={"corrected_why": "it is neutral"})

    (row,) = ann.export_examples(st, "sentiment_notes")
    meta = row["metadata"]["annotation"]
    assert meta["fields"] == {"rationale": "sarcasm the model misses", "topic": "food"}
    by_voter = {x["annotator"]: x for x in meta["validations"]}
    assert by_voter["v1"]["fields"] == {"flag_reason": "unclear"}
    assert by_voter["v2"]["fields"] == {"corrected_why": "it is neutral"}


def test_the_cli_takes_fields_on_create_and_validate(st, tmp_path):
    st.close()
    home = str(tmp_path / "ws")
    runner = CliRunner()
    res = runner.invoke(cli, ["--home", home, "annotate", "create", "sentiment_notes", "--input", "statement=meh",
                              "--target", "neutral", "--annotator", "writer", "--json"])
    assert res.exit_code == 1 and "metadata field 'rationale' is required" in str(res.exception)
    res = runner.invoke(cli, ["--home", home, "annotate", "create", "sentiment_notes", "--input", "statement=meh",
                              "--target", "neutral", "--annotator", "writer", "--field", "rationale=bland word",
                              "--field", "topic=other", "--json"])
    assert res.exit_code == 0, res.output
    uid = json.loads(res.output)["uid"]
    res = runner.invoke(cli, ["--home", home, "annotate", "validate", uid, "--verdict", "flagged", "--annotator",
                              "v1", "--field", "flag_reason=offensive"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["--home", home, "annotate", "export", "sentiment_notes"])
    assert res.exit_code == 0, res.output
    meta = json.loads(res.output.splitlines()[0])["metadata"]["annotation"]
    assert meta["fields"] == {"rationale": "bland word", "topic": "other"}
    assert meta["validations"][0]["fields"] == {"flag_reason": "offensive"}
