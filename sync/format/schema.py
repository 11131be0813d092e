"""The leaf checks of a bundle payload: texts, digests, integers, numbers, booleans, times, plain strings.

The payload's structure is the typed model (:mod:`dynadesk.sync.format.payload` and its parts in
:mod:`dynadesk.sync.format.parts`), which parses through these checks: every problem names its JSON path
(``payload.metrics[3].value``), so a user holding a broken bundle knows what is wrong and where. Attestations
(:mod:`dynadesk.sync.format.attestation`) use the same checks.
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import datetime
from typing import Any, NoReturn

from dynadesk.errors import BundleFormatError, HiddenTextError
from dynadesk.sync.format.timestamps import parse_utc

HEX64 = re.compile(r"^[0-9a-f]{64}$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
ANY_DIGEST = re.compile(r"^[a-z0-9-]{2,16}:[0-9a-f]{32,128}$")  # model folders: algorithm named
# a runner's name: the format checks its form; which runners exist is the host's runner registry
# (dynadesk.orchestration.runner_registry), which a leaf cannot see, so a new runner's bundles are accepted
RUNNER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")

# A dataset entry's optional labels' suite set names ("dynadesk" or "dynaboard-augly"); the entry is a
# dynadesk.sync.format.parts.Dataset.
SUITE_SET_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
# evaluator.source_date_epoch / evaluator.input_digest: the image build's inputs, recorded for Docker runs so an
# auditor can rebuild the recorded image Id ('dynadesk image build --epoch N'); absent in older bundles and local runs.
IMAGE_BUILD_KEYS = ("source_date_epoch", "input_digest")
PURPOSES = ("evaluation", "audit", "preflight", "bench")
# What ran a run's forward passes (``request.settings.backend``, ``worker_settings.backend``,
# ``environment.backend.name``); absent means torch, so bundles made before the setting keep their bytes and meaning.
# The evaluator's ``dynadesk.evaluator.schema.BACKENDS`` is the same tuple (a leaf cannot import it; a test holds them
# equal).
BACKENDS = ("torch", "onnxruntime")
DEFAULT_BACKEND = "torch"
SEED_HEX = re.compile(r"^[0-9a-f]{16}$")
BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


def fail(where: str, what: str) -> NoReturn:
    """Refuse a payload: ``bundle <field path>: <what is wrong>``."""
    raise BundleFormatError(f"bundle {where}: {what}")


_fail = fail


def obj(value: Any, where: str, keys: set[str] | None = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        _fail(where, f"must be an object, got {type(value).__name__}")
    if keys is not None:
        missing, extra = keys - set(value), set(value) - keys
        if missing:
            _fail(where, f"missing field(s) {', '.join(sorted(missing))}")
        if extra:
            _fail(where, f"unknown field(s) {', '.join(sorted(extra))}")
    return value


def text(value: Any, where: str, pattern: re.Pattern[str] | None = None, max_len: int = 512, plain: bool = True) -> str:
    """A non-empty string of at most ``max_len`` characters (matching ``pattern``); ``plain``: no control or invisible
    character (the model name leaves that to the server's model-name check, which names the look-alike rule)."""
    if not isinstance(value, str) or not value:
        _fail(where, f"must be a non-empty string, got {value!r:.60}")
    if len(value) > max_len:
        _fail(where, f"is longer than {max_len} characters")
    hidden = _hidden(value) if plain else None
    if hidden is not None:
        raise HiddenTextError(f"bundle {where}: holds the control or invisible character "
                              f"U+{ord(value[hidden]):04X} at position {hidden}")
    if pattern is not None and not pattern.match(value):
        _fail(where, f"has the wrong form ({value!r:.80})")
    return value


def _hidden(value: str) -> int | None:
    """Index of the first control, format (zero-width, bidi) or separator character a reader cannot see, or None:
    NUL reaches neither PostgreSQL nor a person intact, U+202E shows text reversed."""
    for i, c in enumerate(value):
        if unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp"):
            return i
    return None


def plain_texts(value: Any, where: str, depth: int = 0) -> None:
    """Every string in ``value`` (an object's keys and values, a list's items; the environment, whose texts make the
    hardware class the board shows) holds no control or invisible character; refused naming the field."""
    if depth > 16:
        _fail(where, "is nested deeper than 16 levels")
    if isinstance(value, str):
        i = _hidden(value)
        if i is not None:
            raise HiddenTextError(f"bundle {where}: holds the control or invisible character "
                                  f"U+{ord(value[i]):04X} at position {i}")
    elif isinstance(value, dict):
        for k, v in value.items():
            plain_texts(k, f"{where} (a key)", depth + 1)
            plain_texts(v, f"{where}.{k}", depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            plain_texts(v, f"{where}[{i}]", depth + 1)


def integer(value: Any, where: str, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        _fail(where, f"must be an integer >= {minimum}, got {value!r:.60}")
    return value


def number(value: Any, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        _fail(where, f"must be a finite number, got {value!r:.60}")
    return float(value)


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        _fail(where, f"must be true or false, got {value!r:.60}")
    return value


def timestamp(value: Any, where: str) -> datetime:
    return parse_utc(value, f"bundle {where}")
