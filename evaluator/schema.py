"""The evaluation spec (host -> worker) and result files (worker -> host), versioned.

The host writes ``spec.json``; the worker, which may run in a container built
from an older or newer checkout, refuses a spec whose ``schema_version`` it does
not know instead of guessing. Result files carry the same version. Core imports
this module; it imports only the standard library.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from dynadesk.evaluator.metric_registry import UnitsView

_T = TypeVar("_T")

SCHEMA_VERSION = 1

SPEC_FILE = "spec.json"
PREDICTIONS_FILE = "predictions.jsonl"
METRICS_FILE = "metrics.json"
PROFILE_FILE = "profile.json"
ENVIRONMENT_FILE = "environment.json"
LOG_FILE = "worker.log"
PARTS_DIR = "parts"  # one finished predictions file per dataset; what resume keeps
PROGRESS_PREFIX = "@@dynadesk "  # worker stdout lines carrying a JSON progress event
# the timed windows are driven by the host over its own socket (dynadesk/orchestration/loadgen.py); the worker
# says this in its hello, and a host speaking another version refuses it
LOADGEN_PROTOCOL = "dynadesk-loadgen/2"

ROLES = ("test", "perturbation")
PERTURBATION_KINDS = ("robustness", "fairness")

# Metric name -> (unit, deterministic), a live view of the metric registry (evaluator/metric_registry.py).
METRIC_UNITS: Mapping[str, tuple[str, bool]] = UnitsView()


class SpecError(ValueError):
    """A spec or result file is malformed; the message names the field."""


@dataclass
class DatasetSpec:
    """One dataset file under the data folder, in the order the worker runs it."""

    name: str
    file: str  # relative to the data folder
    sha256: str  # of the file bytes; the worker checks it before use
    size: int
    role: str = "test"
    derived_from: str | None = None  # perturbation sets: the test set they derive from
    kind: str | None = None  # perturbation sets: robustness | fairness
    suite: str | None = None


BACKENDS = ("torch", "onnxruntime")
"""What runs the forward passes (``settings.backend``): torch eager, or onnxruntime on a graph the worker exports
from the loaded model (:mod:`dynadesk.evaluator.backends`). The bundle format's ``BACKENDS`` is the same tuple."""
DEFAULT_BACKEND = "torch"


@dataclass
class Settings:
    batch_size: int = 32
    device: str = "cpu"  # cpu | cuda
    deterministic: bool = True
    seed: int = 0
    threads: int | None = None  # None: from the cgroup CPU quota (or the visible cores)
    latency_samples: int = 64  # batch-1 queries per timed window, per test set (the whole set when smaller)
    warmup: int = 8  # calls discarded before each measurement's windows
    batched_queries: int = 128  # batched queries (examples) per timed window, per test set
    trials: int = 3  # timed windows per measurement; the figure is their median
    min_seconds: float = 0.1  # a window also runs at least this long (cycling its sample)
    noise_retries: int = 2  # a noisy measurement is taken again at most this many times
    allow_pickle: bool = False  # only a sandboxed runner may turn this on
    dedicated_cgroup: bool = False  # True in a container: the cgroup peak is this run's own
    null_threshold: float | None = None  # SQuAD 2.0 abstention threshold (adapters.QuestionAnsweringAdapter)
    backend: str = DEFAULT_BACKEND  # torch | onnxruntime (BACKENDS)

    def validate(self) -> None:
        for name in ("batch_size", "latency_samples", "batched_queries", "trials"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise SpecError(f"settings.{name} must be a positive integer, got {v!r}")
        for name in ("warmup", "noise_retries"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise SpecError(f"settings.{name} must be a non-negative integer, got {v!r}")
        if isinstance(self.min_seconds, bool) or not isinstance(self.min_seconds, (int, float)) or \
                not 0 <= self.min_seconds <= 60:
            raise SpecError(f"settings.min_seconds must be a number of seconds from 0 to 60, got {self.min_seconds!r}")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise SpecError(f"settings.threads must be a positive integer or null, got {self.threads!r}")
        t = self.null_threshold
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or t != t or abs(t) == 1e999):
            raise SpecError(f"settings.null_threshold must be a finite number or null, got {t!r}")
        if self.device not in ("cpu", "cuda"):
            raise SpecError(f"settings.device must be 'cpu' or 'cuda', got {self.device!r}")
        if self.backend not in BACKENDS:
            raise SpecError(f"settings.backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")


@dataclass
class Spec:
    task: dict[str, Any]
    model: dict[str, Any]  # {"name", "digest", "manifest"}
    datasets: list[DatasetSpec]
    settings: Settings = field(default_factory=Settings)
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The spec; ``settings.backend`` only when not torch, so a torch run's spec is what an older evaluator (an
        audit re-run in a bundle's recorded image) reads, and an older one refuses an onnxruntime spec by name."""
        out = asdict(self)
        if out["settings"].get("backend") == DEFAULT_BACKEND:
            del out["settings"]["backend"]
        return out

    def write(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                              encoding="utf-8")

    @classmethod
    def from_dict(cls, raw: Any) -> Spec:
        if not isinstance(raw, dict):
            raise SpecError(f"spec must be a JSON object, got {type(raw).__name__}")
        version = raw.get("schema_version")
        if version != SCHEMA_VERSION:
            raise SpecError(f"spec schema_version {version!r} is not supported (this evaluator reads "
                            f"{SCHEMA_VERSION}); rebuild the image with 'dynadesk image build'")
        for key, kind in (("task", dict), ("model", dict), ("datasets", list)):
            if not isinstance(raw.get(key), kind):
                raise SpecError(f"spec field '{key}' must be a {kind.__name__}")
        manifest = raw["model"].get("manifest")
        if not isinstance(manifest, dict):
            raise SpecError("spec field 'model.manifest' must be an object")
        datasets = [_dataclass(DatasetSpec, d, f"datasets[{i}]") for i, d in enumerate(raw["datasets"])]
        settings = _dataclass(Settings, raw.get("settings") or {}, "settings")
        settings.validate()
        names = [d.name for d in datasets]
        if len(set(names)) != len(names):
            raise SpecError("spec field 'datasets' names a dataset twice")
        tests = {d.name for d in datasets if d.role == "test"}
        if not tests:
            raise SpecError("spec lists no dataset with role 'test'")
        for d in datasets:
            if d.role not in ROLES:
                raise SpecError(f"dataset '{d.name}': role must be one of {ROLES}, got {d.role!r}")
            if d.role == "perturbation" and (d.derived_from not in tests or d.kind not in PERTURBATION_KINDS):
                raise SpecError(f"dataset '{d.name}': a perturbation set needs derived_from (a test set of "
                                f"the spec) and kind in {PERTURBATION_KINDS}")
            if "/" in d.file or d.file.startswith("."):
                raise SpecError(f"dataset '{d.name}': file must be a plain name in the data folder, got {d.file!r}")
        return cls(task=raw["task"], model=raw["model"], datasets=datasets, settings=settings,
                   schema_version=version)

    @classmethod
    def read(cls, path: Path) -> Spec:
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SpecError(f"cannot read spec {path}: {exc}") from exc
        return cls.from_dict(raw)


def _dataclass(cls: type[_T], raw: Any, where: str) -> _T:  # cls is a dataclass
    if not isinstance(raw, dict):
        raise SpecError(f"spec field '{where}' must be an object")
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    unknown = set(raw) - known
    if unknown:
        raise SpecError(f"spec field '{where}' has unknown key(s) {', '.join(sorted(unknown))}")
    try:
        return cls(**raw)
    except TypeError as exc:
        raise SpecError(f"spec field '{where}': {exc}") from exc


def metric_row(dataset: str, metric: str, value: float) -> dict[str, Any]:
    """One ``metrics.json`` value with its unit and whether reruns must reproduce it."""
    unit, deterministic = METRIC_UNITS[metric]
    return {"dataset": dataset, "metric": metric, "value": float(value), "unit": unit,
            "deterministic": deterministic}


def read_json(path: Path, what: str) -> dict[str, Any]:
    """A result file, checked for the schema version the host understands."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError(f"cannot read {what} {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        found = data.get("schema_version") if isinstance(data, dict) else None
        raise SpecError(f"{what} {path} has schema_version {found!r}, expected {SCHEMA_VERSION}")
    return data


def evaluator_version() -> str:
    """``sha256:`` over the evaluator package's own source files (names and bytes).

    The image build, bundles and audits record it: a container whose evaluator code
    differs from the host's is visible as a different version, not a silent mismatch.
    """
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root).as_posix()
        h.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\n")
    return "sha256:" + h.hexdigest()
