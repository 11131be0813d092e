"""A run as one typed value: what evaluation takes, what the store keeps, what a bundle signs, what an audit replays.

:class:`RunRequest` names the model, the test sets, the runner (and image), the
resource :class:`~dynadesk.orchestration.runners.Limits`, the worker's
:class:`RunSettings` and the run's purpose. ``to_dict()``/``from_dict()`` round-trip
exactly, so the request stored with a run (once: the store's ``request`` column, and
signed as a bundle's ``request``) is the request an audit re-run or a resume replays;
no keyword arguments are rebuilt from a merged settings bag.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from dynadesk import defaults
from dynadesk.errors import ConfigError
from dynadesk.evaluator.schema import BACKENDS, DEFAULT_BACKEND
from dynadesk.orchestration.limits import Limits
from dynadesk.orchestration.runner_registry import runner_spec

# evaluation: a board entry; audit: an auditor's re-run; preflight: a determinism check; bench: a benchmark
PURPOSES = ("evaluation", "audit", "preflight", "bench", "calibration")  # calibration: a SQuAD 2.0 dev run


def _expect_dict(raw: object, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be an object, got {type(raw).__name__}")
    return raw


def _known(cls: type, raw: dict[str, Any], where: str) -> None:
    unknown = sorted(set(raw) - {f.name for f in fields(cls)})
    if unknown:
        raise ConfigError(f"{where} has unknown field(s) {', '.join(unknown)}")


def default_limits(**overrides: Any) -> Limits:
    """Laptop-sized limits (up to 4 cores); ``None`` overrides keep the default."""
    base = Limits(cpus=defaults.cpus())
    return replace(base, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(frozen=True)
class RunSettings:
    """What the worker is asked to do, independent of where it runs."""

    batch_size: int = defaults.BATCH_SIZE
    seed: int = 0
    latency_samples: int = 64
    warmup: int = 8
    deterministic: bool = True
    # least duration of the timed windows, shared among the run's test sets (loadgen_fresh.window_seconds; a
    # one-set run's windows last this long, a 4-set run's a quarter of it, never under 0.1 s; docs/measurement.md)
    min_seconds: float = 0.5
    # SQuAD 2.0: the QA adapter abstains when its null score beats the best span's by more than this (None: the
    # default, 0 on a set scored by the v2.0 rule, never on v1.1 data); chosen on a dev set by 'eval --null-dev'
    null_threshold: float | None = None
    null_dev: str | None = None  # the dev set the threshold was chosen on (None: given, or the default)
    # what runs the forward passes (evaluator.schema.BACKENDS): torch, or onnxruntime on a graph the worker exports;
    # absent from to_dict() when torch, so every torch request keeps the bytes it always had (docs/measurement.md)
    backend: str = DEFAULT_BACKEND

    def __post_init__(self) -> None:
        for name in ("batch_size", "latency_samples"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"settings.{name} must be a positive integer, got {value!r}")
        for name in ("warmup", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"settings.{name} must be a non-negative integer, got {value!r}")
        if isinstance(self.min_seconds, bool) or not isinstance(self.min_seconds, (int, float)) or \
                not 0 <= self.min_seconds <= 60:
            raise ConfigError(f"settings.min_seconds must be a number of seconds from 0 to 60, "
                              f"got {self.min_seconds!r}")
        t = self.null_threshold
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t)):
            raise ConfigError(f"settings.null_threshold must be a finite number or null, got {t!r}")
        if self.null_dev is not None and (not isinstance(self.null_dev, str) or not self.null_dev):
            raise ConfigError(f"settings.null_dev must be a dataset name or null, got {self.null_dev!r}")
        if self.backend not in BACKENDS:
            raise ConfigError(f"settings.backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if not isinstance(self.deterministic, bool):
            raise ConfigError(f"settings.deterministic must be true or false, got {self.deterministic!r}")

    def to_dict(self) -> dict[str, Any]:
        """The settings; ``null_threshold`` only when set (a SQuAD 2.0 run) and ``backend`` only when not torch, so
        every other request reads as before."""
        return {k: v for k, v in asdict(self).items() if (k not in ("null_threshold", "null_dev") or v is not None)
                and (k != "backend" or v != DEFAULT_BACKEND)}

    @classmethod
    def from_dict(cls, raw: object) -> RunSettings:
        data = _expect_dict(raw, "request.settings")
        _known(cls, data, "request.settings")
        return cls(**data)


@dataclass(frozen=True)
class RunRequest:
    """One evaluation run, as asked for; ``datasets`` empty means every test set of the model's task."""

    model: str
    datasets: tuple[str, ...] = ()
    runner: str = "docker"
    image: str | None = None
    limits: Limits = field(default_factory=default_limits)
    settings: RunSettings = field(default_factory=RunSettings)
    purpose: str = "evaluation"

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError(f"request.model must be a model name, got {self.model!r}")
        if not isinstance(self.datasets, tuple) or not all(isinstance(d, str) and d for d in self.datasets):
            raise ConfigError(f"request.datasets must be a tuple of dataset names, got {self.datasets!r}")
        runner_spec(self.runner)  # ConfigError naming the registered runners
        if self.purpose not in PURPOSES:
            raise ConfigError(f"unknown run purpose '{self.purpose}' (use one of {', '.join(PURPOSES)})")
        if self.image is not None and (not isinstance(self.image, str) or not self.image):
            raise ConfigError(f"request.image must be an image name or Id, got {self.image!r}")

    @property
    def device(self) -> str:
        return "cuda" if self.limits.gpus else "cpu"

    @property
    def threads(self) -> int:
        return max(1, math.ceil(self.limits.cpus))

    def with_image(self, image: str | None) -> RunRequest:
        """This request pinned to ``image`` (a name or Id) when its runner runs in the evaluator image; unchanged
        for a runner without an image, or when ``image`` is None. The one place that asks the registry whether a
        runner uses an image (a re-measurement, an audit's re-run and a queue worker pin theirs here)."""
        pinned = runner_image(self.runner, image)
        return self if pinned is None else replace(self, image=pinned)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "datasets": list(self.datasets), "runner": self.runner, "image": self.image,
                "limits": self.limits.to_dict(), "settings": self.settings.to_dict(), "purpose": self.purpose}

    @classmethod
    def from_dict(cls, raw: object) -> RunRequest:
        """The request ``to_dict`` wrote; a clear :class:`ConfigError` names any field that is not understood."""
        data = dict(_expect_dict(raw, "request"))
        _known(cls, data, "request")
        if "model" not in data:
            raise ConfigError("request lacks 'model'")
        datasets = data.get("datasets", [])
        if not isinstance(datasets, list):
            raise ConfigError(f"request.datasets must be a list of dataset names, got {datasets!r}")
        data["datasets"] = tuple(datasets)
        if "limits" in data:
            data["limits"] = Limits.from_dict(data["limits"])
        if "settings" in data:
            data["settings"] = RunSettings.from_dict(data["settings"])
        return cls(**data)


def runner_image(runner: str, image: str | None) -> str | None:
    """``image`` when the runner ``runner`` runs in the evaluator image, else None: the one reading of the
    registry's ``uses_image`` (:meth:`RunRequest.with_image`, an audit's re-run, a queue worker)."""
    return image if image is not None and runner_spec(runner).uses_image else None


LEGACY_SETTINGS = ("batch_size", "seed", "latency_samples", "warmup", "limits")


def legacy_request(model: str, datasets: list[str], runner: str, settings: dict[str, Any],
                   purpose: str = "evaluation") -> RunRequest:
    """The request of a run (or bundle) recorded before requests were stored: from its flat settings."""
    missing = [k for k in LEGACY_SETTINGS if k not in settings]
    if missing:
        raise ConfigError(f"the recorded settings lack {', '.join(missing)}: the run cannot be repeated exactly")
    run_settings = RunSettings(**{k: settings[k] for k in ("batch_size", "seed", "latency_samples", "warmup")})
    return RunRequest(model=model, datasets=tuple(datasets), runner=runner, image=settings.get("image"),
                      limits=Limits.from_dict(settings["limits"]), settings=run_settings, purpose=purpose)
