"""The evaluation worker: one spec in, predictions, measured figures, profile and environment out.

It never sees the gold: the host gives it the model's view of each data file (ids and the task's input
fields, ``dynadesk.orchestration.model_view``), because the model's own code (a handler, a pickle) runs in
this process and could read whatever the worker reads. Every deterministic metric (task scores, robustness,
fairness, per-tag results, intervals) is the host's, computed from the predictions
(``dynadesk.orchestration.recompute``); ``metrics.json`` holds the measured figures only.

It runs the same code in a container (DockerRunner) and in a subprocess
(LocalRunner). Each dataset's predictions are written to ``parts/`` with a
marker once complete, so a rerun with the same output folder finishes only
what is missing (resume). Progress goes to stdout as ``@@dynadesk {json}``
lines; the log goes to stderr and ``worker.log``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dynadesk.evaluator.adapters import Adapter
    from dynadesk.evaluator.schema import Settings

import hashlib
import json
import logging
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from dynadesk.evaluator import allocator, environment, profiling, served
from dynadesk.evaluator import threads as thread_policy
from dynadesk.evaluator.schema import (
    ENVIRONMENT_FILE,
    LOG_FILE,
    METRICS_FILE,
    PARTS_DIR,
    PREDICTIONS_FILE,
    PROFILE_FILE,
    PROGRESS_PREFIX,
    SCHEMA_VERSION,
    DatasetSpec,
    Spec,
    SpecError,
    evaluator_version,
    metric_row,
)

log = logging.getLogger("dynadesk.evaluator")
ERROR_FILE = "error.json"


class WorkerError(RuntimeError):
    """The worker cannot go on; the message names the dataset/file/field at fault."""


def emit(event: dict[str, Any]) -> None:
    """A progress event for the host, on its own stdout line."""
    sys.stdout.write(PROGRESS_PREFIX + json.dumps(event, sort_keys=True) + "\n")
    sys.stdout.flush()


def dumps_line(obj: Any) -> str:
    """Stable JSON for files compared byte-for-byte across runs."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def set_determinism(settings: Settings, threads: int) -> None:
    """Fixed seeds, deterministic kernels and a fixed thread count (before any torch work)."""
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process (tests calling run() twice)
        pass
    random.seed(settings.seed)
    torch.manual_seed(settings.seed)
    try:
        import numpy

        numpy.random.seed(settings.seed)
    except ImportError:
        pass
    if settings.deterministic:
        deterministic_kernels()
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True


INDUCTOR_DETERMINISTIC = "TORCHINDUCTOR_DETERMINISTIC"


def deterministic_kernels() -> None:
    """What ``torch.use_deterministic_algorithms(True)`` sets, without its ``import torch._inductor.config``: that
    import loads torch's whole compiler stack (dynamo, inductor, fx), 1.2 of a majority model's 2.7 CPU-seconds per
    run (py-spy; a transformers model loads it anyway, through transformers' ``masking_utils``), and the worker
    never compiles. The same kernel flag is set; inductor's own
    deterministic mode goes through its environment variable, which its config reads when a model's code loads
    it later (a handler calling ``torch.compile``), or directly where it is loaded already."""
    import torch

    os.environ[INDUCTOR_DETERMINISTIC] = "1"
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.deterministic = True  # type: ignore[attr-defined]
    torch._C._set_deterministic_algorithms(True, warn_only=False)


def load_examples(data_dir: Path, ds: DatasetSpec) -> list[dict[str, Any]]:
    """The model's view of one dataset (ids and input fields). The spec's sha256 is of the full data, which
    stays on the host (it checked the data against it when it cut this view): here the count is checked."""
    path = data_dir / ds.file
    if not path.is_file():
        raise WorkerError(f"dataset '{ds.name}': file {path} is missing")
    examples = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    examples.append(json.loads(line))
                except ValueError as exc:
                    raise WorkerError(f"dataset '{ds.name}': {path} line {n} is not JSON: {exc}") from exc
    if len(examples) != ds.size:
        raise WorkerError(f"dataset '{ds.name}': {len(examples)} examples, the spec says {ds.size}")
    return examples


class Worker:
    def __init__(self, spec: Spec, model_dir: Path, data_dir: Path, out_dir: Path,
                 emit_fn: Callable[[dict[str, Any]], None] = emit, loadgen: Path | None = None):
        self.spec = spec
        self.model_dir = Path(model_dir)
        self.data_dir = Path(data_dir)
        self.out = Path(out_dir)
        self.emit = emit_fn
        self.loadgen = loadgen  # the host's socket: it issues the timed queries (served.py)
        self.parts = self.out / PARTS_DIR
        self.inputs = [f["name"] for f in spec.task["inputs"]]
        self.adapter: Adapter | None = None
        self.backend: dict[str, Any] | None = None  # environment.backend of a run on another backend than torch

    # ------------------------------------------------------------------ model
    def load_model(self) -> None:
        from dynadesk.evaluator.adapters import load_adapter

        s = self.spec.settings
        t0 = time.perf_counter()
        self.adapter = load_adapter(self.model_dir, self.spec.model["manifest"], device=s.device,
                                    allow_pickle=s.allow_pickle)
        if s.backend != "torch":  # the timed windows and the pass both go through the adapter: both on it
            from dynadesk.evaluator.backends import use_onnxruntime

            self.backend = use_onnxruntime(self.adapter, str(self.spec.model["manifest"].get("kind")),
                                           str(self.spec.model.get("name")), s.device)
            log.info("backend %s %s (%s), %d intra-op threads", self.backend["name"], self.backend["version"],
                     ", ".join(self.backend["providers"]), self.backend["intra_op_threads"])
        self.load_seconds = time.perf_counter() - t0
        log.info("model '%s' loaded in %.2f s", self.spec.model.get("name"), self.load_seconds)

    def predict(self, examples: list[dict[str, Any]],
                encoded: list[dict[str, list[int]]] | None = None) -> list[dict[str, Any]]:
        """The model's predictions for a batch; ``encoded``: the batch already tokenized (:meth:`encoded`)."""
        assert self.adapter is not None, "load_model() first"
        if encoded is not None:
            preds: list[dict[str, Any]] = self.adapter.predict_encoded(encoded)  # type: ignore[attr-defined]
        else:
            batch = [{k: ex[k] for k in self.inputs if k in ex} for ex in examples]
            preds = self.adapter.predict(batch)
        if len(preds) != len(examples):
            raise WorkerError(f"the model returned {len(preds)} predictions for a batch of {len(examples)}")
        return preds

    # ------------------------------------------------------------------ datasets
    def _marker(self, ds: DatasetSpec) -> Path:
        return self.parts / (ds.file + ".done.json")

    def done_marker(self, ds: DatasetSpec) -> dict[str, Any] | None:
        """The finished part of a dataset, if one exists for the same file bytes."""
        marker, part = self._marker(ds), self.parts / ds.file
        if not marker.is_file() or not part.is_file():
            return None
        info = json.loads(marker.read_text(encoding="utf-8"))
        if info.get("dataset_sha256") != ds.sha256 or info.get("predictions_sha256") != sha256_file(part):
            return None
        return cast(dict[str, Any], info)

    def encoded(self, examples: list[dict[str, Any]]) -> list[dict[str, list[int]]] | None:
        """The dataset tokenized once, when the adapter can (transformers classifiers); else None."""
        encode = getattr(self.adapter, "encode", None)
        if encode is None:
            return None
        encoded: list[dict[str, list[int]]] = encode([{k: ex[k] for k in self.inputs if k in ex} for ex in examples])
        return encoded

    def batch_order(self, examples: list[dict[str, Any]],
                    encoded: list[dict[str, list[int]]] | None = None) -> list[int]:
        """Example indices grouped by token count (character count without a tokenizer), stable.

        Padding to the longest example of a batch is most of the waste of batched inference
        on mixed-length data, and tokens, not characters, are what is padded; the order is a
        pure function of the data, so reruns and runners see identical batches. Predictions
        are written in dataset order.
        """
        if encoded is not None:
            return sorted(range(len(examples)), key=lambda i: len(encoded[i]["input_ids"]))
        return sorted(range(len(examples)),
                      key=lambda i: sum(len(str(examples[i].get(k, ""))) for k in self.inputs))

    def batches(self, examples: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """The evaluator's own batches of a dataset (token-sorted), as lists of examples."""
        order = self.batch_order(examples, self.encoded(examples))
        bs = self.spec.settings.batch_size
        return [[examples[i] for i in order[start:start + bs]] for start in range(0, len(order), bs)]

    def run_dataset(self, ds: DatasetSpec, examples: list[dict[str, Any]], progress: dict[str, int]) -> dict[str, Any]:
        bs = self.spec.settings.batch_size
        t_encode = time.perf_counter()
        encoded = self.encoded(examples)
        encode_seconds = time.perf_counter() - t_encode
        order = self.batch_order(examples, encoded)
        results: list[Any] = [None] * len(examples)
        seconds = encode_seconds  # the pass a user waits for: its tokenizing once, then its predict calls
        for start in range(0, len(order), bs):
            idx = order[start:start + bs]
            t0 = time.perf_counter()
            preds = self.predict([examples[i] for i in idx],
                                 None if encoded is None else [encoded[i] for i in idx])
            seconds += time.perf_counter() - t0
            for i, p in zip(idx, preds):
                results[i] = p
            progress["done"] += len(idx)
            self.emit({"phase": "predict", "dataset": ds.name, "done": start + len(idx), "total": len(examples),
                       "overall_done": progress["done"], "overall_total": progress["total"]})
        lines = [dumps_line({"dataset": ds.name, "id": ex["id"], "prediction": p}) for ex, p in zip(examples, results)]
        part = self.parts / ds.file
        _write_atomic(part, "".join(line + "\n" for line in lines))
        info = {"dataset": ds.name, "dataset_sha256": ds.sha256, "predictions_sha256": sha256_file(part),
                "examples": len(examples), "seconds": seconds, "encode_seconds": encode_seconds, "batch_size": bs}
        _write_atomic(self._marker(ds), json.dumps(info, sort_keys=True))
        # after the marker: a run stopped from here on keeps this dataset on resume
        self.emit({"phase": "saved", "dataset": ds.name, "examples": len(examples)})
        return info

    # ------------------------------------------------------------------ run
    def timed_windows(self, threads: int) -> tuple[dict[str, Any], dict[str, Any], bool]:
        """The host's timed windows, right after loading and before the pass (issue 45's replay hole: a pass
        first let a model answer every timed query from a cache of the pass's answers): (the figures, the
        memory figures of loading, whether the peak could be restarted for the pass)."""
        s = self.spec.settings
        if self.loadgen is None:
            raise WorkerError("no load generator to take the timed windows (--loadgen): the host issues them; "
                              "run the worker through 'dynadesk eval'")
        sync = None
        if s.device == "cuda":
            import torch

            sync = torch.cuda.synchronize
        # memory covers loading (here) and predicting (after the windows), under the fixed threshold; the timed
        # windows run with the allocator of a long-running process (allocator.py), left out of the peak
        load_memory = profiling.memory_figures(s.dedicated_cgroup)
        allocator.timing_phase()
        self.emit({"phase": "timed"})
        reset: list[bool] = []

        def memory_again() -> None:  # before the host counts the windows as over
            allocator.memory_phase()
            reset.append(profiling.reset_peak())

        timed = served.serve(self, threads, sync, self.loadgen, memory_again)
        return timed, load_memory, bool(reset and reset[0])

    def run(self) -> int:
        s = self.spec.settings
        self.parts.mkdir(parents=True, exist_ok=True)
        policy = thread_policy.prepared(s.threads)  # settings.threads (the CPU limit) caps what the free cores allow
        threads = policy.threads
        set_determinism(s, threads)
        # torch has loaded (its wait policy fixed): the threads again from the CPU others used meanwhile, before
        # anything sizes a pool by them (onnxruntime's session takes torch's count)
        start, policy = policy, thread_policy.after_torch_loaded(policy, s.threads)
        if policy.threads != threads:
            threads = policy.threads
            thread_policy.apply(policy)
        self.emit({"phase": "load"})
        gpu_baseline = profiling.nvml_devices() if s.device == "cuda" else None
        sampler = profiling.GpuSampler().start() if s.device == "cuda" else None
        self.load_model()
        timed, load_memory, reset = self.timed_windows(threads)
        # the host put the data in place only after the windows: the model saw no timed input before it was asked
        examples = {ds.name: load_examples(self.data_dir, ds) for ds in self.spec.datasets}
        progress = {"done": 0, "total": sum(ds.size for ds in self.spec.datasets)}
        infos = {}
        for ds in self.spec.datasets:
            info = self.done_marker(ds)
            if info is not None:
                log.info("dataset '%s': predictions already complete, kept (resume)", ds.name)
                info = dict(info, resumed=True)
                progress["done"] += ds.size
                self.emit({"phase": "predict", "dataset": ds.name, "done": ds.size, "total": ds.size,
                           "overall_done": progress["done"], "overall_total": progress["total"], "resumed": True})
            else:
                log.info("dataset '%s': predicting %d examples", ds.name, ds.size)
                info = self.run_dataset(ds, examples[ds.name], progress)
            infos[ds.name] = info
        self.emit({"phase": "profile"})
        memory = profiling.load_and_pass(load_memory, profiling.memory_figures(s.dedicated_cgroup), reset)
        memory["malloc"] = allocator.malloc_settings()
        gpu = profiling.gpu_figures(gpu_baseline or {}, sampler.stop() if sampler else None) \
            if s.device == "cuda" else None
        rows = timed["rows"] + [metric_row("", "memory", memory["peak_gib"])]  # measured only: no gold here
        if gpu and gpu["torch"]:
            rows.append(metric_row("", "gpu_memory", gpu["torch"]["max_allocated_bytes"] / profiling.GIB))

        version = evaluator_version()
        concatenated = self.out / PREDICTIONS_FILE
        with open(concatenated.with_name(PREDICTIONS_FILE + ".tmp"), "wb") as fh:
            for ds in self.spec.datasets:
                fh.write((self.parts / ds.file).read_bytes())
        os.replace(concatenated.with_name(PREDICTIONS_FILE + ".tmp"), concatenated)
        header = {"schema_version": SCHEMA_VERSION, "evaluator_version": version}
        _write_atomic(self.out / METRICS_FILE, json.dumps(
            {**header, "values": rows, "predictions_sha256": sha256_file(concatenated)},
            indent=2, sort_keys=True))
        _write_atomic(self.out / PROFILE_FILE, json.dumps(
            {**header, "device": s.device, "threads": threads, "batch_size": s.batch_size,
             "load_seconds": self.load_seconds, **timed["profile"], "memory": memory, "gpu": gpu,
             "prediction_pass": {d.name: {"examples": infos[d.name]["examples"], "seconds": infos[d.name]["seconds"]}
                                 for d in self.spec.datasets if not infos[d.name].get("resumed")},
             "resumed_datasets": [d.name for d in self.spec.datasets if infos[d.name].get("resumed")]},
            indent=2, sort_keys=True))
        env = environment.capture(threads, s.__dict__)
        env["thread_policy"] = {**policy.to_dict(), "at_start": start.to_dict()}
        if self.backend is not None:  # absent: torch (every run before the setting reads as it always did)
            env["backend"] = self.backend
            env["hardware_class"] = environment.hardware_class_of(env)
        summary = {**timed["summary"], "memory_definition": memory["definition"]}
        _write_atomic(self.out / ENVIRONMENT_FILE, json.dumps(
            {**header, **env, "measurement": summary}, indent=2, sort_keys=True))
        self.emit({"phase": "done"})
        return 0


def setup_logging(out_dir: Path) -> None:
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for handler in (logging.StreamHandler(sys.stderr), logging.FileHandler(out_dir / LOG_FILE, encoding="utf-8")):
        handler.setFormatter(fmt)
        root.addHandler(handler)


def main_run(spec_path: Path, out_dir: Path, model_dir: Path, data_dir: Path, loadgen: Path | None = None) -> int:
    """Entry point of ``python -m dynadesk.evaluator run``; exit 0 ok, 2 bad spec, 1 failure."""
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / ERROR_FILE).unlink(missing_ok=True)
    except OSError as exc:
        print(f"cannot write the output folder {out_dir}: {exc}", file=sys.stderr)
        return 1
    setup_logging(out_dir)
    log.info("dynadesk evaluator %s (schema %s), python %s", evaluator_version(), SCHEMA_VERSION,
             sys.version.split()[0])
    try:
        spec = Spec.read(spec_path)
        return Worker(spec, model_dir, data_dir, out_dir, loadgen=loadgen).run()
    except SpecError as exc:
        _fail(out_dir, "spec", exc)
        return 2
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        log.exception("evaluation failed")
        _fail(out_dir, type(exc).__name__, exc)
        return 1


def _fail(out_dir: Path, kind: str, exc: BaseException) -> None:
    log.error("%s", exc)
    try:
        _write_atomic(out_dir / ERROR_FILE, json.dumps({"schema_version": SCHEMA_VERSION, "kind": kind,
                                                        "message": str(exc)[:4000]}))
    except OSError:
        pass
