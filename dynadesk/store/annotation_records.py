"""The annotation store's records (annotators, rounds, examples, validations, trusted keys) and how a row of
the database becomes one."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dynadesk.store.core import Record

ROLES = ("annotator", "owner")
VERDICTS = ("correct", "incorrect", "flagged")


@dataclass
class TrustedKey(Record):
    fingerprint: str
    public_key: str
    name: str
    added_at: str
    person: str | None = None


@dataclass
class Annotator(Record):
    name: str
    role: str
    created_at: str = ""


@dataclass
class RoundModel:
    name: str
    digest: str


@dataclass
class Round:
    id: int
    task: str
    number: int
    status: str
    models: list[RoundModel]
    n_contexts: int = 0
    created_by: str | None = None
    created_at: str = ""
    closed_at: str | None = None

    @property
    def is_open(self) -> bool:
        return self.status == "open"

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "id"}
        d["models"] = [m.__dict__ for m in self.models]
        return d


@dataclass
class Validation(Record):
    uid: str
    example_uid: str
    annotator: str
    verdict: str
    label: Any = None
    reason: str = ""
    origin: str = ""
    created_at: str = ""
    role: str = "annotator"
    held: str | None = None
    signer: str | None = None


@dataclass
class AnnotatedExample:
    """One model-in-the-loop example with the model's response as it was recorded."""

    uid: str
    task: str
    round: int
    annotator: str
    inputs: dict[str, str]
    target: Any
    model_name: str
    model_digest: str
    model_output: dict[str, Any]
    fooled: bool
    explanation: str
    time_ms: int
    hmac: str
    origin: str
    created_at: str
    context_id: str | None = None
    validations: list[Validation] = field(default_factory=list)
    held: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["validations"] = [v.to_dict() for v in self.validations]
        return d



@dataclass
class ExampleFacts:
    """What a round's statistics read of one example: who wrote it, for which target, whether it fooled, how long it
    took, and its votes. :meth:`AnnotationRepo.example_facts` reads these columns alone (no JSON, no inputs): the
    hub's ``GET /api/stats`` ran on every user's poll and loading whole examples was most of it."""

    uid: str
    annotator: str
    model_name: str
    fooled: bool
    time_ms: int
    validations: list[Validation] = field(default_factory=list)


def example_from_row(row: dict[str, Any]) -> AnnotatedExample:
    return AnnotatedExample(
        uid=row["uid"], task=row["task"], round=row["round_number"], annotator=row["annotator"],
        inputs=json.loads(row["inputs"]), target=json.loads(row["target"]), model_name=row["model_name"],
        model_digest=row["model_digest"], model_output=json.loads(row["model_output"]), fooled=bool(row["fooled"]),
        explanation=row["explanation"], time_ms=row["time_ms"], hmac=row["hmac"], origin=row["origin"],
        created_at=row["created_at"], context_id=row["context_id"], held=row.get("held"))


def validation_from_row(row: dict[str, Any]) -> Validation:
    return Validation(uid=row["uid"], example_uid=row["example_uid"], annotator=row["annotator"],
                      verdict=row["verdict"], label=json.loads(row["label"]) if row["label"] is not None else None,
                      reason=row["reason"], origin=row["origin"], created_at=row["created_at"],
                      role=row.get("role") or "annotator", held=row.get("held"), signer=row.get("signer"))


def dumps_json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)
