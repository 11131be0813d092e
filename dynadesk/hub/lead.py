"""The lead's view of a round in the hub: every example as a row, and agreement per annotator and per label.

Adjudication needs no new record: a hub lead is an ``owner`` and an owner's vote decides an example at once
(:func:`dynadesk.annotation.validate.example_status` records ``decided_by`` = the owner's name), so the page
sends the lead's decision as an ordinary vote and this view shows it as the lead's. Reads only; no web stack.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from dynadesk.annotation.validate import UNVERIFIED, VERIFIED_CORRECT, example_status
from dynadesk.errors import HubForbiddenError
from dynadesk.store.hub import HubSession
from dynadesk.tasks import get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

LEAD_ROLE = "owner"


def require_lead(session: HubSession) -> None:
    """Only the lead (an ``owner`` invite) reads every example and adjudicates."""
    if session.role != LEAD_ROLE:
        raise HubForbiddenError(f"'{session.name}' is a {session.role}: only the lead (an owner invite) sees every"
                                " example of a round")


def _answer(output: dict[str, Any]) -> Any:
    return output.get("label", output.get("answer"))


def _state(status: str, decided_by: str | None, owners: set[str], votes: dict[str, int]) -> str:
    """The row's state in plain words (the same ones the page shows)."""
    if decided_by in owners:
        return "lead: correct" if status == VERIFIED_CORRECT else "lead: not correct"
    if status == VERIFIED_CORRECT:
        return "confirmed"
    if status != UNVERIFIED:
        return "rejected"
    if votes["correct"] and (votes["incorrect"] or votes["flagged"]):
        return "disputed"
    return "waiting for votes" if not any(votes.values()) else "more votes needed"


def round_table(store: Store, task_name: str, round_number: int | None = None) -> dict[str, Any]:
    """Every example of the task's round (the newest unless ``round_number``) with its votes and state;
    agreement per annotator (a vote agrees when it matches how the example was decided) and per label (share of
    ``correct`` votes on the examples written with that label)."""
    task = get_task(task_name)
    rnd = store.annotation.get_round(task.name, round_number)
    rows: list[dict[str, Any]] = []
    agree: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_label: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for ex in store.annotation.examples(task.name, rnd.number):
        st = example_status(ex, task.votes_needed)
        owners = {v.annotator for v in ex.validations if v.role == LEAD_ROLE}
        votes = {"correct": st.correct, "incorrect": st.incorrect, "flagged": st.flagged}
        rows.append({"uid": ex.uid, "author": ex.annotator, "created_at": ex.created_at, "inputs": ex.inputs,
                     "target": ex.target, "model": ex.model_name, "model_answer": _answer(ex.model_output),
                     "probs": ex.model_output.get("probs"), "fooled": ex.fooled,
                     "verified_fooled": st.verified_fooled, "status": st.status, "decided_by": st.decided_by,
                     "by_lead": st.decided_by in owners, "state": _state(st.status, st.decided_by, owners, votes),
                     "votes": votes, "explanation": ex.explanation,
                     "validations": [{"annotator": v.annotator, "verdict": v.verdict, "label": v.label,
                                      "reason": v.reason, "lead": v.role == LEAD_ROLE} for v in ex.validations]})
        key = str(ex.target) if task.kind.chooses_labels else "(span answers)"
        for v in ex.validations:
            if v.role == LEAD_ROLE:
                continue
            per_label[key][0] += v.verdict == "correct"
            per_label[key][1] += 1
            if st.status != UNVERIFIED:
                agree[v.annotator][0] += (v.verdict == "correct") == (st.status == VERIFIED_CORRECT)
                agree[v.annotator][1] += 1
    return {"task": task.name, "round": rnd.number, "votes_needed": task.votes_needed, "examples": rows,
            "agreement": [{"annotator": a, "agreed": n, "votes": d, "rate": n / d}
                          for a, (n, d) in sorted(agree.items())],
            "labels": [{"label": k, "correct": n, "votes": d, "rate": n / d}
                       for k, (n, d) in sorted(per_label.items())]}
