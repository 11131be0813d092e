"""The typed run record (:class:`EvaluationRecord`, its metric values, image build and queue placement), the
statuses a run moves through, and how a database row becomes a record."""

from __future__ import annotations

import builtins
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from dynadesk.errors import ConfigError
from dynadesk.evaluator.schema import Settings as WorkerSettings
from dynadesk.store.core import Record

STATUSES = ("queued", "running", "succeeded", "failed", "interrupted", "cancelled")
# queued -> running -> succeeded | failed | interrupted | cancelled; an unfinished run may run again (resume).
# queued -> failed | cancelled: the run could not start (no model folder, refused container).
TRANSITIONS: dict[str, frozenset[str]] = {
    "queued": frozenset({"running", "failed", "cancelled"}),
    "running": frozenset({"succeeded", "failed", "interrupted", "cancelled"}),
    "failed": frozenset({"running"}),
    "interrupted": frozenset({"running"}),
    "cancelled": frozenset({"running"}),
    "succeeded": frozenset(),
}
PURPOSES = ("evaluation", "audit", "preflight", "bench", "calibration")


@dataclass
class MetricValue(Record):
    dataset: str  # dataset name; '' for a whole-run figure
    metric: str
    value: float
    unit: str
    deterministic: bool


@dataclass(frozen=True)
class ImageBuild:
    """What rebuilds a Docker run's image Id (``dynadesk image build --epoch N``); signed into its bundle."""

    source_date_epoch: int
    input_digest: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: object) -> ImageBuild:
        if not isinstance(raw, dict) or not isinstance(raw.get("source_date_epoch"), int) \
                or not isinstance(raw.get("input_digest"), str):
            raise ConfigError(f"an image build is {{source_date_epoch: int, input_digest: str}}, got {raw!r:.120}")
        return cls(raw["source_date_epoch"], raw["input_digest"])


@dataclass(frozen=True)
class QueuePlacement:
    """Where a queued run ran: the job, its attempt, the worker (its host, hardware class and signing key), the
    worker it was re-queued from, and the limits that worker applied and the maxima it saw (workspace
    bookkeeping: a bundle signs only the worker's name and key)."""

    job: str
    attempt: int | None = None
    worker: str | None = None
    host: str | None = None
    hardware_class: str | None = None
    requeued_from: str | None = None
    requeued_why: str | None = None     # why the job was sent again (a lost lease, a broker that lost it)
    worker_key: str | None = None
    limits: dict[str, Any] | None = None
    maxima: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: object) -> QueuePlacement:
        if not isinstance(raw, dict) or not isinstance(raw.get("job"), str):
            raise ConfigError(f"a queue placement names its job, got {raw!r:.120}")
        unknown = sorted(set(raw) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"a queue placement has unknown field(s) {', '.join(unknown)}")
        return cls(**raw)


class _Keep:
    """The default of every :class:`RunChange` field: the column stays as it is (``None`` is a value: it clears)."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()


@dataclass(frozen=True, kw_only=True)
class RunChange:
    """The fields one write sets on a stored run, every other column kept: what a status move
    (:meth:`~dynadesk.store.evaluations.EvaluationRepo.transition`), a field update or a metrics write carries.
    Fields left at :data:`KEEP` are not written, so ``RunChange(verdict="x")`` sets the verdict alone (fields are
    named: a positional one is a ``TypeError``); one value
    (not a dozen keyword options on three methods) so the three writes name the same fields the same way."""

    verdict: str | None = KEEP
    error: str | None = KEEP
    log: str = KEEP
    started_at: str | None = KEEP
    finished_at: str | None = KEEP
    pid: int | None = KEEP
    host: str | None = KEEP
    run_dir: str | None = KEEP
    evaluator_version: str | None = KEEP
    image_id: str | None = KEEP
    image_build: ImageBuild | None = KEEP
    queue: QueuePlacement | None = KEEP
    predictions_digest: str | None = KEEP
    environment: dict[str, Any] = KEEP
    profile: dict[str, Any] = KEEP
    remeasure_of: int | None = KEEP

    def given(self) -> dict[str, Any]:
        """The fields to write, by column name (those not left at :data:`KEEP`)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not KEEP}


@dataclass(frozen=True)
class RunSetup:
    """What a new run is given besides its model, task, runner and datasets: the ``request`` as asked
    (``RunRequest.to_dict()``, which names its purpose), the evaluator's settings for the worker and the image it
    runs in. One value, so :meth:`~dynadesk.store.evaluations.EvaluationRepo.create` takes them together."""

    request: dict[str, Any] | None = None
    worker: WorkerSettings | None = None
    image_name: str | None = None


@dataclass
class EvaluationRecord:
    """One stored run: what was asked (``request``, as ``RunRequest.to_dict()``: the one copy), what the worker
    was given (``worker``), where it ran (runner, image, queue placement, hardware class) and what it produced."""

    id: int
    model_id: int
    model_name: str
    task: str
    runner: str
    sandboxed: bool
    status: str
    verdict: str | None
    error: str | None
    datasets: list[str]
    image_id: str | None
    evaluator_version: str | None
    run_dir: str | None
    predictions_digest: str | None
    environment: dict[str, Any]
    profile: dict[str, Any]
    log: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    pid: int | None = None
    host: str | None = None
    request: dict[str, Any] = field(default_factory=dict)  # RunRequest.to_dict() ({} for an old run it cannot be)
    purpose: str = "evaluation"
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    image_name: str | None = None  # the image name or tag the Docker runner ran (image_id: its Id)
    image_build: ImageBuild | None = None
    queue: QueuePlacement | None = None
    hardware_class: str | None = None
    legacy_settings: dict[str, Any] | None = None  # keys of a pre-m005 settings bag no typed field takes
    remeasure_of: int | None = None  # the run whose timed windows this one took again (eval --remeasure)
    metrics: list[MetricValue] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["worker"] = asdict(self.worker)
        d["image_build"] = self.image_build.to_dict() if self.image_build else None
        d["queue"] = self.queue.to_dict() if self.queue else None
        d["metrics"] = [m.to_dict() for m in self.metrics]
        return d



_WORKER_FIELDS = frozenset(f.name for f in fields(WorkerSettings))


def _worker_settings(raw: dict[str, Any]) -> WorkerSettings:
    return WorkerSettings(**{k: v for k, v in raw.items() if k in _WORKER_FIELDS})


def hardware_class(environment: dict[str, Any]) -> str:
    from dynadesk.evaluator.environment import hardware_class_of

    return hardware_class_of(environment if isinstance(environment, dict) else {})


def record_from_row(row: dict[str, Any], metrics: builtins.list[MetricValue]) -> EvaluationRecord:
    data = dict(row)
    for k in ("environment", "profile", "request"):
        data[k] = json.loads(row[k]) if row[k] else {}
    data["datasets"] = json.loads(row["datasets"]) if row["datasets"] else []
    data["worker"] = _worker_settings(json.loads(row["worker"] or "{}"))
    data["image_build"] = ImageBuild.from_dict(json.loads(row["image_build"])) if row["image_build"] else None
    data["queue"] = QueuePlacement.from_dict(json.loads(row["queue"])) if row["queue"] else None
    data["legacy_settings"] = json.loads(row["legacy_settings"]) if row["legacy_settings"] else None
    data["sandboxed"] = bool(row["sandboxed"])
    data["log"] = row["log"] or ""
    return EvaluationRecord(metrics=metrics, **data)
