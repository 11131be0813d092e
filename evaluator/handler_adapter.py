"""Handler models: the lab's own inference code (``handler.py``) beside its weights, as Dynabench's Dynalab takes.

The interface a ``handler.py`` exposes (docs/models.md has a complete example)::

    def load(model_dir: str, device: str) -> object:
        '''Called once: read the weights from model_dir, return whatever predict needs.'''

    def predict(model: object, batch: list[dict[str, str]]) -> list[dict]:
        '''One answer per example, in order: {"label": L, "probs": {label: p}} ("probs" optional) for a label
        task, {"answer": text, "start": i, "end": j} ("start"/"end" optional) for a span task.'''

The folder may vendor pure-Python wheels (``wheels/*.whl``, tag ``none-any``): they are put on ``sys.path``
as they are (a wheel is a zip archive Python imports from), beside the evaluator image's own packages.
Nothing is installed and nothing is fetched. Every file of the folder, the code and the wheels included, is
covered by the model digest (``models.registry.tree_digest``), so the code an audit re-runs is the code signed.

Running the code is what a pickle does on load, so the adapter refuses unless the caller allows code from the
folder (``allow_pickle``, which the host sets only for the Docker sandbox or ``--trust-model-code``). Every call
into the handler goes through :class:`Guard`, which fails the run naming the cause when the code

* raises (the exception and the handler's line),
* takes longer than the manifest's ``timeout_s`` per batch (``load_timeout_s`` for ``load``): a hang,
* returns something that is not one well-formed answer per example (the wrong shape),
* opens an internet socket or resolves a name (the sandbox has no network: the kernel refuses the call; the
  audit hook records the attempt, so a handler that swallows the error still fails),
* writes to standard output, the channel the worker reports progress to the host on (stderr is the log).
"""

from __future__ import annotations

import ast
import importlib.util
import math
import os
import socket
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from dynadesk.evaluator.adapter_base import AdapterError, _texts
from dynadesk.evaluator.adapters import register_kind

HANDLER = "handler"
HANDLER_FILE = "handler.py"
WHEELS_DIR = "wheels"
INTERFACE = ("load", "predict")
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_LOAD_TIMEOUT_S = 300.0
MAX_TIMEOUT_S = 3600.0
_NET_EVENTS = ("socket.connect", "socket.getaddrinfo", "socket.sendto", "socket.gethostbyname", "socket.bind")


class HandlerError(AdapterError):
    """The handler's code failed: crashed, hung, answered the wrong shape, tried the network or printed."""


def check_handler_manifest(manifest: dict[str, Any]) -> list[str]:
    """What a handler manifest gets wrong beyond the common fields (``adapters.check_manifest`` adds these)."""
    problems = []
    for key, default in (("timeout_s", DEFAULT_TIMEOUT_S), ("load_timeout_s", DEFAULT_LOAD_TIMEOUT_S)):
        value = manifest.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT_S:
            problems.append(f"'{key}' must be a number of seconds in (0, {MAX_TIMEOUT_S:g}]")
    labels = manifest.get("labels")
    if "labels" not in manifest and not isinstance(manifest.get("context_field"), str):
        problems.append("a handler needs 'labels' (a label task) or 'context_field' (a span task)")
    elif "labels" in manifest and not (isinstance(labels, list) and len(labels) >= 2 and len(set(labels)) == len(
            labels) and all(isinstance(x, str) for x in labels)):
        problems.append("'labels' must list the task labels (distinct strings)")
    return problems


def interface_problems(source: str, where: str) -> list[str]:
    """What ``handler.py`` lacks of the interface, read from its syntax tree (never run on the host)."""
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as exc:
        return [f"{where} does not parse (line {exc.lineno}: {exc.msg})"]
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return [f"{where} defines no top-level function '{name}'" for name in INTERFACE if name not in defined]


def impure_wheels(model_dir: Path) -> list[str]:
    """Vendored wheels that are not pure Python (``...-none-any.whl``): they would not import in the image."""
    folder = Path(model_dir) / WHEELS_DIR
    return [p.name for p in sorted(folder.glob("*.whl")) if not p.name.endswith("-none-any.whl")] \
        if folder.is_dir() else []


class _NetworkWatch:
    """One process-wide audit hook (hooks cannot be removed) that records internet use while a guard is open."""

    installed = False
    active = 0
    attempts: list[str] = []

    @classmethod
    def install(cls) -> None:
        if not cls.installed:
            sys.addaudithook(cls._hook)
            cls.installed = True

    @classmethod
    def _hook(cls, event: str, args: tuple[Any, ...]) -> None:
        if not cls.active or event not in _NET_EVENTS:
            return
        if event in ("socket.connect", "socket.sendto", "socket.bind"):
            sock = args[0]
            if getattr(sock, "family", None) == socket.AF_UNIX:
                return  # a local pipe, not the network
            cls.attempts.append(f"{event.split('.')[1]} to {args[1]!r:.80}")
        else:
            cls.attempts.append(f"{event.split('.')[1]} of {args[0]!r:.80}")


class Guard:
    """Runs one call into the handler: in a thread bounded by a timeout, stdout captured, network watched."""

    def __init__(self, where: str):
        self.where = where
        _NetworkWatch.install()

    def call(self, what: str, timeout: float, fn: Any, *args: Any) -> Any:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - whatever the handler raises is reported, not re-raised here
                box["error"] = exc
                box["trace"] = traceback.extract_tb(exc.__traceback__)

        sys.stdout.flush()
        saved_fd, saved_stdout = os.dup(1), sys.stdout
        capture = tempfile.TemporaryFile(mode="w+b")
        captured = _Captured()
        os.dup2(capture.fileno(), 1)
        sys.stdout = captured
        _NetworkWatch.active += 1
        before = len(_NetworkWatch.attempts)
        try:
            thread = threading.Thread(target=target, name=f"handler-{what}", daemon=True)
            thread.start()
            thread.join(timeout)
        finally:
            _NetworkWatch.active -= 1
            sys.stdout = saved_stdout
            os.dup2(saved_fd, 1)
            os.close(saved_fd)
        attempts = _NetworkWatch.attempts[before:]
        capture.seek(0)
        printed = captured.text() + capture.read(400).decode("utf-8", "replace")
        capture.close()
        if attempts:
            cause = f": {type(box['error']).__name__}: {box['error']}" if "error" in box else ""
            raise HandlerError(f"{self.where}: {what} tried the network ({attempts[0]}); a handler runs with no "
                               f"network, so vendor what it needs in the model folder{cause}")
        if thread.is_alive():
            raise HandlerError(f"{self.where}: {what} did not return within {timeout:g} s (a hang); raise the "
                               f"manifest's '{'load_timeout_s' if what == 'load' else 'timeout_s'}' if it needs longer")
        if printed:
            raise HandlerError(f"{self.where}: {what} printed to standard output ({printed[:80]!r}), the channel the "
                               "evaluator reports to the host on; write to sys.stderr or use logging instead")
        if "error" in box:
            exc, frames = box["error"], box["trace"]
            line = next((f" at {Path(f.filename).name} line {f.lineno}" for f in reversed(frames)
                         if Path(f.filename).name == HANDLER_FILE), "")
            raise HandlerError(f"{self.where}: {what} raised {type(exc).__name__}: {str(exc)[:300]}{line}") from exc
        return box.get("value")


class _Captured:
    """A stand-in for ``sys.stdout`` while the handler runs: keeps what it is sent."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(str(text))
        return len(text)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        return "".join(self.parts)[:400]


def _import_handler(model_dir: Path) -> ModuleType:
    """``handler.py`` as a module, with the folder's pure-Python wheels importable; no bytecode written."""
    for wheel in sorted((model_dir / WHEELS_DIR).glob("*.whl")) if (model_dir / WHEELS_DIR).is_dir() else []:
        if str(wheel) not in sys.path:
            sys.path.append(str(wheel))
    if str(model_dir) not in sys.path:
        sys.path.append(str(model_dir))  # the handler may import its own modules beside it
    spec = importlib.util.spec_from_file_location("dynadesk_model_handler", model_dir / HANDLER_FILE)
    if spec is None or spec.loader is None:
        raise AdapterError(f"{model_dir / HANDLER_FILE}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.dont_write_bytecode = True  # the folder is the signed model: nothing is written into it
    spec.loader.exec_module(module)
    return module


class HandlerAdapter:
    """A model answered by the folder's own ``handler.py`` (see the module docstring)."""

    kind = HANDLER

    def __init__(self, model_dir: Path, manifest: dict[str, Any], device: str = "cpu", allow_pickle: bool = False):
        model_dir = Path(model_dir)
        where = str(model_dir / HANDLER_FILE)
        if not allow_pickle:
            raise AdapterError(f"{where}: a handler model runs its own code, so it runs only in the Docker sandbox "
                               "(--runner docker), or here with --trust-model-code")
        if impure_wheels(model_dir):
            raise AdapterError(f"{model_dir / WHEELS_DIR}: {', '.join(impure_wheels(model_dir))} is not a pure-Python "
                               "wheel (…-none-any.whl)")
        self.inputs = list(manifest["inputs"])
        self.labels: list[str] | None = list(manifest["labels"]) if "labels" in manifest else None
        self.context_field = str(manifest.get("context_field", "context"))
        self.timeout = float(manifest.get("timeout_s", DEFAULT_TIMEOUT_S))
        self.guard = Guard(where)
        module = self.guard.call("import", float(manifest.get("load_timeout_s", DEFAULT_LOAD_TIMEOUT_S)),
                                 _import_handler, model_dir)
        missing = [n for n in INTERFACE if not callable(getattr(module, n, None))]
        if missing:
            raise HandlerError(f"{where}: defines no function {', '.join(missing)} (the interface: load(model_dir, "
                               "device) and predict(model, batch))")
        self._predict = module.predict
        self.model = self.guard.call("load", float(manifest.get("load_timeout_s", DEFAULT_LOAD_TIMEOUT_S)),
                                     module.load, str(model_dir), device)

    def predict(self, batch: list[dict[str, str]]) -> list[dict[str, Any]]:
        cols = _texts(batch, self.inputs)
        examples = [{f: cols[j][i] for j, f in enumerate(self.inputs)} for i in range(len(batch))]
        if not examples:
            return []
        answers = self.guard.call("predict", self.timeout, self._predict, self.model, examples)
        if not isinstance(answers, list) or len(answers) != len(examples):
            got = f"a list of {len(answers)}" if isinstance(answers, list) else type(answers).__name__
            raise HandlerError(f"{self.guard.where}: predict returned {got} for a batch of {len(examples)}; it must "
                               "return one answer per example, in order (the wrong shape)")
        return [self._answer(i, a, ex) for i, (a, ex) in enumerate(zip(answers, examples))]

    def _answer(self, i: int, answer: Any, example: dict[str, str]) -> dict[str, Any]:
        """One answer checked against the interface; the adapters' own form of it."""
        def wrong(why: str) -> HandlerError:
            return HandlerError(f"{self.guard.where}: predict's answer {i} {why} (the wrong shape; see the interface "
                                "in docs/models.md)")

        if not isinstance(answer, dict):
            raise wrong(f"is a {type(answer).__name__}, not a dict")
        if self.labels is not None:
            label = answer.get("label")
            if label not in self.labels:
                raise wrong(f"has label {label!r:.40}, not one of {', '.join(self.labels)}")
            probs = answer.get("probs")
            if probs is None:
                return {"label": label, "probs": {lab: float(lab == label) for lab in self.labels}}
            if not isinstance(probs, dict) or sorted(probs) != sorted(self.labels) or not all(
                    isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p) and 0 <= p <= 1
                    for p in probs.values()) or abs(sum(probs.values()) - 1) > 1e-3:
                raise wrong("has 'probs' that are not a probability for each label summing to 1")
            return {"label": label, "probs": {lab: float(probs[lab]) for lab in self.labels}}
        text = answer.get("answer")
        if not isinstance(text, str):
            raise wrong("has no text 'answer'")
        context = example.get(self.context_field, "")
        start, end = answer.get("start"), answer.get("end")
        if start is None and end is None:
            start = context.find(text) if text else 0
            if start < 0:
                raise wrong(f"answers {text[:40]!r}, which is not in the context")
            end = start + len(text)
        if not (isinstance(start, int) and isinstance(end, int)) or context[start:end] != text:
            raise wrong("has 'start'/'end' that do not give its answer in the context")
        score = answer.get("score", 1.0)
        return {"answer": text, "start": start, "end": end,
                "score": float(score) if isinstance(score, (int, float)) and math.isfinite(score) else 1.0}


register_kind(HANDLER, HandlerAdapter, check_handler_manifest)
