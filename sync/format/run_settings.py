"""The run's settings as a bundle signs them: ``worker_settings`` and ``request`` (with its limits and settings).

Each settings-like part declares its fields' kinds with :func:`setting` (a new setting is one line); the
generic :class:`FieldSet` checks them with the format's messages (``bundle payload.worker_settings.seed: ...``)
and remembers which optional fields were present, so an absent field and one present as null keep their bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from dynadesk.sync.format import schema as _s

__all__ = ["FieldSet", "Limits", "Request", "RequestSettings", "WorkerSettings", "describe", "setting"]

S = TypeVar("S", bound="FieldSet")
_SPECS: dict[type, dict[str, tuple[str, bool]]] = {}


def setting(kind: str, required: bool, doc: str = "") -> Any:
    """A field of a settings-like part: ``kind`` (see :func:`_scalar`), whether every payload has it."""
    return field(default=None, metadata={"kind": kind, "required": required, "doc": doc})


KIND_TEXT = {"count": "int ≥ 1", "natural": "int ≥ 0", "integer": "int", "seconds": "0-60", "positive": "number > 0",
             "bool": "bool", "device": "`\"cpu\"`/`\"cuda\"`", "threads": "int ≥ 1 or null", "gpus": "string or null",
             "finite": "number", "name": "string", "backend": "`\"torch\"`/`\"onnxruntime\"`"}


def _scalar(kind: str, v: Any, w: str) -> None:
    if kind in ("count", "natural", "integer"):
        _s.integer(v, w, minimum={"count": 1, "natural": 0, "integer": -(2 ** 53)}[kind])
    elif kind == "bool":
        _s.boolean(v, w)
    elif kind == "device":
        if v not in ("cpu", "cuda"):
            _s.fail(w, f"must be 'cpu' or 'cuda', got {v!r:.40}")
    elif kind == "threads":
        if v is not None:
            _s.integer(v, w, minimum=1)
    elif kind == "gpus":
        if v is not None:
            _s.text(v, w, max_len=128)
    elif kind == "finite":
        _s.number(v, w)
    elif kind == "name":
        _s.text(v, w, max_len=128)
    elif kind == "backend":
        if v not in _s.BACKENDS:
            _s.fail(w, f"must be one of {', '.join(map(repr, _s.BACKENDS))}, got {v!r:.40}")
    elif kind == "seconds":
        if not 0 <= _s.number(v, w) <= 60:
            _s.fail(w, f"must be a number of seconds from 0 to 60, got {v!r:.40}")
    elif _s.number(v, w) <= 0:  # positive
        _s.fail(w, f"must be a number above 0, got {v!r:.40}")


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldSet:
    """An object of known scalar fields, each of its declared kind; ``present``: the fields it has (an optional
    field absent and one present as null differ in the signed bytes)."""

    present: frozenset[str] = frozenset()

    @classmethod
    def spec(cls) -> dict[str, tuple[str, bool]]:
        """name -> (kind, required), in declaration order (worked out once per class: every upload parses one)."""
        found = _SPECS.get(cls)
        if found is None:
            found = _SPECS[cls] = {f.name: (f.metadata["kind"], f.metadata["required"]) for f in fields(cls)
                                   if "kind" in f.metadata}
        return found

    @classmethod
    def from_json(cls: type[S], value: Any, where: str) -> S:
        spec = cls.spec()
        o = _s.obj(value, where)
        _s.obj(o, where, {k for k, (_, required) in spec.items() if required or k in o})
        for name, v in o.items():
            _scalar(spec[name][0], v, f"{where}.{name}")
        return cls(present=frozenset(o), **o)

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.spec() if name in self.present}

    def get(self, name: str, default: Any = None) -> Any:
        """A setting by name (``default`` when this object does not have it): for code that walks the settings."""
        return getattr(self, name) if name in self.present else default


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSettings(FieldSet):
    DOC: ClassVar[str] = "what the evaluator worker was given (its `spec.json` settings), each field checked"

    batch_size: int = setting("count", True)
    device: str = setting("device", True)
    deterministic: bool = setting("bool", True)
    seed: int = setting("integer", True)
    threads: int | None = setting("threads", False)
    latency_samples: int | None = setting("count", False)
    warmup: int | None = setting("natural", False)
    batched_queries: int | None = setting("count", False)
    trials: int | None = setting("count", False)
    min_seconds: float | None = setting("seconds", False)
    noise_retries: int | None = setting("natural", False)
    allow_pickle: bool | None = setting("bool", False)
    dedicated_cgroup: bool | None = setting("bool", False)
    null_threshold: float | None = setting("finite", False, "SQuAD 2.0 abstention")
    backend: str | None = setting("backend", False, "what ran the forward passes; absent: torch")


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits(FieldSet):
    cpus: float = setting("positive", True)
    memory_bytes: int = setting("count", True)
    pids: int | None = setting("count", False)
    timeout_s: float = setting("positive", True)
    tmpfs_bytes: int | None = setting("count", False)
    out_bytes: int | None = setting("count", False)
    gpus: str | None = setting("gpus", False)


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestSettings(FieldSet):
    batch_size: int = setting("count", True)
    seed: int = setting("natural", True)
    latency_samples: int = setting("count", True)
    warmup: int = setting("natural", True)
    deterministic: bool | None = setting("bool", False)
    min_seconds: float | None = setting("seconds", False)
    null_threshold: float | None = setting("finite", False)
    null_dev: str | None = setting("name", False)
    backend: str | None = setting("backend", False)


def describe(cls: type[FieldSet]) -> str:
    """``name`` (kind) per field, required first: a settings part's line in docs/bundle-format.md."""
    spec = cls.spec()
    always = ", ".join(f"`{n}` ({KIND_TEXT[k]})" for n, (k, r) in spec.items() if r)
    optional = ", ".join(f"`{n}` ({KIND_TEXT[k]})" for n, (k, r) in spec.items() if not r)
    return f"{always} always; optional {optional}; no other field" if optional else f"{always}; no other field"


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    DOC: ClassVar[str] = ("the run as asked (`RunRequest.to_dict()`), what an audit re-run replays; absent only for a "
                          "run recorded before requests whose flat settings lacked a part of one")

    model: str
    datasets: tuple[str, ...]
    runner: str
    image: str | None
    limits: Limits
    settings: RequestSettings
    purpose: str

    @classmethod
    def from_json(cls, value: Any, where: str) -> Request:
        r = _s.obj(value, where, {"model", "datasets", "runner", "image", "limits", "settings", "purpose"})
        _s.text(r["model"], f"{where}.model")
        if not isinstance(r["datasets"], list) or len(r["datasets"]) > 256:
            _s.fail(f"{where}.datasets", "must be a list of at most 256 dataset names")
        for i, name in enumerate(r["datasets"]):
            _s.text(name, f"{where}.datasets[{i}]")
        _s.text(r["runner"], f"{where}.runner", _s.RUNNER_NAME, max_len=32)
        if r["image"] is not None:
            _s.text(r["image"], f"{where}.image")
        if r["purpose"] not in _s.PURPOSES:
            _s.fail(f"{where}.purpose", f"must be one of {', '.join(_s.PURPOSES)}, got {r['purpose']!r:.40}")
        limits = Limits.from_json(r["limits"], f"{where}.limits")
        return cls(model=r["model"], datasets=tuple(r["datasets"]), runner=r["runner"], image=r["image"],
                   limits=limits, settings=RequestSettings.from_json(r["settings"], f"{where}.settings"),
                   purpose=r["purpose"])

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "datasets": list(self.datasets), "runner": self.runner, "image": self.image,
                "limits": self.limits.to_json(), "settings": self.settings.to_json(), "purpose": self.purpose}
