"""The signed bundle payload as frozen types, parsed and checked on construction (sigstore-python's habit).

:func:`parse_payload` turns the JSON object of a version 1 or 2 payload into one :class:`Payload`, or raises one
:class:`~dynadesk.errors.BundleFormatError` naming the field path (``payload.metrics[3].value``): a malformed
payload never exists, and every reader uses attributes. :meth:`Payload.to_json` gives the object back exactly, so
``canonical_bytes(payload.to_json())`` are the bytes that were signed (``tests/sync/test_sync_payload_model.py``).

Each signed top-level field is a dataclass field declared with :func:`signed`: its parser, whether it may be
absent (``optional``) and in which format versions it exists. The fields are parsed in declaration order, each
seeing those before it (the metrics see the datasets), so adding a signed field is one declaration here and one
line in its writer (``sync/client/create.py``); ``docs/bundle-format.md``'s field table is generated from the same
declarations (``packaging/gen_bundle_docs.py``). The leaf checks (text, integer, digest forms) are
:mod:`dynadesk.sync.format.schema`'s.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime
from typing import Any, ClassVar, Self

from dynadesk.sync.format import schema as _s
from dynadesk.sync.format.parts import (
    Dataset,
    Evaluator,
    Interval,
    Metric,
    Model,
    Outcome,
    Predictions,
    Request,
    Runner,
    Submitter,
    Tolerance,
    Worker,
    WorkerSettings,
    json_of,
)
from dynadesk.sync.format.timestamps import parse_utc
from dynadesk.sync.format.tolerances import check_tolerances

__all__ = ["Payload", "parse_payload", "signed"]

_FIELDS: dict[tuple[type, int | None], list[Any]] = {}
Parser = Callable[[Any, str, Mapping[str, Any]], Any]  # (value, JSON path, the fields parsed before) -> typed value


def signed(parse: Parser, *, doc: str, type_: str, optional: bool = False, versions: tuple[int, ...] = (1, 2)) -> Any:
    """Declare a signed top-level field: ``parse`` checks and types its JSON value; ``optional``: it may be absent
    (added within a version; None when absent); ``versions``: the format versions that have it (absent in others);
    ``doc`` and ``type_`` are its row in docs/bundle-format.md."""
    meta = {"parse": parse, "optional": optional, "versions": versions, "doc": doc, "type": type_}
    if optional or versions != (1, 2):
        return field(default=None, metadata=meta)
    return field(metadata=meta)


def _created_at(v: Any, w: str, _: Mapping[str, Any]) -> str:
    _s.timestamp(v, w)
    return str(v)


def _task(v: Any, w: str, _: Mapping[str, Any]) -> str:
    return _s.text(v, w, max_len=64)


def _task_digest(v: Any, w: str, _: Mapping[str, Any]) -> str:
    return _s.text(v, w, _s.DIGEST)


def _datasets(v: Any, w: str, _: Mapping[str, Any]) -> tuple[Dataset, ...]:
    if not isinstance(v, list) or not v:
        _s.fail(w, "must be a non-empty list")
    names: set[str] = set()
    return tuple(Dataset.from_json(d, f"{w}[{i}]", names) for i, d in enumerate(v))


def _environment(v: Any, w: str, _: Mapping[str, Any]) -> Mapping[str, Any]:
    env = _s.obj(v, w)
    _s.plain_texts(env, w)
    return env


def _settings_v1(v: Any, w: str, _: Mapping[str, Any]) -> Mapping[str, Any]:
    return _s.obj(v, w)


def _seeds(v: Any, w: str, _: Mapping[str, Any]) -> Mapping[str, int]:
    seeds = _s.obj(v, w)
    for k, seed in seeds.items():
        _s.integer(seed, f"{w}.{k}", minimum=-(2 ** 53))
    return seeds


def _metrics(v: Any, w: str, before: Mapping[str, Any]) -> tuple[Metric, ...]:
    if not isinstance(v, list) or not v:
        _s.fail(w, "must be a non-empty list")
    names = {d.name for d in before["datasets"]}
    seen: set[tuple[str, str]] = set()
    return tuple(Metric.from_json(mv, f"{w}[{i}]", names, seen) for i, mv in enumerate(v))


def _evaluation_id(v: Any, w: str, _: Mapping[str, Any]) -> int:
    return _s.integer(v, w)


def _tolerances(v: Any, w: str, _: Mapping[str, Any]) -> Mapping[str, Tolerance]:
    return {metric: Tolerance(tol["relative"]) for metric, tol in check_tolerances(v, w).items()}


def _intervals(v: Any, w: str, before: Mapping[str, Any]) -> tuple[Interval, ...]:
    names = {d.name for d in before["datasets"]}
    if not isinstance(v, list) or len(v) > len(names):
        _s.fail(w, "must be a list of at most one interval per dataset")
    seen: set[str] = set()
    out = []
    for i, raw in enumerate(v):
        iv = Interval.from_json(raw, f"{w}[{i}]", names - seen)
        seen.add(iv.dataset)
        out.append(iv)
    return tuple(out)


def _outcomes(v: Any, w: str, before: Mapping[str, Any]) -> tuple[Outcome, ...]:
    sizes = {d.name: d.size for d in before["datasets"]}
    if not isinstance(v, list) or len(v) > len(sizes):
        _s.fail(w, "must be a list of at most one entry per dataset")
    seen: set[str] = set()
    out = []
    for i, raw in enumerate(v):
        o = Outcome.from_json(raw, f"{w}[{i}]", {k: n for k, n in sizes.items() if k not in seen})
        seen.add(o.dataset)
        out.append(o)
    return tuple(out)


def _backend_agrees(parsed: Mapping[str, Any]) -> None:
    """The backend a run asked for (``request.settings``), was given (``worker_settings``) and recorded
    (``environment.backend.name``) is one: boards class runs by it (an onnxruntime run is never ranked beside
    torch runs), so a bundle that says torch in one place and onnxruntime in another is refused, not classed by
    whichever field a reader happens to look at. Each absent means torch."""
    env = parsed.get("environment") or {}
    recorded = env.get("backend", {"name": _s.DEFAULT_BACKEND})
    if not isinstance(recorded, dict) or recorded.get("name") not in _s.BACKENDS:
        _s.fail("payload.environment.backend", f"must be an object whose 'name' is one of "
                                               f"{', '.join(map(repr, _s.BACKENDS))}, got {recorded!r:.60}")
    found = {"environment.backend.name": recorded["name"]}
    worker, request = parsed.get("worker_settings"), parsed.get("request")
    if worker is not None:
        found["worker_settings.backend"] = worker.get("backend", _s.DEFAULT_BACKEND)
    if request is not None:
        found["request.settings.backend"] = request.settings.get("backend", _s.DEFAULT_BACKEND)
    if len(set(found.values())) > 1:
        said = ", ".join(f"{k} {v!r}" for k, v in found.items())
        _s.fail("payload.environment.backend", f"the backend fields disagree ({said}; absent means "
                                               f"{_s.DEFAULT_BACKEND!r}): one run ran one backend")


def _part(cls: Any) -> Parser:
    """The parser of a field whose value is one ``cls`` (its ``from_json(value, where)``)."""
    return lambda v, w, _: cls.from_json(v, w)


@dataclass(frozen=True, slots=True, kw_only=True)
class Payload:
    """The signed fields of a bundle, version 1 or 2 (``version``); fields a version lacks are None."""

    created_at: str = signed(_created_at, type_="string", doc="UTC creation time, `YYYY-MM-DDTHH:MM:SS.mmmZ`")
    task: str = signed(_task, type_="string", doc="task name (`resources/tasks/<task>.yaml`)")
    task_digest: str | None = signed(
        _task_digest, type_="string", optional=True,
        doc="`sha256:` digest of the task's canonical definition (`dynadesk tasks show TASK`; "
            "[tasks.md](tasks.md#the-tasks-digest)): which labels, metric and fooling rule the scores are for")
    model: Model = signed(_part(Model), type_="object", doc=Model.DOC)
    datasets: tuple[Dataset, ...] = signed(_datasets, type_="list (≥1)", doc=Dataset.DOC)
    evaluator: Evaluator = signed(_part(Evaluator), type_="object", doc=Evaluator.DOC)
    runner: Runner = signed(_part(Runner), type_="object", doc=Runner.DOC)
    environment: Mapping[str, Any] = signed(
        _environment, type_="object",
        doc="hardware and software as captured by the evaluator (CPU, cores, GPU, Python, torch, ...); "
            "no string in it holds a control or invisible character; `backend` (an object whose `name` is "
            "`\"torch\"` or `\"onnxruntime\"`; absent: torch) must name the backend `worker_settings.backend` and "
            "`request.settings.backend` name (each absent: torch)")
    settings: Mapping[str, Any] | None = signed(
        _settings_v1, type_="object", versions=(1,),
        doc="version 1 only: one object, checked only as an object (see Version 1 below)")
    worker_settings: WorkerSettings | None = signed(
        _part(WorkerSettings), type_="object", versions=(2,), doc=WorkerSettings.DOC)
    request: Request | None = signed(_part(Request), type_="object", optional=True, versions=(2,), doc=Request.DOC)
    seeds: Mapping[str, int] = signed(_seeds, type_="object of ints", doc="random seeds (`seed`: the worker's)")
    metrics: tuple[Metric, ...] = signed(_metrics, type_="list (≥1)", doc=Metric.DOC)
    predictions: Predictions = signed(_part(Predictions), type_="object", doc=Predictions.DOC)
    submitter: Submitter = signed(_part(Submitter), type_="object", doc=Submitter.DOC)
    evaluation_id: int = signed(_evaluation_id, type_="int",
                                doc="the run's id in the submitting workspace (informative)")
    worker: Worker | None = signed(_part(Worker), type_="object", optional=True, doc=Worker.DOC)
    tolerances: Mapping[str, Tolerance] | None = signed(
        _tolerances, type_="object", optional=True,
        doc="measured-metric tolerances the submitter declares: metric name -> `{\"relative\": number in [0, 10]}` "
            "(a re-measured `a` matches the bundle's `b` when `|a - b| <= relative * |b|`); `bundle create` declares "
            "one per measured metric (0.5 throughput/latency, 0.25 memory); absent, the audit uses the defaults. "
            "See [audit.md](audit.md#tolerances-signed-payload-field-tolerances-optional)")
    intervals: tuple[Interval, ...] | None = signed(_intervals, type_="list", optional=True, doc=Interval.DOC)
    outcomes: tuple[Outcome, ...] | None = signed(_outcomes, type_="list", optional=True, doc=Outcome.DOC)
    version: int = field(default=2, metadata={"unsigned": True})  # the envelope's format version

    KEY: ClassVar[str] = "payload"

    @classmethod
    def signed_fields(cls, version: int | None = None) -> list[Any]:
        """The signed fields' declarations (``dataclasses.Field``), in parsing order; of ``version`` when given
        (worked out once per class and version: every upload parses one)."""
        found = _FIELDS.get((cls, version))
        if found is None:
            found = _FIELDS[(cls, version)] = [f for f in fields(cls) if not f.metadata.get("unsigned")
                                               and (version is None or version in f.metadata["versions"])]
        return found

    @classmethod
    def from_json(cls, value: Any, version: int = 2) -> Self:
        """The typed payload of the JSON object ``value``; :class:`BundleFormatError` naming the first bad field."""
        own = cls.signed_fields(version)
        required = {f.name for f in own if not f.metadata["optional"]}
        optional = {f.name for f in own if f.metadata["optional"]}
        _s.obj(value, cls.KEY, required | (optional & set(value) if isinstance(value, dict) else set()))
        parsed: dict[str, Any] = {}
        for f in own:
            if f.name in value:
                parsed[f.name] = f.metadata["parse"](value[f.name], f"{cls.KEY}.{f.name}", parsed)
        _backend_agrees(parsed)
        return cls(**parsed, version=version)

    def to_json(self) -> dict[str, Any]:
        """The JSON object this payload was parsed from (a fresh copy): its RFC 8785 bytes are the signed bytes."""
        out: dict[str, Any] = {}
        for f in self.signed_fields(self.version):
            value = getattr(self, f.name)
            if value is None and f.default is not MISSING:
                continue  # an optional field this payload does not have
            out[f.name] = copy.deepcopy(json_of(value))
        return out

    @property
    def created(self) -> datetime:
        """``created_at`` as an aware UTC datetime."""
        return parse_utc(self.created_at, "payload.created_at")

    @property
    def key_fingerprint(self) -> str:
        return self.submitter.key_fingerprint

    @property
    def dataset_names(self) -> list[str]:
        return [d.name for d in self.datasets]

    def metric_rows(self) -> list[dict[str, Any]]:
        """The metrics as the JSON rows the board's functions take (``sync.board.board_metrics``)."""
        return [m.to_json() for m in self.metrics]


def parse_payload(value: Any, version: int = 2) -> Payload:
    """The one entry from JSON to the model (``Payload`` looked up at call time, so a test that extends the
    model with a signed field reaches every reader that parses through here)."""
    return Payload.from_json(value, version)
