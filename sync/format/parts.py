"""The parts of a signed bundle payload (:mod:`dynadesk.sync.format.payload`), each a frozen type.

Each part's ``from_json(value, where)`` checks the JSON value field by field, in the order and with the messages
of the format's checks (:mod:`dynadesk.sync.format.schema`), and ``to_json()`` gives it back exactly (optional
fields absent stay absent), so the canonical bytes of a parsed payload are the bytes that were signed. The
settings-like parts (:class:`WorkerSettings`, :class:`Limits`, :class:`RequestSettings`, and the
:class:`Request` holding two of them) are in :mod:`dynadesk.sync.format.run_settings`, re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from dynadesk.sync.format import schema as _s
from dynadesk.sync.format.run_settings import (
    FieldSet,
    Limits,
    Request,
    RequestSettings,
    WorkerSettings,
    describe,
)

__all__ = ["Dataset", "Evaluator", "Interval", "Limits", "Lineage", "Metric", "Model", "Outcome", "Predictions",
           "Request", "RequestSettings", "Runner", "Served", "Submitter", "Tolerance", "Worker", "WorkerSettings",
           "describe", "json_of", "FieldSet"]


def json_of(value: Any) -> Any:
    """The JSON value of a part, a tuple of parts, a mapping or a scalar (parts write themselves)."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, tuple):
        return [json_of(v) for v in value]
    if isinstance(value, Mapping):
        return {k: json_of(v) for k, v in value.items()}
    return value


# ------------------------------------------------------------------------------------------------ the model
@dataclass(frozen=True, slots=True)
class Served:
    endpoint: str
    model: str
    weights_digest: str | None = None

    @classmethod
    def from_json(cls, value: Any, where: str) -> Served:
        sv = _s.obj(value, where, {"endpoint", "model"} | ({"weights_digest"} & set(_s.obj(value, where))))
        for key in sv:
            _s.text(sv[key], f"{where}.{key}", max_len=2048)
        return cls(sv["endpoint"], sv["model"], sv.get("weights_digest"))

    def to_json(self) -> dict[str, Any]:
        out = {"endpoint": self.endpoint, "model": self.model}
        return out | ({"weights_digest": self.weights_digest} if self.weights_digest is not None else {})


@dataclass(frozen=True, slots=True)
class Source:
    """A dataset a trained model's lineage names (``train`` entries carry a ``weight``)."""

    dataset: str
    digest: str
    weight: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dataset": self.dataset, "digest": self.digest}
        return out | ({"weight": self.weight} if self.weight is not None else {})


@dataclass(frozen=True, slots=True)
class Lineage:
    """A trained model's lineage (``dynadesk models train``): base, training and dev datasets, settings."""

    base_name: str
    base_digest: str
    train: tuple[Source, ...]
    dev: Source
    hyperparameters: Mapping[str, str | int | float | bool]
    code_version: str

    @classmethod
    def from_json(cls, value: Any, where: str) -> Lineage:
        lin = _s.obj(value, where, {"base", "train", "dev", "hyperparameters", "code_version"})
        base = _s.obj(lin["base"], f"{where}.base", {"name", "digest"})
        _s.text(base["name"], f"{where}.base.name")
        _s.text(base["digest"], f"{where}.base.digest", _s.ANY_DIGEST)
        if not isinstance(lin["train"], list) or not lin["train"] or len(lin["train"]) > 64:
            _s.fail(f"{where}.train", "must be a list of 1 to 64 datasets")
        train = []
        for i, src in enumerate(lin["train"]):
            s = _s.obj(src, f"{where}.train[{i}]", {"dataset", "digest", "weight"})
            _s.text(s["dataset"], f"{where}.train[{i}].dataset")
            _s.text(s["digest"], f"{where}.train[{i}].digest", _s.ANY_DIGEST)
            w = s["weight"]
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 < w <= 100:
                _s.fail(f"{where}.train[{i}].weight", f"must be a number in (0, 100], got {w!r:.40}")
            train.append(Source(s["dataset"], s["digest"], w))
        dev = _s.obj(lin["dev"], f"{where}.dev", {"dataset", "digest"})
        _s.text(dev["dataset"], f"{where}.dev.dataset")
        _s.text(dev["digest"], f"{where}.dev.digest", _s.ANY_DIGEST)
        hp = _s.obj(lin["hyperparameters"], f"{where}.hyperparameters")
        if len(hp) > 64 or not all(isinstance(v, (str, int, float, bool)) for v in hp.values()):
            _s.fail(f"{where}.hyperparameters", "must be an object of at most 64 scalar settings")
        _s.text(lin["code_version"], f"{where}.code_version", max_len=64)
        return cls(base["name"], base["digest"], tuple(train), Source(dev["dataset"], dev["digest"]), hp,
                   lin["code_version"])

    def to_json(self) -> dict[str, Any]:
        return {"base": {"name": self.base_name, "digest": self.base_digest},
                "train": [s.to_json() for s in self.train], "dev": self.dev.to_json(),
                "hyperparameters": dict(self.hyperparameters), "code_version": self.code_version}


@dataclass(frozen=True, slots=True)
class Model:
    DOC: ClassVar[str] = (
        "`name` (registered name; the server checks it for look-alikes), `digest` (content digest of the model "
        "folder, `<algorithm>:<hex>`); optional `served` for a served model: `{endpoint, model, weights_digest "
        "(optional)}`; optional `lineage` for a model made by `dynadesk models train`: `{base: {name, digest}, "
        "train: [{dataset, digest, weight}] (1–64), dev: {dataset, digest}, hyperparameters: {name: scalar} (≤64), "
        "code_version}` (also in the model's manifest, so covered by `digest`)")

    name: str
    digest: str
    served: Served | None = None
    lineage: Lineage | None = None

    @classmethod
    def from_json(cls, value: Any, where: str) -> Model:
        m = _s.obj(value, where)
        m = _s.obj(m, where, {"name", "digest"} | ({"lineage", "served"} & set(m)))
        _s.text(m["name"], f"{where}.name", plain=False)
        _s.text(m["digest"], f"{where}.digest", _s.ANY_DIGEST)
        served = Served.from_json(m["served"], f"{where}.served") if "served" in m else None
        lineage = Lineage.from_json(m["lineage"], f"{where}.lineage") if "lineage" in m else None
        return cls(m["name"], m["digest"], served, lineage)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "digest": self.digest}
        if self.served is not None:
            out["served"] = self.served.to_json()
        if self.lineage is not None:
            out["lineage"] = self.lineage.to_json()
        return out


@dataclass(frozen=True, slots=True)
class Dataset:
    DOC: ClassVar[str] = (
        "each `{name, split, digest: \"sha256:<hex>\", size: int}`; names unique; two optional labels: "
        "`answerable_only: true` when the dataset was imported without its unanswerable questions (SQuAD 2.0 "
        "without `--squad-v2`: not the dataset as published), and `robustness_suites: [\"dynadesk\"]` or "
        "`[\"dynaboard-augly\"]`, the suite set its robustness rests on ([perturbations.md](perturbations.md)); "
        "absent where they do not apply")

    name: str
    split: str
    digest: str
    size: int
    answerable_only: bool = False  # signed only when true
    robustness_suites: tuple[str, ...] | None = None

    @classmethod
    def from_json(cls, value: Any, where: str, names: set[str]) -> Dataset:
        """One dataset entry; ``names``: the names before it (a name twice is refused), this one added."""
        labels = {"answerable_only", "robustness_suites"} & set(value) if isinstance(value, dict) else set()
        d = _s.obj(value, where, {"name", "split", "digest", "size"} | labels)
        if _s.text(d["name"], f"{where}.name") in names:
            _s.fail(f"{where}.name", f"names dataset '{d['name']}' twice")
        names.add(d["name"])
        _s.text(d["split"], f"{where}.split", max_len=64)
        _s.text(d["digest"], f"{where}.digest", _s.DIGEST)
        _s.integer(d["size"], f"{where}.size")
        if "answerable_only" in d and d["answerable_only"] is not True:
            _s.fail(f"{where}.answerable_only", f"must be true when present, got {d['answerable_only']!r:.40}")
        suites = d.get("robustness_suites")
        if "robustness_suites" in d:
            if not isinstance(suites, list) or not 1 <= len(suites) <= 4 or len(set(map(str, suites))) != len(suites):
                _s.fail(f"{where}.robustness_suites", "must be a list of 1 to 4 distinct suite set names")
            for j, name in enumerate(suites):
                _s.text(name, f"{where}.robustness_suites[{j}]", _s.SUITE_SET_NAME, max_len=32)
        return cls(d["name"], d["split"], d["digest"], d["size"], "answerable_only" in d,
                   None if suites is None else tuple(suites))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "split": self.split, "digest": self.digest, "size": self.size}
        if self.answerable_only:
            out["answerable_only"] = True
        if self.robustness_suites is not None:
            out["robustness_suites"] = list(self.robustness_suites)
        return out


@dataclass(frozen=True, slots=True)
class Evaluator:
    DOC: ClassVar[str] = (
        "`image_digest` (string or null: the evaluator image Id of a Docker run), `version` (string or null: "
        "`sha256:` over the evaluator source files); Docker runs add `source_date_epoch` (int ≥ 0: the "
        "`SOURCE_DATE_EPOCH` the image was built with) and `input_digest` (`sha256:` over the build's inputs), "
        "together and only with an `image_digest`, so an auditor rebuilds the Id with "
        "`dynadesk image build --epoch N`")

    image_digest: str | None
    version: str | None
    source_date_epoch: int | None = None
    input_digest: str | None = None

    @classmethod
    def from_json(cls, value: Any, where: str) -> Evaluator:
        ev = _s.obj(value, where)
        build = set(_s.IMAGE_BUILD_KEYS) & set(ev)
        _s.obj(ev, where, {"image_digest", "version"} | build)
        for k in ("image_digest", "version"):
            if ev[k] is not None:
                _s.text(ev[k], f"{where}.{k}")
        if build:
            if ev["image_digest"] is None:
                _s.fail(where, "records an image build but no image Id")
            missing = [k for k in _s.IMAGE_BUILD_KEYS if k not in ev]
            if missing:
                _s.fail(where, f"records an image build without {', '.join(missing)}")
            _s.integer(ev["source_date_epoch"], f"{where}.source_date_epoch")
            _s.text(ev["input_digest"], f"{where}.input_digest", _s.DIGEST)
        return cls(ev["image_digest"], ev["version"], ev.get("source_date_epoch"), ev.get("input_digest"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"image_digest": self.image_digest, "version": self.version}
        if self.source_date_epoch is not None:
            out |= {"source_date_epoch": self.source_date_epoch, "input_digest": self.input_digest}
        return out


@dataclass(frozen=True, slots=True)
class Runner:
    DOC: ClassVar[str] = (
        "`kind` (a runner name, `^[a-z][a-z0-9_-]{0,31}$`: `\"docker\"`, `\"local\"` or a runner a lab registered; "
        "the format checks the form, not a fixed list), `sandboxed` (bool): how the run was isolated")

    kind: str
    sandboxed: bool

    @classmethod
    def from_json(cls, value: Any, where: str) -> Runner:
        r = _s.obj(value, where, {"kind", "sandboxed"})
        _s.text(r["kind"], f"{where}.kind", _s.RUNNER_NAME, max_len=32)
        return cls(r["kind"], _s.boolean(r["sandboxed"], f"{where}.sandboxed"))

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "sandboxed": self.sandboxed}


@dataclass(frozen=True, slots=True)
class Metric:
    DOC: ClassVar[str] = (
        "`{dataset, metric, value, unit, deterministic}`; `dataset` is one of `datasets[].name` or `\"\"` for "
        "whole-run figures; `value` finite; `deterministic` true for perf/robustness/fairness (reruns must "
        "reproduce them), false for measured throughput/latency/memory; (dataset, metric) unique. "
        "`robustness`/`fairness` (0–100): for each source example with perturbed copies of that kind, the task's "
        "metric (accuracy, macro-F1, SQuAD F1) of the copies' predictions against the model's original prediction, "
        "averaged over those source examples (Dynaboard's `get_unperturbed_percent`, unrounded); "
        "`robustness_sources`/`fairness_sources` (unit `examples`): how many source examples it rests on (summed for "
        "`\"\"`); `robustness_low_confidence`/`fairness_low_confidence` (unit `flag`): 1 when that is under 30, "
        "else 0 (`\"\"`: 1 if any test set is)")

    dataset: str
    metric: str
    value: float
    unit: str
    deterministic: bool

    @classmethod
    def from_json(cls, value: Any, where: str, names: set[str], seen: set[tuple[str, str]]) -> Metric:
        """One metric row; ``names``: the bundle's datasets; ``seen``: the (dataset, metric) pairs before it."""
        mv = _s.obj(value, where, {"dataset", "metric", "value", "unit", "deterministic"})
        if not isinstance(mv["dataset"], str) or (mv["dataset"] and mv["dataset"] not in names):
            _s.fail(f"{where}.dataset", f"must be '' or one of the bundle's datasets, got {mv['dataset']!r:.60}")
        key = (mv["dataset"], _s.text(mv["metric"], f"{where}.metric", max_len=64))
        if key in seen:
            _s.fail(where, f"repeats metric '{key[1]}' for dataset '{key[0]}'")
        seen.add(key)
        _s.number(mv["value"], f"{where}.value")
        _s.text(mv["unit"], f"{where}.unit", max_len=32)
        return cls(mv["dataset"], mv["metric"], mv["value"], mv["unit"],
                   _s.boolean(mv["deterministic"], f"{where}.deterministic"))

    def to_json(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "metric": self.metric, "value": self.value, "unit": self.unit,
                "deterministic": self.deterministic}


@dataclass(frozen=True, slots=True)
class Predictions:
    DOC: ClassVar[str] = ("`digest` (`sha256:` of the `predictions.jsonl` file bytes), `merkle_root` (64 hex: the "
                          "Merkle root over the prediction records, below), `count` (int: the records, its leaves)")

    digest: str
    merkle_root: str
    count: int

    @classmethod
    def from_json(cls, value: Any, where: str) -> Predictions:
        pr = _s.obj(value, where, {"digest", "merkle_root", "count"})
        _s.text(pr["digest"], f"{where}.digest", _s.DIGEST)
        _s.text(pr["merkle_root"], f"{where}.merkle_root", _s.HEX64)
        return cls(pr["digest"], pr["merkle_root"], _s.integer(pr["count"], f"{where}.count"))

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "merkle_root": self.merkle_root, "count": self.count}


@dataclass(frozen=True, slots=True)
class Submitter:
    DOC: ClassVar[str] = "`key_fingerprint`: `sha256:<hex>` of the raw 32-byte Ed25519 public key"

    key_fingerprint: str

    @classmethod
    def from_json(cls, value: Any, where: str) -> Submitter:
        s = _s.obj(value, where, {"key_fingerprint"})
        return cls(_s.text(s["key_fingerprint"], f"{where}.key_fingerprint", _s.DIGEST))

    def to_json(self) -> dict[str, Any]:
        return {"key_fingerprint": self.key_fingerprint}


@dataclass(frozen=True, slots=True)
class Worker:
    DOC: ClassVar[str] = "a queued run's worker: `{name, key_fingerprint}`, the key that signed its result"

    name: str
    key_fingerprint: str

    @classmethod
    def from_json(cls, value: Any, where: str) -> Worker:
        wk = _s.obj(value, where, {"name", "key_fingerprint"})
        _s.text(wk["name"], f"{where}.name", max_len=128)
        return cls(wk["name"], _s.text(wk["key_fingerprint"], f"{where}.key_fingerprint", _s.DIGEST))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "key_fingerprint": self.key_fingerprint}


@dataclass(frozen=True, slots=True)
class Interval:
    DOC: ClassVar[str] = (
        "the host's seeded 95% bootstrap interval of the task metric, one object per test set: `dataset` (one of "
        "`datasets`, once), `metric`, `low` <= `high`, `level` (0-100), `resamples`, `seed` (16 hex digits), "
        "`method`. An audit's re-run reproduces it bit for bit. See [board.md](board.md#intervals-ties-and-snapshots)")

    dataset: str
    metric: str
    low: float
    high: float
    level: float
    resamples: int
    seed: str
    method: str

    @classmethod
    def from_json(cls, value: Any, where: str, allowed: set[str]) -> Interval:
        iv = _s.obj(value, where, {"dataset", "metric", "low", "high", "level", "resamples", "seed", "method"})
        if iv["dataset"] not in allowed:
            _s.fail(f"{where}.dataset", f"must name one of the bundle's datasets once, got {iv['dataset']!r:.60}")
        _s.text(iv["metric"], f"{where}.metric", max_len=64)
        _s.text(iv["method"], f"{where}.method", max_len=64)
        _s.text(iv["seed"], f"{where}.seed", _s.SEED_HEX)
        low, high = _s.number(iv["low"], f"{where}.low"), _s.number(iv["high"], f"{where}.high")
        if low > high:
            _s.fail(where, f"low {low!r} is above high {high!r}")
        if not 0 < _s.number(iv["level"], f"{where}.level") < 100:
            _s.fail(f"{where}.level", f"must be a percentage between 0 and 100, got {iv['level']!r:.20}")
        _s.integer(iv["resamples"], f"{where}.resamples", minimum=1)
        return cls(iv["dataset"], iv["metric"], iv["low"], iv["high"], iv["level"], iv["resamples"], iv["seed"],
                   iv["method"])

    def to_json(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "metric": self.metric, "low": self.low, "high": self.high,
                "level": self.level, "resamples": self.resamples, "seed": self.seed, "method": self.method}


@dataclass(frozen=True, slots=True)
class Tolerance:
    """A measured metric's declared tolerance: a re-measured ``a`` matches the signed ``b`` when
    ``|a - b| <= relative * |b|`` (:mod:`dynadesk.audit.tolerances`)."""

    relative: float

    def to_json(self) -> dict[str, Any]:
        return {"relative": self.relative}


OUTCOME_ENCODINGS = ("u16x100", "label-pairs-u8")


@dataclass(frozen=True, slots=True)
class Outcome:
    DOC: ClassVar[str] = (
        "each test set's per-example outcomes, two bytes per example, base64 (`dataset`, `metric`, `n` = the "
        "dataset's size, `data_sha256`: the run's data file, `encoding`: `u16x100` per-example score x100 or "
        "`label-pairs-u8` (predicted, gold) label codes with `allowed` flags, `data`; with `u16x100`, `one_answer: "
        "true` only when one answer (a span's normalised text, an abstention, or a label) was given for every example "
        "while the golds vary: a constant predictor, shown as a baseline); what a paired bootstrap "
        "between two bundles on the same data reads. Derived from the predictions the Merkle root commits to: an "
        "audit's re-run re-derives them and compares (`outcomes.<dataset>`)")

    dataset: str
    metric: str
    n: int
    data_sha256: str
    encoding: str
    data: str
    allowed: tuple[bool, ...] | None = None
    one_answer: bool = False  # signed only when true (a constant predictor): older bundles read the same

    @classmethod
    def from_json(cls, value: Any, where: str, sizes: Mapping[str, int]) -> Outcome:
        o = _s.obj(value, where)
        if o.get("encoding") not in OUTCOME_ENCODINGS:
            _s.fail(f"{where}.encoding",
                    f"must be one of {', '.join(OUTCOME_ENCODINGS)}, got {o.get('encoding')!r:.40}")
        _s.obj(o, where, {"dataset", "metric", "n", "data_sha256", "encoding", "data"}
               | ({"allowed"} if o["encoding"] == "label-pairs-u8" else set())
               | ({"one_answer"} if o["encoding"] == "u16x100" and "one_answer" in o else set()))
        if "one_answer" in o and o["one_answer"] is not True:  # present only when true (a constant predictor)
            _s.fail(f"{where}.one_answer", f"must be true when present, got {o['one_answer']!r:.20}")
        if o["dataset"] not in sizes:
            _s.fail(f"{where}.dataset", f"must name one of the bundle's datasets once, got {o['dataset']!r:.60}")
        _s.text(o["metric"], f"{where}.metric", max_len=64)
        _s.text(o["data_sha256"], f"{where}.data_sha256", _s.DIGEST)
        n = _s.integer(o["n"], f"{where}.n")
        if n != sizes[o["dataset"]]:
            _s.fail(f"{where}.n", f"is {n}, but dataset '{o['dataset']}' has {sizes[o['dataset']]} examples")
        data = _s.text(o["data"], f"{where}.data", _s.BASE64, max_len=4 * (2 * n + 2) // 3 + 4)
        if len(data) != 4 * ((2 * n + 2) // 3):
            _s.fail(f"{where}.data", f"must be base64 of {2 * n} bytes (two per example)")
        allowed = None
        if "allowed" in o:
            if not isinstance(o["allowed"], list) or not 0 < len(o["allowed"]) <= 255:
                _s.fail(f"{where}.allowed", "must be a list of 1 to 255 flags")
            allowed = tuple(_s.boolean(flag, f"{where}.allowed[{j}]") for j, flag in enumerate(o["allowed"]))
        return cls(o["dataset"], o["metric"], n, o["data_sha256"], o["encoding"], data, allowed,
                   o.get("one_answer") is True)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dataset": self.dataset, "metric": self.metric, "n": self.n,
                               "data_sha256": self.data_sha256, "encoding": self.encoding, "data": self.data}
        return (out | ({"allowed": list(self.allowed)} if self.allowed is not None else {})
                | ({"one_answer": True} if self.one_answer else {}))
