"""Live prediction: warm in-process models for annotation, the GUI and ``models try``.

Loading a transformers model takes about a second; predicting one example
takes milliseconds. :class:`LivePredictor` keeps the last few loaded adapters
in an LRU keyed by model digest, so a re-registered (changed) model is
reloaded while a renamed one is not. The folder digest is verified when a
model is loaded, so what runs is what was registered.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dynadesk.evaluator.threads as thread_policy
from dynadesk.errors import ModelError, UnsafeModelError, ValidationError
from dynadesk.evaluator import adapters as _ad
from dynadesk.models.handler import HANDLER, SANDBOX_NOTE
from dynadesk.models.registry import folder_state, state_is_settled, verify_model
from dynadesk.store.models import ModelRecord
from dynadesk.tasks import get_task

if TYPE_CHECKING:
    from dynadesk.store import Store


# transformers resolves its classes (AutoModelFor..., each model's module) by lazy import, which is not thread-safe:
# two hub warm-up threads loading at once failed with "module 'transformers' has no attribute ..." at every start.
# Loads take this lock (they are CPU-bound under the GIL anyway), so the first import happens once, under it.
_LOAD_LOCK = threading.Lock()


def load_adapter_for(record: ModelRecord, device: str = "cpu") -> _ad.Adapter:
    """Load a registered model on the host (never a pickle), translating adapter errors; one load at a time."""
    with _LOAD_LOCK:
        return _load_adapter_for(record, device)


def _load_adapter_for(record: ModelRecord, device: str) -> _ad.Adapter:
    if record.has_pickle:
        raise UnsafeModelError(f"model '{record.name}' has pickle weights only; it runs only inside the evaluation "
                               "container (pickles execute code when loaded). Convert it to safetensors to try it "
                               "here.")
    if record.kind == HANDLER:
        raise UnsafeModelError(f"model '{record.name}': {SANDBOX_NOTE}; live prediction loads models here, so it "
                               "is not offered for handler models")
    from safetensors import SafetensorError

    verify_model(record)
    fix = (f"fix the folder, then register it again: dynadesk models add {record.path} --task {record.task} "
           f"--name {record.name} --replace")
    try:
        return _ad.load_adapter(Path(record.path), record.manifest, device=device, allow_pickle=False)
    except _ad.PickleWeightsError as exc:
        raise UnsafeModelError(str(exc)) from exc
    except SafetensorError as exc:  # a truncated or corrupt weights file: the library's own error, not a traceback
        raise ModelError(f"model '{record.name}': {record.path}: model.safetensors cannot be read ({exc}); "
                         f"{fix}") from exc
    except _ad.AdapterError as exc:  # one line: the library's advice can run to paragraphs
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"model '{record.name}': {first} (check config.json and the weights); {fix}") from exc


def check_inputs(record: ModelRecord, inputs: dict[str, Any]) -> dict[str, str]:
    """Every task input present as non-empty text, nothing unknown."""
    task = get_task(record.task)
    problems = []
    if not isinstance(inputs, dict):
        raise ValidationError(f"inputs for model '{record.name}' must be a mapping of field to text")
    for field in task.input_names:
        value = inputs.get(field)
        if not isinstance(value, str) or not value.strip():
            problems.append(f"'{field}' is missing or empty")
    unknown = sorted(set(inputs) - set(task.input_names))
    if unknown:
        problems.append(f"unknown field(s) {', '.join(unknown)} (task '{task.name}' takes "
                        f"{', '.join(task.input_names)})")
    if problems:
        raise ValidationError(f"bad inputs for model '{record.name}' (task '{task.name}')", problems)
    return {f: inputs[f] for f in task.input_names}


class LivePredictor:
    """An LRU of loaded adapters keyed by model digest; safe to share between threads."""

    def __init__(self, capacity: int = 2, device: str = "cpu"):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.device = device
        self._cache: OrderedDict[str, _ad.Adapter] = OrderedDict()
        # (folder, digest) -> the folder's stat state when its digest last matched, and when that was checked
        self._checked: dict[tuple[str, str], tuple[tuple[tuple[str, int, int, int, int], ...], int]] = {}
        self._lock = threading.RLock()

    def adapter(self, record: ModelRecord) -> _ad.Adapter:
        with self._lock:
            key = record.digest
            if key in self._cache:
                self._check_folder(record)
                self._cache.move_to_end(key)
                return self._cache[key]
            adapter = load_adapter_for(record, self.device)  # verifies the digest
            self._checked[(record.path, key)] = (folder_state(Path(record.path)), time.time_ns())
            self._cache[key] = adapter
            while len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
            return adapter

    def _check_folder(self, record: ModelRecord) -> None:
        """A warm adapter serves a record only while the record's folder is still what was registered: the cache is
        keyed by digest, so another folder (or this one before an edit) may have loaded it. The folder's stat
        state stands in for its digest once it has settled (:func:`state_is_settled`); otherwise, or when it
        differs, the digest is recomputed (raising when the files changed)."""
        try:
            state = folder_state(Path(record.path))
        except (ModelError, OSError):
            state = ()
        seen = self._checked.get((record.path, record.digest))
        if seen is not None and state and state == seen[0] and state_is_settled(state, seen[1]):
            return
        checked_ns = time.time_ns()
        verify_model(record)
        self._checked[(record.path, record.digest)] = (state, checked_ns)

    def predict(self, record: ModelRecord, inputs: dict[str, Any]) -> dict[str, Any]:
        return self.predict_batch(record, [inputs])[0]

    def predict_batch(self, record: ModelRecord, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One forward pass over several examples (the hub's micro-batches), one answer each, in order."""
        clean = [check_inputs(record, inputs) for inputs in batch]
        with self._lock:
            adapter = self.adapter(record)
            if self.device == "cpu":
                thread_policy.refresh()  # fewer torch threads while the machine is busy (issue 50)
            try:
                out = adapter.predict(clean)
            except _ad.AdapterError as exc:
                raise ModelError(f"model '{record.name}': {exc}") from exc
        if len(out) != len(clean):
            raise ModelError(f"model '{record.name}' answered {len(out)} of {len(clean)} examples")
        return out

    def draft(self, record: ModelRecord, prompt: str) -> str:
        """Free text a generative model writes after ``prompt`` (greedy, its manifest's generation settings): the
        annotation assistant's draft (dynadesk/annotation/assistant.py)."""
        with self._lock:
            adapter = self.adapter(record)
            generate = getattr(adapter, "generate", None)
            if generate is None:
                raise ModelError(f"model '{record.name}' ({record.kind}) does not generate text; the assistant "
                                 "needs a generative target (hf-causal-lm or hf-seq2seq-lm)")
            try:
                return str(generate([prompt])[0][0])
            except _ad.AdapterError as exc:
                raise ModelError(f"model '{record.name}': {exc}") from exc

    def warm(self, record: ModelRecord) -> None:
        """Load ahead of time (e.g. when an annotation round opens)."""
        self.adapter(record)

    def loaded(self) -> list[str]:
        with self._lock:
            return list(self._cache)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._checked.clear()


_default = LivePredictor()


def default_predictor() -> LivePredictor:
    return _default


def predict_live(store: Store, model_name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """One prediction from a registered model with a warm in-process copy.

    Returns the adapter's dict: ``{"label", "probs"}`` or ``{"answer", "start", "end", "score"}``.
    """
    return _default.predict(store.models.get(model_name), inputs)
