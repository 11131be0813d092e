"""Tasks as typed config: ``resources/tasks/*.yaml`` read into frozen dataclasses.

A task file is validated as it is read; any problem raises :class:`ConfigError`
naming the file and the field, so a typo never becomes a silent default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dynadesk.errors import ConfigError, NotFoundError

METRICS = ("accuracy", "macro_f1", "squad_f1", "exact_match")
OUTPUT_KINDS = ("label", "span")
FOOLED_RULES = ("label_mismatch", "answer_f1_below")
ROBUSTNESS_SUITES = ("case", "contractions", "punctuation", "whitespace", "zero_width", "homoglyphs", "typos",
                     "char_typos", "misspellings", "split_words")
FAIRNESS_SUITES = ("gender", "ethnic_names")


@dataclass(frozen=True)
class InputField:
    name: str
    description: str = ""
    is_context: bool = False


@dataclass(frozen=True)
class FooledRule:
    """How annotation decides that the model was fooled."""

    kind: str
    threshold: float | None = None


@dataclass(frozen=True)
class Task:
    name: str
    title: str
    description: str
    inputs: tuple[InputField, ...]
    output_kind: str
    labels: tuple[str, ...]
    metric: str
    fooled_rule: FooledRule
    secondary_metrics: tuple[str, ...] = ()
    multi_gold: bool = False
    span_of: str | None = None
    perturb_fields: tuple[str, ...] = ()
    robustness_suites: tuple[str, ...] = ()
    fairness_suites: tuple[str, ...] = ()
    votes_needed: int = 3
    source: str = field(default="", compare=False)

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.inputs)

    @property
    def context_field(self) -> str | None:
        for f in self.inputs:
            if f.is_context:
                return f.name
        return None

    @property
    def gold_field(self) -> str:
        """Name of the gold field in a dataset example: ``label`` or ``answers``."""
        return "answers" if self.output_kind == "span" else "label"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form; the evaluator spec carries this."""
        d = asdict(self)
        d.pop("source", None)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        d = dict(d)
        d["inputs"] = tuple(InputField(**f) for f in d["inputs"])
        d["fooled_rule"] = FooledRule(**d["fooled_rule"])
        for key in ("labels", "secondary_metrics", "perturb_fields", "robustness_suites", "fairness_suites"):
            d[key] = tuple(d.get(key) or ())
        return cls(**d)


def _need(mapping: dict[str, Any], key: str, kind: type | tuple[Any, ...], where: str) -> Any:
    if key not in mapping:
        raise ConfigError(f"{where}: missing field '{key}'")
    value = mapping[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ConfigError(f"{where}: field '{key}' must be {_kind_name(kind)}, got {type(value).__name__}")
    return value


def _kind_name(kind: type | tuple[Any, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return kind.__name__


def _str_list(mapping: dict[str, Any], key: str, where: str, allowed: tuple[str, ...] | None = None) -> tuple[str, ...]:
    value = mapping.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: field '{key}' must be a list of strings")
    if allowed is not None:
        for v in value:
            if v not in allowed:
                raise ConfigError(f"{where}: field '{key}' has unknown value '{v}' (allowed: {', '.join(allowed)})")
    return tuple(value)


_TOP_KEYS = {"name", "title", "description", "inputs", "output", "metric", "secondary_metrics",
             "fooled_rule", "perturbations", "validation"}


def parse_task(raw: Any, source: str) -> Task:
    """Validate a task mapping (as loaded from YAML) and build a :class:`Task`."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: a task file must be a mapping, got {type(raw).__name__}")
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"{source}: unknown field(s) {', '.join(sorted(unknown))}")
    name = _need(raw, "name", str, source)
    if not name.isidentifier():
        raise ConfigError(f"{source}: field 'name' must be an identifier, got '{name}'")
    inputs_raw = _need(raw, "inputs", list, source)
    if not inputs_raw:
        raise ConfigError(f"{source}: field 'inputs' must list at least one input")
    inputs = []
    for i, f in enumerate(inputs_raw):
        where = f"{source}: inputs[{i}]"
        if not isinstance(f, dict):
            raise ConfigError(f"{where} must be a mapping")
        extra = set(f) - {"name", "description", "is_context"}
        if extra:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
        inputs.append(InputField(
            name=_need(f, "name", str, where),
            description=str(f.get("description", "")),
            is_context=bool(f.get("is_context", False)),
        ))
    names = [f.name for f in inputs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: field 'inputs' has duplicate names")
    output = _need(raw, "output", dict, source)
    kind = _need(output, "kind", str, f"{source}: output")
    if kind not in OUTPUT_KINDS:
        raise ConfigError(f"{source}: output.kind must be one of {', '.join(OUTPUT_KINDS)}, got '{kind}'")
    labels: tuple[str, ...] = ()
    span_of = None
    if kind == "label":
        labels = _str_list(output, "labels", f"{source}: output")
        if len(labels) < 2 or len(set(labels)) != len(labels):
            raise ConfigError(f"{source}: output.labels must list at least two distinct labels")
    else:
        span_of = _need(output, "span_of", str, f"{source}: output")
        if span_of not in names:
            raise ConfigError(f"{source}: output.span_of names '{span_of}', which is not an input")
    metric = _need(raw, "metric", str, source)
    if metric not in METRICS:
        raise ConfigError(f"{source}: field 'metric' must be one of {', '.join(METRICS)}, got '{metric}'")
    rule_raw = _need(raw, "fooled_rule", dict, source)
    rule_kind = _need(rule_raw, "kind", str, f"{source}: fooled_rule")
    if rule_kind not in FOOLED_RULES:
        raise ConfigError(f"{source}: fooled_rule.kind must be one of {', '.join(FOOLED_RULES)}")
    threshold = rule_raw.get("threshold")
    if rule_kind == "answer_f1_below":
        if not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
            raise ConfigError(f"{source}: fooled_rule.threshold must be a number in (0, 1]")
    pert = raw.get("perturbations", {}) or {}
    if not isinstance(pert, dict):
        raise ConfigError(f"{source}: field 'perturbations' must be a mapping")
    perturb_fields = _str_list(pert, "fields", f"{source}: perturbations", tuple(names))
    validation = raw.get("validation", {}) or {}
    votes = validation.get("votes_needed", 3) if isinstance(validation, dict) else None
    if not isinstance(votes, int) or isinstance(votes, bool) or votes < 1:
        raise ConfigError(f"{source}: validation.votes_needed must be a positive integer")
    return Task(
        name=name,
        title=str(raw.get("title", name)),
        description=str(raw.get("description", "")).strip(),
        inputs=tuple(inputs),
        output_kind=kind,
        labels=labels,
        metric=metric,
        secondary_metrics=_str_list(raw, "secondary_metrics", source, METRICS),
        multi_gold=bool(output.get("multi_gold", False)),
        span_of=span_of,
        fooled_rule=FooledRule(rule_kind, float(threshold) if threshold is not None else None),
        perturb_fields=perturb_fields,
        robustness_suites=_str_list(pert, "robustness", f"{source}: perturbations", ROBUSTNESS_SUITES),
        fairness_suites=_str_list(pert, "fairness", f"{source}: perturbations", FAIRNESS_SUITES),
        votes_needed=votes,
        source=source,
    )


def load_task_file(path: Path) -> Task:
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read task file: {exc}") from exc
    task = parse_task(raw, str(path))
    if Path(path).stem != task.name:
        raise ConfigError(f"{path}: field 'name' is '{task.name}' but the file is named '{Path(path).stem}.yaml'")
    return task


def default_tasks_dir() -> Path:
    from dynadesk.resources import TASKS_DIR

    return TASKS_DIR


_CACHE: dict[tuple[Any, ...], dict[str, Task]] = {}


def load_tasks(tasks_dir: Path | None = None) -> dict[str, Task]:
    """Every task in ``tasks_dir`` (default: the bundled ones), by name.

    Parsed once per folder state (file names, sizes, mtimes): callers such as a
    leaderboard slider ask on every change, and a changed file is re-read.
    """
    folder = Path(tasks_dir) if tasks_dir else default_tasks_dir()
    paths = sorted(folder.glob("*.yaml"))
    key = (str(folder), tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in paths))
    cached = _CACHE.get(key)
    if cached is None:
        cached = {}
        for path in paths:
            task = load_task_file(path)
            cached[task.name] = task
        _CACHE[key] = cached
    return dict(cached)


def get_task(name: str, tasks_dir: Path | None = None) -> Task:
    tasks = load_tasks(tasks_dir)
    if name not in tasks:
        raise NotFoundError(f"unknown task '{name}' (known: {', '.join(sorted(tasks))})")
    return tasks[name]
