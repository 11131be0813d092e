"""What a task file may add to Dynatask's expressiveness: default Dynascore weights and annotation metadata fields.

Why one module: both are declared once, in the task file, and read by several parts. The default weights
(Dynatask's ``aggregation_metric.default_weights``) are the one source of a board's weights when a query names
none: the local board (CLI and app, :class:`~dynadesk.scoring.leaderboard.LocalBoard`), the app's weight sliders
and the public board (a registered task's definition carries them). Metadata fields (Dynatask's
``metadata.create`` / ``metadata.validate``: e.g. a free-text ``rationale`` when an example is written, a
``flag_reason`` choice when a validator flags one) are checked here against what a person typed, stored beside
the example or vote (:mod:`dynadesk.store.annotation_meta`) and exported with them.

Task file form::

    aggregation_metric:
      type: dynascore
      default_weights: {perf: 2, throughput: 0, memory: 1, robustness: 2, fairness: 2}
    metadata:
      create:
        - {name: rationale, type: string, description: "why the model should get it wrong", required: true}
      validate:
        - {name: flag_reason, type: multiclass, labels: [offensive, unclear, wrong_label], when: flagged}

A metric a task does not weight keeps the registry's default (perf 4, others 1). Neither part changes the
digest of a task that declares nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dynadesk.errors import ConfigError, ValidationError
from dynadesk.evaluator.metric_registry import dynascore_defaults

if TYPE_CHECKING:
    from dynadesk.tasks import Task

FIELD_TYPES = ("string", "multiclass")
VOTE_KINDS = ("correct", "incorrect", "flagged")
MAX_WEIGHT = 1e6
MAX_FIELDS = 16
MAX_VALUE_CHARS = 2000

__all__ = ["EXTRA_SCHEMA", "MetadataField", "board_weights", "check_metadata", "default_weights", "extras_from_dict",
           "extras_to_dict", "parse_extras"]


@dataclass(frozen=True)
class MetadataField:
    """One field a person fills in when creating (or validating) an example. ``when``: for a validation field,
    the verdict it is asked with (None: every verdict)."""

    name: str
    type: str = "string"
    labels: tuple[str, ...] = ()
    description: str = ""
    required: bool = False
    when: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.labels:
            d["labels"] = list(self.labels)
        if self.description:
            d["description"] = self.description
        if self.required:
            d["required"] = True
        if self.when:
            d["when"] = self.when
        return d


def weighted_metrics() -> dict[str, float]:
    """The Dynascore metrics and the registry's default weight of each (perf 4, others 1)."""
    return {d.name: float(d.dynascore.weight) for d in dynascore_defaults() if d.dynascore is not None}


def _weights(raw: Any, source: str) -> tuple[tuple[str, float], ...]:
    where = f"{source}: aggregation_metric"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping (type: dynascore, default_weights: {{metric: weight}})")
    extra = set(raw) - {"type", "default_weights"}
    if extra:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
    if raw.get("type", "dynascore") != "dynascore":
        raise ConfigError(f"{where}.type must be 'dynascore', got {raw.get('type')!r}")
    weights = raw.get("default_weights", {})
    if not isinstance(weights, dict):
        raise ConfigError(f"{where}.default_weights must be a mapping of metric to weight")
    known = weighted_metrics()
    out = []
    for name, w in weights.items():
        if name not in known:
            raise ConfigError(f"{where}.default_weights names '{name}', not a Dynascore metric "
                              f"(use {', '.join(known)})")
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or not 0 <= w <= MAX_WEIGHT:
            raise ConfigError(f"{where}.default_weights.{name} must be a number from 0 to {MAX_WEIGHT:g}, got {w!r}")
        out.append((str(name), float(w)))
    if sum({**known, **dict(out)}.values()) <= 0:
        raise ConfigError(f"{where}.default_weights: every weight is 0; give at least one metric a weight")
    return tuple(sorted(out))


def _fields(raw: Any, where: str, validate: bool) -> tuple[MetadataField, ...]:
    if not isinstance(raw, list) or len(raw) > MAX_FIELDS:
        raise ConfigError(f"{where} must be a list of at most {MAX_FIELDS} fields")
    out: list[MetadataField] = []
    allowed = {"name", "type", "labels", "description", "required"} | ({"when"} if validate else set())
    for i, f in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(f, dict):
            raise ConfigError(f"{at} must be a mapping (name, type, ...)")
        extra = set(f) - allowed
        if extra:
            raise ConfigError(f"{at}: unknown field(s) {', '.join(sorted(extra))} "
                              f"(allowed: {', '.join(sorted(allowed))})")
        name = f.get("name")
        if not isinstance(name, str) or not name.isidentifier():
            raise ConfigError(f"{at}.name must be an identifier, got {name!r}")
        if any(o.name == name for o in out):
            raise ConfigError(f"{at}.name '{name}' is declared twice")
        kind = f.get("type", "string")
        if kind not in FIELD_TYPES:
            raise ConfigError(f"{at}.type must be one of {', '.join(FIELD_TYPES)}, got {kind!r}")
        labels = f.get("labels", [])
        if not isinstance(labels, list) or not all(isinstance(x, str) and x for x in labels):
            raise ConfigError(f"{at}.labels must be a list of choices")
        if kind == "multiclass" and len(set(labels)) < 2:
            raise ConfigError(f"{at}: a multiclass field needs at least two distinct labels")
        if kind == "string" and labels:
            raise ConfigError(f"{at}: labels apply to a multiclass field, not a string one")
        required = f.get("required", False)
        if not isinstance(required, bool):
            raise ConfigError(f"{at}.required must be true or false")
        when = f.get("when")
        if when is not None and when not in VOTE_KINDS:
            raise ConfigError(f"{at}.when must be one of {', '.join(VOTE_KINDS)}, got {when!r}")
        out.append(MetadataField(name, kind, tuple(labels), str(f.get("description", "")), required, when))
    return tuple(out)


def parse_extras(raw: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The :class:`~dynadesk.tasks.Task` keyword arguments a task file's ``aggregation_metric`` and ``metadata``
    give; a mistake is a :class:`ConfigError` naming the file and field."""
    out: dict[str, Any] = {}
    if "aggregation_metric" in raw:
        out["default_weights"] = _weights(raw["aggregation_metric"], source)
    meta = raw.get("metadata")
    if meta is not None:
        if not isinstance(meta, dict) or set(meta) - {"create", "validate"}:
            raise ConfigError(f"{source}: metadata must be a mapping with 'create' and/or 'validate' lists")
        out["create_metadata"] = _fields(meta.get("create", []), f"{source}: metadata.create", False)
        out["validate_metadata"] = _fields(meta.get("validate", []), f"{source}: metadata.validate", True)
    return out


def extras_to_dict(task: Task, d: dict[str, Any]) -> None:
    """``Task.to_dict``'s form of the extras, in place: only what a task declares (its digest is otherwise
    unchanged)."""
    for key in ("default_weights", "create_metadata", "validate_metadata"):
        d.pop(key, None)
    if task.default_weights:
        d["default_weights"] = {k: v for k, v in task.default_weights}
    if task.create_metadata:
        d["create_metadata"] = [f.to_dict() for f in task.create_metadata]
    if task.validate_metadata:
        d["validate_metadata"] = [f.to_dict() for f in task.validate_metadata]


def extras_from_dict(d: dict[str, Any]) -> None:
    """The reverse of :func:`extras_to_dict`, in place (``Task.from_dict``)."""
    d["default_weights"] = tuple(sorted((str(k), float(v)) for k, v in (d.get("default_weights") or {}).items()))
    for key in ("create_metadata", "validate_metadata"):
        d[key] = tuple(MetadataField(**{**f, "labels": tuple(f.get("labels", ()))}) for f in d.get(key) or ())


def _declared(task: Task | str | None) -> dict[str, float]:
    """The weights ``task``'s file declares (a task name is looked up; an unknown one, or None, declares none)."""
    if isinstance(task, str):
        from dynadesk.errors import NotFoundError
        from dynadesk.tasks import get_task

        try:
            task = get_task(task)
        except NotFoundError:
            return {}
    return dict(task.default_weights) if task is not None else {}


def default_weights(task: Task | str | None) -> dict[str, float]:
    """Every Dynascore metric's default weight on ``task``'s boards: the task file's, else the registry's (what
    the app's weight sliders start at)."""
    return {**weighted_metrics(), **_declared(task)}


def board_weights(task: Task | str | None, asked: Mapping[str, float] | None) -> dict[str, float]:
    """The weights a board query scores with: the ones the task file declares, overridden by the ones the query
    asked for (a metric named by neither keeps the registry's default, which the board applies). A task that
    declares none leaves the query as it was."""
    return {**_declared(task), **dict(asked or {})}


def check_metadata(fields: tuple[MetadataField, ...], values: Mapping[str, Any] | None, what: str,
                   verdict: str | None = None) -> dict[str, str]:
    """``values`` checked against the declared ``fields`` (those asked with ``verdict`` for a validation): each
    a declared name, text (a multiclass one of its labels), required ones present. Returns the stripped values."""
    asked = [f for f in fields if f.when is None or f.when == verdict]
    given = dict(values or {})
    names = {f.name for f in asked}
    unknown = sorted(set(given) - names)
    if unknown:
        declared = ", ".join(sorted(names)) or "none"
        raise ValidationError(f"{what}: metadata field(s) {', '.join(unknown)} not declared by the task"
                              + (f" for a '{verdict}' vote" if verdict else "") + f" (declared: {declared})")
    out: dict[str, str] = {}
    for f in asked:
        value = given.get(f.name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if f.required:
                raise ValidationError(f"{what}: metadata field '{f.name}' is required"
                                      + (f" ({f.description})" if f.description else ""))
            continue
        if not isinstance(value, str) or len(value) > MAX_VALUE_CHARS:
            raise ValidationError(f"{what}: metadata field '{f.name}' must be text of at most {MAX_VALUE_CHARS}"
                                  f" characters")
        value = value.strip()
        if f.type == "multiclass" and value not in f.labels:
            raise ValidationError(f"{what}: metadata field '{f.name}' is {value!r}, not one of "
                                  f"{', '.join(f.labels)}")
        out[f.name] = value
    return out


EXTRA_SCHEMA: tuple[tuple[str, str, str, str], ...] = (
    ("aggregation_metric", "mapping", "no", "how the boards combine metrics (Dynatask's aggregation_metric)"),
    ("aggregation_metric.type", "string", "no", "`dynascore` (the only one)"),
    ("aggregation_metric.default_weights", "mapping", "no", "metric -> weight (0 to 1e6) every board of the task "
     "uses unless a query sets one; unnamed metrics keep the default (perf 4, others 1)"),
    ("metadata", "mapping", "no", "extra fields annotators fill in, stored with the example or vote and exported"),
    ("metadata.create", "list of mappings", "no", "fields asked when an example is written"),
    ("metadata.validate", "list of mappings", "no", "fields asked when an example is validated"),
    ("metadata.*[].name", "identifier", "yes", "the field's name"),
    ("metadata.*[].type", "string", "no", "`string` (free text, default) or `multiclass` (one of `labels`)"),
    ("metadata.*[].labels", "list of strings", "multiclass", "the choices"),
    ("metadata.*[].description", "string", "no", "shown to the annotator"),
    ("metadata.*[].required", "boolean", "no", "refuse a submission without it (default false)"),
    ("metadata.validate[].when", "string", "no", "ask it only with this verdict: correct, incorrect or flagged"),
)
