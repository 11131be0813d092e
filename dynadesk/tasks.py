"""Tasks as typed config: ``resources/tasks/*.yaml`` read into frozen dataclasses.

A task file is validated as it is read; any problem raises :class:`ConfigError`
naming the file and the field, so a typo never becomes a silent default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dynadesk import task_sources
from dynadesk import taskfile_guard as guard
from dynadesk.errors import ConfigError, NotFoundError
from dynadesk.evaluator.kinds import FOOLED_RULES as _FOOLED_TESTS
from dynadesk.evaluator.kinds import KINDS, OutputKind, kind_of
from dynadesk.task_extras import EXTRA_SCHEMA, MetadataField, extras_from_dict, extras_to_dict, parse_extras
from dynadesk.task_guidelines import Guidelines, parse_guidelines
from dynadesk.task_sources import register_task_source, unregister_task_source  # noqa: F401 - their old home


def metric_names() -> tuple[str, ...]:
    """The task metrics a task file may choose: every output kind's (the metric registry says how each is
    computed); read at each check, so a metric or kind registered at run time counts."""
    return tuple(dict.fromkeys(m for k in KINDS.values() for m in k.metrics))


METRICS = metric_names()  # as at import; the checks call metric_names()
OUTPUT_KINDS = tuple(KINDS)
FOOLED_RULES = tuple(_FOOLED_TESTS)
ROBUSTNESS_SUITES = ("case", "contractions", "punctuation", "whitespace", "zero_width", "homoglyphs", "typos",
                     "char_typos", "misspellings", "split_words")
FAIRNESS_SUITES = ("gender", "ethnic_names")


@dataclass(frozen=True)
class InputField:
    name: str
    description: str = ""
    is_context: bool = False
    optional: bool = False  # may be empty or absent (Dynabench's optional context): read as ""


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
    baselines: tuple[str, ...] = ()  # models the task owner names baselines: shown unranked (scoring.baselines)
    guidelines: Guidelines | None = field(default=None, compare=False)  # not part of the digest
    default_weights: tuple[tuple[str, float], ...] = ()  # (metric, weight): every board's default (task_extras)
    create_metadata: tuple[MetadataField, ...] = ()  # fields asked when an example is written
    validate_metadata: tuple[MetadataField, ...] = ()  # ... when one is validated

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
    def kind(self) -> OutputKind:
        """The output kind object (label or span): gold field, output key, metrics, checks, the fooled rule."""
        return kind_of(self)

    @property
    def gold_field(self) -> str:
        """Name of the gold field in a dataset example: ``label`` or ``answers``."""
        return self.kind.gold_field

    def is_fooled(self, output: Any, golds: Any) -> bool:
        """The task's fooled rule: does the model's checked ``output`` miss every acceptable gold?"""
        return self.kind.fooled(self.fooled_rule.kind, self.fooled_rule.threshold, output, self.kind.golds(golds))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form; the evaluator spec carries this."""
        d = asdict(self)
        d.pop("source", None)
        if not d["baselines"]:  # absent unless set: a task without baselines keeps its digest
            d.pop("baselines")
        for f in d["inputs"]:  # only an optional input says so: every other task's dict (and digest) is unchanged
            if not f["optional"]:
                del f["optional"]
        d.pop("guidelines", None)
        extras_to_dict(self, d)  # only what the task declares: an undeclaring task's digest is unchanged
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        d = dict(d)
        d["inputs"] = tuple(InputField(**f) for f in d["inputs"])
        d["fooled_rule"] = FooledRule(**d["fooled_rule"])
        for key in ("labels", "secondary_metrics", "perturb_fields", "robustness_suites", "fairness_suites",
                    "baselines"):
            d[key] = tuple(d.get(key) or ())
        extras_from_dict(d)
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
             "fooled_rule", "perturbations", "validation", "baselines", "guidelines", "aggregation_metric",
             "metadata"}


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
        extra = set(f) - {"name", "description", "is_context", "optional"}
        if extra:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
        inputs.append(InputField(
            name=_need(f, "name", str, where),
            description=str(f.get("description", "")),
            is_context=bool(f.get("is_context", False)),
            optional=_need(f, "optional", bool, where) if "optional" in f else False,
        ))
    names = [f.name for f in inputs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: field 'inputs' has duplicate names")
    output = _need(raw, "output", dict, source)
    kind = _need(output, "kind", str, f"{source}: output")
    if kind not in KINDS:  # the registry itself, so a kind registered later is known
        raise ConfigError(f"{source}: output.kind must be one of {', '.join(KINDS)}, got '{kind}'")
    labels: tuple[str, ...] = ()
    span_of = None
    out_kind = KINDS[kind]
    if out_kind.chooses_labels:
        labels = _str_list(output, "labels", f"{source}: output")
        if len(labels) < 2 or len(set(labels)) != len(labels):
            raise ConfigError(f"{source}: output.labels must list at least two distinct labels")
    else:
        span_of = _need(output, "span_of", str, f"{source}: output")
        if span_of not in names:
            raise ConfigError(f"{source}: output.span_of names '{span_of}', which is not an input")
        if any(f.name == span_of and f.optional for f in inputs):
            raise ConfigError(f"{source}: output.span_of names '{span_of}', an optional input: answers need its text")
    metric = _need(raw, "metric", str, source)
    if metric not in metric_names():
        raise ConfigError(f"{source}: field 'metric' must be one of {', '.join(metric_names())}, got '{metric}'")
    for m in (metric, *_str_list(raw, "secondary_metrics", source, metric_names())):
        if m not in out_kind.metrics:
            raise ConfigError(f"{source}: metric '{m}' does not apply to a {kind} task "
                              f"(use {', '.join(out_kind.metrics)})")
    rule_raw = _need(raw, "fooled_rule", dict, source)
    rule_kind = _need(rule_raw, "kind", str, f"{source}: fooled_rule")
    if rule_kind not in _FOOLED_TESTS:
        raise ConfigError(f"{source}: fooled_rule.kind must be one of {', '.join(_FOOLED_TESTS)}")
    if rule_kind not in out_kind.fooled_rules:
        raise ConfigError(f"{source}: fooled_rule.kind '{rule_kind}' does not apply to a {kind} task "
                          f"(use {', '.join(out_kind.fooled_rules)})")
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
        secondary_metrics=_str_list(raw, "secondary_metrics", source, metric_names()),
        multi_gold=bool(output.get("multi_gold", False)),
        span_of=span_of,
        fooled_rule=FooledRule(rule_kind, float(threshold) if threshold is not None else None),
        perturb_fields=perturb_fields,
        robustness_suites=_str_list(pert, "robustness", f"{source}: perturbations", ROBUSTNESS_SUITES),
        fairness_suites=_str_list(pert, "fairness", f"{source}: perturbations", FAIRNESS_SUITES),
        votes_needed=votes,
        source=source,
        baselines=_str_list(raw, "baselines", source),
        guidelines=parse_guidelines(raw.get("guidelines"), source),
        **parse_extras(raw, source),
    )


def load_task_file(path: Path) -> Task:
    raw = guard.load_yaml(guard.read_task_text(Path(path)), str(path))[1]  # no aliases, size-capped
    task = parse_task(raw, str(path))
    if Path(path).stem != task.name:
        raise ConfigError(f"{path}: field 'name' is '{task.name}' but the file is named '{Path(path).stem}.yaml'")
    return task


def default_tasks_dir() -> Path:
    from dynadesk.resources import TASKS_DIR

    return TASKS_DIR


_CACHE: dict[tuple[Any, ...], dict[str, Task]] = {}


def load_tasks(tasks_dir: Path | None = None) -> dict[str, Task]:
    """Every task in ``tasks_dir`` (default: the bundled ones plus the open workspaces' own), by name.

    Parsed once per folder state (file names, sizes, mtimes): callers such as a
    leaderboard slider ask on every change, and a changed file is re-read.
    """
    if tasks_dir is None and (pinned := task_sources.pinned()) is not None:
        return dict(pinned)
    folder = Path(tasks_dir) if tasks_dir else default_tasks_dir()
    found = _load_folder(folder)
    if tasks_dir is None:
        for name, task in task_sources.workspace_tasks().items():
            found.setdefault(name, task)
        task_sources.pin(found)
    return found


def _load_folder(folder: Path) -> dict[str, Task]:
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


def bundled_task_names() -> frozenset[str]:
    return frozenset(load_tasks(default_tasks_dir()))


def task_digest(task: Task) -> str:
    """The canonical digest of a task's definition (``sha256:`` of its RFC 8785 JSON form).

    Two labs' rows mean the same task exactly when their digests are equal: labels, metric,
    inputs and fooling rule are all inside it.
    """
    from dynadesk.canonical import digest

    return digest(task.to_dict())


# The task file's fields: (path, type, required, what). docs/tasks.md's schema table is generated
# from this list (tests/tasks/test_tasks_workspace.py checks that the two agree).
TASK_FILE_SCHEMA: tuple[tuple[str, str, str, str], ...] = (
    ("name", "identifier", "yes", "the task's name; must not be a bundled task's name"),
    ("title", "string", "no", "a display title (default: the name)"),
    ("description", "string", "no", "what the task asks for"),
    ("inputs", "list of mappings", "yes", "the example's input fields, at least one"),
    ("inputs[].name", "string", "yes", "the field's name, distinct within the task"),
    ("inputs[].description", "string", "no", "shown to annotators"),
    ("inputs[].is_context", "boolean", "no", "the field annotators are given rather than write"),
    ("output", "mapping", "yes", "what a model predicts"),
    ("output.kind", "string", "yes", "one of: " + ", ".join(OUTPUT_KINDS)),
    ("output.labels", "list of strings", "label tasks", "at least two distinct labels"),
    ("output.span_of", "string", "span tasks", "the input field the answer span is taken from"),
    ("output.multi_gold", "boolean", "no", "examples may carry several gold answers"),
    ("metric", "string", "yes", "one of: " + ", ".join(metric_names())),
    ("secondary_metrics", "list of strings", "no", "more metrics reported, from: " + ", ".join(metric_names())),
    ("fooled_rule", "mapping", "yes", "when annotation counts the model as fooled"),
    ("fooled_rule.kind", "string", "yes", "one of: " + ", ".join(FOOLED_RULES)),
    ("fooled_rule.threshold", "number in (0, 1]", "answer_f1_below", "the answer F1 below which it is fooled"),
    ("perturbations", "mapping", "no", "robustness and fairness evaluation"),
    ("perturbations.fields", "list of strings", "no", "the input fields perturbed (names of inputs)"),
    ("perturbations.robustness", "list of strings", "no", "from: " + ", ".join(ROBUSTNESS_SUITES)),
    ("perturbations.fairness", "list of strings", "no", "from: " + ", ".join(FAIRNESS_SUITES)),
    ("validation", "mapping", "no", "annotation validation"),
    ("validation.votes_needed", "positive integer", "no", "validator votes to settle an example (default 3): N "
     "`correct` votes, or N `incorrect`, or N `flagged` (N of one kind, as Dynabench counts; an owner's vote decides "
     "at once)"),
    ("guidelines", "mapping", "no", "what annotators read first (the hub shows it); not part of the task's digest"),
    ("guidelines.text", "string", "no", "the instructions"),
    ("guidelines.good", "list of mappings", "no", "good examples: text, and optional label and why"),
    ("guidelines.bad", "list of mappings", "no", "examples to avoid: text, and optional why"),
) + EXTRA_SCHEMA


def _line_map(node: Any, path: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> None:
    """Path (keys and list indexes) -> 1-based line of each YAML node, for error messages."""
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[(*path, key)] = key_node.start_mark.line + 1
            _line_map(value_node, (*path, key), lines)
            lines[(*path, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*path, i), lines)


def _problems(raw: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """Every problem of a task mapping, each with the path of the field it is about."""
    out: list[tuple[tuple[Any, ...], str]] = []
    for key in sorted(set(raw) - _TOP_KEYS):
        out.append(((key,), f"unknown field '{key}'"))
    for key in ("name", "inputs", "output", "metric", "fooled_rule"):
        if key not in raw:
            out.append(((), f"missing field '{key}'"))
    name = raw.get("name")
    if "name" in raw and (not isinstance(name, str) or not name.isidentifier()):
        out.append((("name",), f"field 'name' must be an identifier, got {name!r}"))
    elif isinstance(name, str) and name in bundled_task_names():
        out.append((("name",), f"field 'name' is '{name}', which shadows the bundled task '{name}'"))
    names: list[str] = []
    inputs = raw.get("inputs")
    if "inputs" in raw and (not isinstance(inputs, list) or not inputs):
        out.append((("inputs",), "field 'inputs' must list at least one input"))
    for i, f in enumerate(inputs if isinstance(inputs, list) else []):
        if not isinstance(f, dict):
            out.append((("inputs", i), f"inputs[{i}] must be a mapping"))
            continue
        for key in sorted(set(f) - {"name", "description", "is_context", "optional"}):
            out.append((("inputs", i, key), f"inputs[{i}]: unknown field '{key}'"))
        if not isinstance(f.get("name"), str):
            out.append((("inputs", i), f"inputs[{i}]: missing field 'name' (a string)"))
        elif f["name"] in names:
            out.append((("inputs", i, "name"), f"inputs[{i}]: duplicate input name '{f['name']}'"))
        else:
            names.append(f["name"])
    output = raw.get("output")
    if "output" in raw and not isinstance(output, dict):
        out.append((("output",), "field 'output' must be a mapping"))
    if isinstance(output, dict):
        kind = output.get("kind")
        out_kind = KINDS.get(kind) if isinstance(kind, str) else None
        if out_kind is None:
            out.append((("output", "kind") if "kind" in output else ("output",),
                        f"output.kind must be one of {', '.join(KINDS)}, got {kind!r}"))
        elif out_kind.chooses_labels:
            labels = output.get("labels")
            if not isinstance(labels, list) or not all(isinstance(v, str) for v in labels):
                out.append((("output", "labels") if "labels" in output else ("output",),
                            "output.labels must be a list of label names"))
            else:
                if len(set(labels)) < 2:
                    out.append((("output", "labels"),
                                f"output.labels must list at least two labels, got {len(set(labels))}"))
        else:
            span_of = output.get("span_of")
            if not isinstance(span_of, str):
                out.append((("output",), "output.span_of must name the input the span is taken from"))
            elif isinstance(inputs, list) and span_of not in names:
                out.append((("output", "span_of"),
                            f"output.span_of names '{span_of}', which is not an input (inputs: {', '.join(names)})"))
    metric = raw.get("metric")
    if "metric" in raw and metric not in metric_names():
        out.append((("metric",), f"field 'metric' is {metric!r}, not a registered metric "
                                 f"({', '.join(metric_names())})"))
    rule = raw.get("fooled_rule")
    if "fooled_rule" in raw:
        if not isinstance(rule, dict) or rule.get("kind") not in _FOOLED_TESTS:
            out.append((("fooled_rule",), f"fooled_rule.kind must be one of {', '.join(_FOOLED_TESTS)}"))
    out.extend(guard.file_problems(raw, load_tasks()))  # caps, duplicates, label text, look-alike names
    if not out:
        try:
            parse_task(raw, "")
        except ConfigError as exc:
            message = str(exc).removeprefix(": ")
            field = message.split(":", 1)[0].split(".")[0].split("[")[0].strip()
            out.append(((field,) if field in raw else (), message))
    return out


def parse_task_text(text: str, source: str) -> Task:
    """Validate a task file's text; every problem is named with its field and line, all at once.

    Raises :class:`ConfigError` listing each problem on its own line (``SOURCE:LINE: message``);
    nothing is half-accepted: a file with any problem is refused whole.
    """
    node, raw = guard.load_yaml(text, source)
    if not isinstance(raw, dict) or node is None:
        raise ConfigError(f"{source}:1: a task file must be a mapping, got {type(raw).__name__}")
    lines: dict[tuple[Any, ...], int] = {}
    _line_map(node, (), lines)
    problems = _problems(raw)
    if problems:
        rendered = []
        for path, message in problems:
            while path not in lines and path:
                path = path[:-1]
            rendered.append(f"{source}:{lines.get(path, 1)}: {message}")
        raise ConfigError(f"{source}: task file refused ({len(problems)} problem(s)):\n" + "\n".join(rendered))
    return parse_task(raw, source)
