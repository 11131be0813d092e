"""Structure of a bundle payload, checked field by field before anything trusts it.

Every problem names its JSON path (``payload.metrics[3].value``), so a user
holding a broken bundle knows what is wrong and where. Version 2 (written now) signs the run's
typed fields, each checked: ``request`` (the run as asked: model, test sets, runner, image, limits,
the worker-independent settings, purpose) and ``worker_settings`` (what the evaluator was given).
Version 1 (still read, verified and audited) signed one ``settings`` object checked only as an object.
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import datetime
from typing import Any, NoReturn

from dynadesk.errors import BundleFormatError, HiddenTextError
from dynadesk.sync.format.timestamps import parse_utc
from dynadesk.sync.format.tolerances import check_tolerances

HEX64 = re.compile(r"^[0-9a-f]{64}$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
ANY_DIGEST = re.compile(r"^[a-z0-9-]{2,16}:[0-9a-f]{32,128}$")  # model folders: algorithm named
# a runner's name: the format checks its form; which runners exist is the host's runner registry
# (dynadesk.orchestration.runner_registry), which a leaf cannot see, so a new runner's bundles are accepted
RUNNER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")

# absent in bundles made before they existed: tolerances (the audit), task_digest (workspace tasks: the canonical
# digest of the task's definition, dynadesk.tasks.task_digest), intervals and outcomes (the host's bootstrap),
# worker (a queued run's worker and the key that signed its result)
OPTIONAL_PAYLOAD_KEYS = {"tolerances", "task_digest", "intervals", "outcomes", "worker"}
# evaluator.source_date_epoch / evaluator.input_digest: the image build's inputs, recorded for Docker runs so an
# auditor can rebuild the recorded image Id ('dynadesk image build --epoch N'); absent in older bundles and local runs.
IMAGE_BUILD_KEYS = ("source_date_epoch", "input_digest")
# A dataset entry's optional labels (absent in older bundles and where they do not apply): answerable_only (true:
# imported without its unanswerable questions, not SQuAD 2.0 as published), robustness_suites (the suite set(s) its
# robustness rests on: "dynadesk" or "dynaboard-augly").
OPTIONAL_DATASET_KEYS = {"answerable_only", "robustness_suites"}
SUITE_SET_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
PAYLOAD_KEYS = {"created_at", "task", "model", "datasets", "evaluator", "runner", "environment", "seeds",
                "worker_settings", "metrics", "predictions", "submitter", "evaluation_id"}
# version 1: one unchecked ``settings`` object where version 2 has ``worker_settings`` and ``request``
PAYLOAD_KEYS_V1 = PAYLOAD_KEYS - {"worker_settings"} | {"settings"}
# request: absent only for a run recorded before requests whose settings did not allow rebuilding one
OPTIONAL_PAYLOAD_KEYS_V2 = OPTIONAL_PAYLOAD_KEYS | {"request"}
PURPOSES = ("evaluation", "audit", "preflight", "bench")
# name -> (kind, required); kinds: "count" (integer >= 1), "natural" (integer >= 0), "integer", "seconds"
# (0 to 60), "positive" (number > 0), "bool", "device", "threads" (integer >= 1 or null), "gpus" (text or null)
REQUEST_SETTINGS = {"batch_size": ("count", True), "seed": ("natural", True), "latency_samples": ("count", True),
                    "warmup": ("natural", True), "deterministic": ("bool", False), "min_seconds": ("seconds", False),
                    "null_threshold": ("finite", False), "null_dev": ("name", False)}
LIMITS = {"cpus": ("positive", True), "memory_bytes": ("count", True), "pids": ("count", False),
          "timeout_s": ("positive", True), "tmpfs_bytes": ("count", False), "out_bytes": ("count", False),
          "gpus": ("gpus", False)}
WORKER_SETTINGS = {"batch_size": ("count", True), "device": ("device", True), "deterministic": ("bool", True),
                   "seed": ("integer", True), "threads": ("threads", False), "latency_samples": ("count", False),
                   "warmup": ("natural", False), "batched_queries": ("count", False), "trials": ("count", False),
                   "min_seconds": ("seconds", False), "noise_retries": ("natural", False),
                   "allow_pickle": ("bool", False), "dedicated_cgroup": ("bool", False),
                   "null_threshold": ("finite", False)}  # SQuAD 2.0 abstention: only a v2 run carries it


def _fail(where: str, what: str) -> NoReturn:
    raise BundleFormatError(f"bundle {where}: {what}")


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


def check_lineage(value: Any, where: str) -> None:
    """A trained model's lineage (``dynadesk models train``): base, training and dev datasets, settings."""
    lin = obj(value, where, {"base", "train", "dev", "hyperparameters", "code_version"})
    base = obj(lin["base"], f"{where}.base", {"name", "digest"})
    text(base["name"], f"{where}.base.name")
    text(base["digest"], f"{where}.base.digest", ANY_DIGEST)
    if not isinstance(lin["train"], list) or not lin["train"] or len(lin["train"]) > 64:
        _fail(f"{where}.train", "must be a list of 1 to 64 datasets")
    for i, src in enumerate(lin["train"]):
        s = obj(src, f"{where}.train[{i}]", {"dataset", "digest", "weight"})
        text(s["dataset"], f"{where}.train[{i}].dataset")
        text(s["digest"], f"{where}.train[{i}].digest", ANY_DIGEST)
        w = s["weight"]
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 < w <= 100:
            _fail(f"{where}.train[{i}].weight", f"must be a number in (0, 100], got {w!r:.40}")
    dev = obj(lin["dev"], f"{where}.dev", {"dataset", "digest"})
    text(dev["dataset"], f"{where}.dev.dataset")
    text(dev["digest"], f"{where}.dev.digest", ANY_DIGEST)
    hp = obj(lin["hyperparameters"], f"{where}.hyperparameters")
    if len(hp) > 64 or not all(isinstance(v, (str, int, float, bool)) for v in hp.values()):
        _fail(f"{where}.hyperparameters", "must be an object of at most 64 scalar settings")
    text(lin["code_version"], f"{where}.code_version", max_len=64)


def text(value: Any, where: str, pattern: re.Pattern[str] | None = None, max_len: int = 512, plain: bool = True) -> str:
    """A non-empty string of at most ``max_len`` characters (matching ``pattern``); ``plain``: no control or invisible
    character (the model name leaves that to the server's model-name check, which names the look-alike rule)."""
    if not isinstance(value, str) or not value:
        _fail(where, f"must be a non-empty string, got {value!r:.60}")
    if len(value) > max_len:
        _fail(where, f"is longer than {max_len} characters")
    hidden = _hidden(value) if plain else None
    if hidden is not None:
        raise HiddenTextError(f"{where}: holds the control or invisible character U+{ord(value[hidden]):04X} at "
                              f"position {hidden}")
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
            raise HiddenTextError(f"{where}: holds the control or invisible character U+{ord(value[i]):04X} at "
                                  f"position {i}")
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


def check_dataset_labels(d: dict[str, Any], where: str) -> None:
    if "answerable_only" in d and d["answerable_only"] is not True:
        _fail(f"{where}.answerable_only", f"must be true when present, got {d['answerable_only']!r:.40}")
    if "robustness_suites" in d:
        suites = d["robustness_suites"]
        if not isinstance(suites, list) or not 1 <= len(suites) <= 4 or len(set(map(str, suites))) != len(suites):
            _fail(f"{where}.robustness_suites", "must be a list of 1 to 4 distinct suite set names")
        for j, name in enumerate(suites):
            text(name, f"{where}.robustness_suites[{j}]", SUITE_SET_NAME, max_len=32)


def check_payload(p: Any, version: int = 2) -> None:
    """Raise :class:`BundleFormatError` unless ``p`` is a well-formed payload of format ``version`` (1 or 2)."""
    required, optional = (PAYLOAD_KEYS_V1, OPTIONAL_PAYLOAD_KEYS) if version == 1 else \
        (PAYLOAD_KEYS, OPTIONAL_PAYLOAD_KEYS_V2)
    obj(p, "payload", required | (optional & set(p) if isinstance(p, dict) else set()))
    timestamp(p["created_at"], "payload.created_at")
    text(p["task"], "payload.task", max_len=64)
    if "task_digest" in p:
        text(p["task_digest"], "payload.task_digest", DIGEST)
    m = obj(p["model"], "payload.model")
    m = obj(m, "payload.model", {"name", "digest"} | ({"lineage", "served"} & set(m)))
    text(m["name"], "payload.model.name", plain=False)
    text(m["digest"], "payload.model.digest", ANY_DIGEST)
    if "served" in m:  # a served model (evaluator/openai_served.py): endpoint, declared model, weights digest
        sv = obj(m["served"], "payload.model.served", {"endpoint", "model"} | ({"weights_digest"} & set(m["served"])))
        for served_key in sv:
            text(sv[served_key], f"payload.model.served.{served_key}", max_len=2048)
    if "lineage" in m:
        check_lineage(m["lineage"], "payload.model.lineage")
    ds = p["datasets"]
    if not isinstance(ds, list) or not ds:
        _fail("payload.datasets", "must be a non-empty list")
    names = set()
    for i, d in enumerate(ds):
        w = f"payload.datasets[{i}]"
        labels = OPTIONAL_DATASET_KEYS & set(d) if isinstance(d, dict) else set()
        obj(d, w, {"name", "split", "digest", "size"} | labels)
        name = text(d["name"], f"{w}.name")
        if name in names:
            _fail(f"{w}.name", f"names dataset '{name}' twice")
        names.add(name)
        text(d["split"], f"{w}.split", max_len=64)
        text(d["digest"], f"{w}.digest", DIGEST)
        integer(d["size"], f"{w}.size")
        check_dataset_labels(d, w)
    ev = obj(p["evaluator"], "payload.evaluator")
    obj(ev, "payload.evaluator", {"image_digest", "version"} | (set(IMAGE_BUILD_KEYS) & set(ev)))
    for k in ("image_digest", "version"):
        if ev[k] is not None:
            text(ev[k], f"payload.evaluator.{k}")
    if set(IMAGE_BUILD_KEYS) & set(ev):
        if ev["image_digest"] is None:
            _fail("payload.evaluator", "records an image build but no image Id")
        missing = [k for k in IMAGE_BUILD_KEYS if k not in ev]
        if missing:
            _fail("payload.evaluator", f"records an image build without {', '.join(missing)}")
        integer(ev["source_date_epoch"], "payload.evaluator.source_date_epoch")
        text(ev["input_digest"], "payload.evaluator.input_digest", DIGEST)
    r = obj(p["runner"], "payload.runner", {"kind", "sandboxed"})
    text(r["kind"], "payload.runner.kind", RUNNER_NAME, max_len=32)
    boolean(r["sandboxed"], "payload.runner.sandboxed")
    plain_texts(obj(p["environment"], "payload.environment"), "payload.environment")
    if version == 1:
        obj(p["settings"], "payload.settings")
    else:
        fields_of(p["worker_settings"], "payload.worker_settings", WORKER_SETTINGS)
        if "request" in p:
            check_request(p["request"], "payload.request")
    for k, v in obj(p["seeds"], "payload.seeds").items():
        integer(v, f"payload.seeds.{k}", minimum=-(2 ** 53))
    ms = p["metrics"]
    if not isinstance(ms, list) or not ms:
        _fail("payload.metrics", "must be a non-empty list")
    seen = set()
    for i, mv in enumerate(ms):
        w = f"payload.metrics[{i}]"
        obj(mv, w, {"dataset", "metric", "value", "unit", "deterministic"})
        if not isinstance(mv["dataset"], str) or (mv["dataset"] and mv["dataset"] not in names):
            _fail(f"{w}.dataset", f"must be '' or one of the bundle's datasets, got {mv['dataset']!r:.60}")
        key = (mv["dataset"], text(mv["metric"], f"{w}.metric", max_len=64))
        if key in seen:
            _fail(w, f"repeats metric '{key[1]}' for dataset '{key[0]}'")
        seen.add(key)
        number(mv["value"], f"{w}.value")
        text(mv["unit"], f"{w}.unit", max_len=32)
        boolean(mv["deterministic"], f"{w}.deterministic")
    pr = obj(p["predictions"], "payload.predictions", {"digest", "merkle_root", "count"})
    text(pr["digest"], "payload.predictions.digest", DIGEST)
    text(pr["merkle_root"], "payload.predictions.merkle_root", HEX64)
    integer(pr["count"], "payload.predictions.count")
    s = obj(p["submitter"], "payload.submitter", {"key_fingerprint"})
    text(s["key_fingerprint"], "payload.submitter.key_fingerprint", DIGEST)
    integer(p["evaluation_id"], "payload.evaluation_id")
    if "worker" in p:  # the queue worker whose key signed the run's result (dynadesk.queue.identity)
        wk = obj(p["worker"], "payload.worker", {"name", "key_fingerprint"})
        text(wk["name"], "payload.worker.name", max_len=128)
        text(wk["key_fingerprint"], "payload.worker.key_fingerprint", DIGEST)
    if "tolerances" in p:  # measured-metric tolerances, checked by dynadesk.audit.tolerances
        check_tolerances(p["tolerances"], "payload.tolerances")
    if "intervals" in p:
        check_intervals(p["intervals"], names)
    if "outcomes" in p:
        check_outcomes(p["outcomes"], {d["name"]: d["size"] for d in ds})


def check_request(value: Any, where: str) -> None:
    """``payload.request``: the run as asked (``RunRequest.to_dict()``), what an audit re-run replays."""
    r = obj(value, where, {"model", "datasets", "runner", "image", "limits", "settings", "purpose"})
    text(r["model"], f"{where}.model")
    if not isinstance(r["datasets"], list) or len(r["datasets"]) > 256:
        _fail(f"{where}.datasets", "must be a list of at most 256 dataset names")
    for i, name in enumerate(r["datasets"]):
        text(name, f"{where}.datasets[{i}]")
    text(r["runner"], f"{where}.runner", RUNNER_NAME, max_len=32)
    if r["image"] is not None:
        text(r["image"], f"{where}.image")
    if r["purpose"] not in PURPOSES:
        _fail(f"{where}.purpose", f"must be one of {', '.join(PURPOSES)}, got {r['purpose']!r:.40}")
    fields_of(r["limits"], f"{where}.limits", LIMITS)
    fields_of(r["settings"], f"{where}.settings", REQUEST_SETTINGS)


def fields_of(value: Any, where: str, spec: dict[str, tuple[str, bool]]) -> None:
    """An object of known scalar fields (``spec``: name -> (kind, required)), each of its kind."""
    o = obj(value, where)
    obj(o, where, {k for k, (_, required) in spec.items() if required or k in o})
    for name, v in o.items():
        kind, w = spec[name][0], f"{where}.{name}"
        if kind in ("count", "natural", "integer"):
            integer(v, w, minimum={"count": 1, "natural": 0, "integer": -(2 ** 53)}[kind])
        elif kind == "bool":
            boolean(v, w)
        elif kind == "device":
            if v not in ("cpu", "cuda"):
                _fail(w, f"must be 'cpu' or 'cuda', got {v!r:.40}")
        elif kind == "threads":
            if v is not None:
                integer(v, w, minimum=1)
        elif kind == "gpus":
            if v is not None:
                text(v, w, max_len=128)
        elif kind == "finite":
            number(v, w)
        elif kind == "name":
            text(v, w, max_len=128)
        elif kind == "seconds":
            if not 0 <= number(v, w) <= 60:
                _fail(w, f"must be a number of seconds from 0 to 60, got {v!r:.40}")
        elif number(v, w) <= 0:  # positive
            _fail(w, f"must be a number above 0, got {v!r:.40}")


INTERVAL_KEYS = {"dataset", "metric", "low", "high", "level", "resamples", "seed", "method"}
SEED_HEX = re.compile(r"^[0-9a-f]{16}$")


def check_intervals(value: Any, names: set[str]) -> None:
    """``payload.intervals``: the host's seeded bootstrap interval of the task metric, one per test set."""
    if not isinstance(value, list) or len(value) > len(names):
        _fail("payload.intervals", "must be a list of at most one interval per dataset")
    seen = set()
    for i, iv in enumerate(value):
        w = f"payload.intervals[{i}]"
        obj(iv, w, INTERVAL_KEYS)
        if iv["dataset"] not in names or iv["dataset"] in seen:
            _fail(f"{w}.dataset", f"must name one of the bundle's datasets once, got {iv['dataset']!r:.60}")
        seen.add(iv["dataset"])
        text(iv["metric"], f"{w}.metric", max_len=64)
        text(iv["method"], f"{w}.method", max_len=64)
        text(iv["seed"], f"{w}.seed", SEED_HEX)
        low, high = number(iv["low"], f"{w}.low"), number(iv["high"], f"{w}.high")
        if low > high:
            _fail(w, f"low {low!r} is above high {high!r}")
        if not 0 < number(iv["level"], f"{w}.level") < 100:
            _fail(f"{w}.level", f"must be a percentage between 0 and 100, got {iv['level']!r:.20}")
        integer(iv["resamples"], f"{w}.resamples", minimum=1)


OUTCOME_KEYS = {"dataset", "metric", "n", "data_sha256", "encoding", "data"}
OUTCOME_ENCODINGS = ("u16x100", "label-pairs-u8")
BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


def check_outcomes(value: Any, sizes: dict[str, int]) -> None:
    """``payload.outcomes``: each test set's per-example outcomes (dynadesk.scoring.bootstrap.encode_outcomes),
    two bytes per example; an auditor re-derives them from the predictions the Merkle root commits to."""
    if not isinstance(value, list) or len(value) > len(sizes):
        _fail("payload.outcomes", "must be a list of at most one entry per dataset")
    seen = set()
    for i, o in enumerate(value):
        w = f"payload.outcomes[{i}]"
        if obj(o, w).get("encoding") not in OUTCOME_ENCODINGS:
            _fail(f"{w}.encoding", f"must be one of {', '.join(OUTCOME_ENCODINGS)}, got {o.get('encoding')!r:.40}")
        obj(o, w, OUTCOME_KEYS | ({"allowed"} if o["encoding"] == "label-pairs-u8" else set())
            | ({"one_answer"} if o["encoding"] == "u16x100" and "one_answer" in o else set()))
        if "one_answer" in o and o["one_answer"] is not True:  # present only when true (a constant predictor)
            _fail(f"{w}.one_answer", f"must be true when present, got {o['one_answer']!r:.20}")
        if o["dataset"] not in sizes or o["dataset"] in seen:
            _fail(f"{w}.dataset", f"must name one of the bundle's datasets once, got {o['dataset']!r:.60}")
        seen.add(o["dataset"])
        text(o["metric"], f"{w}.metric", max_len=64)
        text(o["data_sha256"], f"{w}.data_sha256", DIGEST)
        n = integer(o["n"], f"{w}.n")
        if n != sizes[o["dataset"]]:
            _fail(f"{w}.n", f"is {n}, but dataset '{o['dataset']}' has {sizes[o['dataset']]} examples")
        data = text(o["data"], f"{w}.data", BASE64, max_len=4 * (2 * n + 2) // 3 + 4)
        if len(data) != 4 * ((2 * n + 2) // 3):
            _fail(f"{w}.data", f"must be base64 of {2 * n} bytes (two per example)")
        if "allowed" in o:
            if not isinstance(o["allowed"], list) or not 0 < len(o["allowed"]) <= 255:
                _fail(f"{w}.allowed", "must be a list of 1 to 255 flags")
            for j, flag in enumerate(o["allowed"]):
                boolean(flag, f"{w}.allowed[{j}]")
