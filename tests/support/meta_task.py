"""A workspace task that declares create/validate metadata fields (Dynatask's ``metadata.create`` /
``metadata.validate``) with a tiny real model and an open round: what the hub's and the app's field tests share."""

from __future__ import annotations

from pathlib import Path

NOTES_TASK = """\
name: sentiment_notes
title: Sentiment with notes
inputs:
  - name: statement
output:
  kind: label
  labels: [negative, neutral, positive]
metric: macro_f1
fooled_rule:
  kind: label_mismatch
validation:
  votes_needed: 2
metadata:
  create:
    - {name: rationale, type: string, description: "why the model should get it wrong", required: true}
    - {name: topic, type: multiclass, labels: [food, film, other]}
  validate:
    - {name: flag_reason, type: multiclass, labels: [offensive, unclear, wrong_label], when: flagged,
       required: true}
    - {name: corrected_why, type: string, when: incorrect}
"""


def notes_round(home: Path, models_root: Path, people: tuple[str, ...] = (), model: Path | None = None) -> None:
    """The ``sentiment_notes`` task added to the workspace at ``home``, a tiny model (or the ``model`` folder)
    registered for it and its round opened; ``people`` added as annotators."""
    from dynadesk import annotation as ann
    from dynadesk.models import register_model
    from dynadesk.tasks import parse_task_text
    from dynadesk.workspace import Workspace
    from support.tiny_models import make_tiny_classifier

    st = Workspace(Path(home)).ensure().open_store()
    try:
        st.tasks.add(parse_task_text(NOTES_TASK, "sentiment_notes.yaml"), NOTES_TASK)
        for name in people:
            ann.add_annotator(st, name, "annotator")
        folder = model or make_tiny_classifier(Path(models_root) / "tiny-notes", ["negative", "neutral", "positive"],
                                               task="sentiment_notes", seed=1)
        register_model(st, folder, "sentiment_notes", name="tiny-notes")
        ann.new_round(st, "sentiment_notes", ["tiny-notes"])
    finally:
        st.close()
