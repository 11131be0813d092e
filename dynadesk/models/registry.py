"""The model registry: content digests, manifests, and the pickle refusal.

A model is a folder. Registering it writes ``dynadesk-model.json`` when the
folder has none (kind inferred from ``config.json``, labels mapped from its
``id2label`` to the task's), records a tree digest of every file, and refuses
pickle-only weights on the host: unpickling executes arbitrary code.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.canonical import file_sha256
from dynadesk.errors import AlreadyExistsError, ConfigError, JSONDepthError, ModelError, UnsafeModelError
from dynadesk.evaluator import adapters as _ad
from dynadesk.evaluator import generative as _gen
from dynadesk.evaluator import onnx_adapter as _onnx
from dynadesk.evaluator import openai_served as _served
from dynadesk.evaluator import prompts as _prompts
from dynadesk.jsonio import loads_bounded, read_text_capped
from dynadesk.models import handler as _handler
from dynadesk.names import check_name
from dynadesk.store.models import ModelExtras, ModelRecord
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

MANIFEST_NAME = _ad.MANIFEST_NAME
KINDS = _ad.KINDS
GENERATIVE_KINDS = (_gen.CAUSAL, _gen.SEQ2SEQ)
QA_KINDS = ("hf-question-answering", _onnx.ONNX_QA)
SPAN_KINDS = (*QA_KINDS, "openai-served", _handler.HANDLER)  # kinds that may serve a span task (these serve either)
# Folders that tools create next to a model and that differ between machines.
IGNORED_DIRS = frozenset({".git", ".hg", ".svn", ".cache", "__pycache__", ".ipynb_checkpoints"})
IGNORED_FILES = frozenset({".DS_Store", "Thumbs.db"})

# Common alternative spellings of task labels in third-party configs (after normalising).
_SYNONYMS = {
    "pos": "positive", "neg": "negative", "neu": "neutral",
    "entail": "entailment", "entails": "entailment", "contradict": "contradiction",
    "contradicts": "contradiction", "hate": "hateful", "nothate": "nothateful", "nonhate": "nothateful",
    "nonhateful": "nothateful", "hatespeech": "hateful", "nohatespeech": "nothateful", "nothatespeech": "nothateful",
}


# ---------------------------------------------------------------- digest



def tree_files(folder: Path, exclude: frozenset[str] = frozenset()) -> list[tuple[str, Path]]:
    """Every file of a model folder as (relative POSIX path, real path), sorted by path.

    Symlinks are followed only when they stay inside the folder; one that
    points outside is refused, since the digest would not cover what loads.
    VCS and cache folders (``.git``, ``.cache`` ...) and the relative paths
    in ``exclude`` are left out.
    """
    root = Path(folder).resolve()
    if not root.is_dir():
        raise ModelError(f"{folder}: not a folder")
    out: list[tuple[str, Path]] = []
    seen_dirs: set[Path] = set()

    def walk(directory: Path, rel_prefix: str) -> None:
        real_dir = directory.resolve()
        if real_dir in seen_dirs:
            raise ModelError(f"{directory}: symlink loop inside the model folder")
        seen_dirs.add(real_dir)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            raise ModelError(f"{directory}: cannot list folder: {exc}") from exc
        for entry in entries:
            rel = f"{rel_prefix}{entry.name}"
            path = Path(entry.path)
            if entry.is_symlink():
                target = path.resolve()
                if target != root and root not in target.parents:
                    raise ModelError(f"{folder}: '{rel}' is a symlink to {target}, outside the model folder; "
                                     "copy the file into the folder instead")
                if not target.exists():
                    raise ModelError(f"{folder}: '{rel}' is a broken symlink")
            if entry.is_dir():
                if entry.name in IGNORED_DIRS:
                    continue
                walk(path, rel + "/")
            elif entry.is_file():
                if entry.name not in IGNORED_FILES and rel not in exclude:
                    out.append((rel, path))
        seen_dirs.discard(real_dir)

    walk(root, "")
    out.sort(key=lambda item: item[0].encode("utf-8"))
    return out


def folder_state(folder: Path) -> tuple[tuple[str, int, int, int, int], ...]:
    """Each file's relative path, size, mtime, ctime and inode: what a change to the folder changes without reading
    a byte (the digest reads every byte; a live prediction cannot afford that per call). Timestamps are coarse
    (a jiffy on most file systems): see :func:`state_is_settled`."""
    out = []
    for rel, path in tree_files(folder, _served.digest_exclusions(folder)):
        st = path.stat()
        out.append((rel, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return tuple(out)


SETTLE_NS = 2_000_000_000  # a file touched this close to a check may change again with the same timestamps


def state_is_settled(state: tuple[tuple[str, int, int, int, int], ...], checked_ns: int) -> bool:
    """Whether every file of ``state`` was last touched well before ``checked_ns`` (git's "racy clean" rule: a file
    written in the same timestamp tick as the check could be rewritten, same size, with the same stamps)."""
    return all(max(mtime, ctime) < checked_ns - SETTLE_NS for _, _, mtime, ctime, _ in state)


def tree_digest(folder: Path, exclude: frozenset[str] = frozenset()) -> str:
    """``sha256:<hex>`` over each file's relative path and sha256: stable across machines and copies."""
    h = hashlib.sha256()
    files = tree_files(folder, exclude | _served.digest_exclusions(folder))
    if not files:
        raise ModelError(f"{folder}: the folder is empty")
    for rel, path in files:
        try:
            file_hash = file_sha256(path)
        except OSError as exc:
            raise ModelError(f"{path}: cannot read: {exc}") from exc
        h.update(rel.encode("utf-8") + b"\0" + file_hash.encode("ascii") + b"\n")
    return "sha256:" + h.hexdigest()


# ---------------------------------------------------------------- manifest

def _norm(label: str) -> str:
    key = re.sub(r"[^a-z0-9]", "", label.lower())
    return _SYNONYMS.get(key, key)


def map_labels(id2label: dict[Any, str], task: Task, where: str) -> tuple[list[str], dict[str, str]]:
    """Task labels in model output order, and the model-label -> task-label map."""
    try:
        ordered = [str(id2label[k]) for k in sorted(id2label, key=lambda k: int(k))]
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{where}: id2label keys must be output indices, got {list(id2label)}") from exc
    if len(ordered) != len(task.labels):
        raise ModelError(f"{where}: the model has {len(ordered)} outputs ({', '.join(ordered)}) but task "
                         f"'{task.name}' has {len(task.labels)} labels ({', '.join(task.labels)})")
    by_norm = {_norm(t): t for t in task.labels}
    mapped = [by_norm.get(_norm(m)) for m in ordered]
    if None in mapped or len(set(mapped)) != len(mapped):
        raise ModelError(
            f"{where}: cannot map the model's labels ({', '.join(ordered)}) to task '{task.name}' labels "
            f"({', '.join(task.labels)}); pass --labels with the task labels in the model's output order "
            f"(e.g. --labels {','.join(task.labels)}) or write {MANIFEST_NAME} yourself")
    label_map = {m: t for m, t in zip(ordered, mapped) if m != t}
    return mapped, label_map  # type: ignore[return-value]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = loads_bounded(read_text_capped(path, what="JSON file"), str(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, JSONDepthError) as exc:
        raise ModelError(f"{path}: cannot read JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ModelError(f"{path}: expected a JSON object")
    return data


def infer_kind(folder: Path) -> str:
    """The adapter kind a folder needs, from its config.json architectures or baseline files."""
    if _handler.is_handler_folder(folder):
        return _handler.HANDLER
    if (folder / _ad.MAJORITY_FILE).exists():
        return "majority"
    if (folder / _ad.BOW_WEIGHTS).exists():
        return "bag-of-words"
    config = folder / "config.json"
    if any(folder.glob("*.onnx")):
        return _onnx_kind(folder)
    if not config.exists():
        raise ModelError(f"{folder}: no config.json, so the model kind cannot be inferred; pass --kind "
                         f"({', '.join(KINDS)})")
    archs = _read_json(config).get("architectures") or []
    if any(str(a).endswith("ForSequenceClassification") for a in archs):
        return "hf-sequence-classification"
    if any(str(a).endswith("ForQuestionAnswering") for a in archs):
        return "hf-question-answering"
    for registered, suffixes in _ad.ARCHITECTURES.items():
        if suffixes and any(str(a).endswith(suffixes) for a in archs):
            return registered
    raise ModelError(f"{config}: architectures {archs} are neither a sequence classifier nor an extractive QA "
                     f"model; pass --kind if you know better")


def _onnx_kind(folder: Path) -> str:
    """An ONNX folder's kind from the config.json of the model it was exported from."""
    config = folder / "config.json"
    archs = _read_json(config).get("architectures") or [] if config.exists() else []
    if any(str(a).endswith("ForSequenceClassification") for a in archs):
        return _onnx.ONNX_CLASSIFICATION
    if any(str(a).endswith("ForQuestionAnswering") for a in archs):
        return _onnx.ONNX_QA
    raise ModelError(f"{folder}: an ONNX graph without the exported model's config.json architectures; pass --kind "
                     f"({', '.join(_onnx.ONNX_KINDS)})")


def build_manifest(folder: Path, task: Task, kind: str | None = None,
                   labels: list[str] | None = None) -> dict[str, Any]:
    """The manifest for a folder that has none."""
    folder = Path(folder)
    kind = kind or infer_kind(folder)
    if kind not in KINDS:
        raise ModelError(f"unknown model kind '{kind}' (known: {', '.join(KINDS)})")
    manifest: dict[str, Any] = {"task": task.name, "kind": kind, "inputs": list(task.input_names)}
    if kind in GENERATIVE_KINDS:
        return generative_manifest(manifest, task, labels)
    if kind == _handler.HANDLER:
        return _handler.handler_manifest(manifest, task, labels)
    if kind in QA_KINDS:
        if task.kind.chooses_labels:
            raise ModelError(f"{folder}: a question-answering model cannot serve task '{task.name}', whose "
                             "output is a label")
        manifest["context_field"] = task.span_of
        others = [n for n in task.input_names if n != task.span_of]
        if len(others) != 1:
            raise ModelError(f"task '{task.name}' must have exactly one input besides '{task.span_of}' for QA")
        manifest["question_field"] = others[0]
        return manifest
    if not task.kind.chooses_labels:
        raise ModelError(f"{folder}: a {kind} model predicts labels, but task '{task.name}' wants answer spans")
    if labels:
        if sorted(labels) != sorted(task.labels):
            raise ModelError(f"--labels {','.join(labels)} must list exactly the task labels "
                             f"({', '.join(task.labels)}) in the model's output order")
        manifest["labels"] = list(labels)
    elif kind in ("hf-sequence-classification", _onnx.ONNX_CLASSIFICATION):
        config = _read_json(folder / "config.json") if (folder / "config.json").exists() else {}
        id2label = config.get("id2label")
        if not isinstance(id2label, dict) or not id2label:
            raise ModelError(f"{folder / 'config.json'}: no id2label; pass --labels in output order")
        manifest["labels"], label_map = map_labels(id2label, task, str(folder / "config.json"))
        if label_map:
            manifest["label_map"] = label_map
    else:
        manifest["labels"] = list(task.labels)
    return manifest


def generative_manifest(manifest: dict[str, Any], task: Task, labels: list[str] | None) -> dict[str, Any]:
    """A generative folder's default manifest: zero-shot, the plain template, each label's name as its
    verbaliser (label tasks) or the span field as the context (span tasks), greedy generation."""
    _handler.handler_manifest(manifest, task, labels)  # the labels or the span field, as for a handler folder
    manifest["prompt"] = _prompts.default_prompt(list(task.input_names), manifest.get("labels"))
    manifest["generation"] = _prompts.default_generation()
    return manifest


def check_manifest_for_task(manifest: dict[str, Any], task: Task, where: str) -> None:
    """A manifest must fit the task it is registered for."""
    try:
        _ad.check_manifest(manifest, where)
    except _ad.AdapterError as exc:
        raise ConfigError(str(exc)) from exc
    if manifest["task"] != task.name:
        raise ModelError(f"{where}: manifest says task '{manifest['task']}', not '{task.name}'")
    # a model may read a subset of the task's inputs (as Dynatask's models do: a hypothesis-only NLI baseline);
    # the worker hands it the task's fields and its adapter reads the ones its manifest names
    unknown = [i for i in manifest["inputs"] if i not in task.input_names]
    if unknown or len(set(manifest["inputs"])) != len(manifest["inputs"]):
        raise ModelError(f"{where}: manifest inputs {manifest['inputs']} must be inputs of task '{task.name}' "
                         f"({', '.join(task.input_names)}), each at most once"
                         + (f" ({', '.join(map(repr, unknown))} is not one)" if unknown else ""))
    if manifest["kind"] in (*GENERATIVE_KINDS, _handler.HANDLER):
        if task.kind.chooses_labels != ("labels" in manifest):
            fix = ("labels; add \"labels\"" + (" and \"prompt.verbalisers\"" if manifest["kind"] in GENERATIVE_KINDS
                                               else "") if task.kind.chooses_labels
                   else "answer spans; remove \"labels\"")
            raise ModelError(f"{where}: task '{task.name}' wants {fix} in the manifest")
        if "labels" in manifest and sorted(manifest["labels"]) != sorted(task.labels):
            raise ModelError(f"{where}: manifest labels {manifest['labels']} are not task '{task.name}' labels "
                             f"{list(task.labels)}")
    elif task.kind.chooses_labels:
        if manifest["kind"] in QA_KINDS:
            raise ModelError(f"{where}: a question-answering model cannot serve label task '{task.name}'")
        if sorted(manifest.get("labels") or []) != sorted(task.labels):
            raise ModelError(f"{where}: manifest labels {manifest.get('labels')} are not task '{task.name}' labels "
                             f"{list(task.labels)}; fix: set the manifest's \"labels\" to the task's labels, in the "
                             "order of the model's outputs, or register it for the task it was trained for")
    elif manifest["kind"] not in SPAN_KINDS:
        raise ModelError(f"{where}: task '{task.name}' wants answer spans; kind '{manifest['kind']}' gives labels")


def check_folder(folder: Path, manifest: dict[str, Any]) -> None:
    """Cheap structural checks so a broken folder fails at registration, not mid-evaluation."""
    kind = manifest["kind"]
    if kind.startswith(("hf-", "onnx-")):
        onnx = kind in _onnx.ONNX_KINDS
        missing = [f for f in ("config.json",) if not onnx and not (folder / f).exists()]
        safe, pickles = _ad.weight_files(folder)
        if onnx and not _onnx.onnx_file(folder, manifest).is_file():
            missing.append(f"the ONNX graph ({manifest.get('onnx_file', _onnx.DEFAULT_ONNX_FILE)})")
        elif not onnx and not safe and not pickles:
            missing.append("weights (*.safetensors)")
        if not any((folder / f).exists() for f in ("tokenizer.json", "vocab.txt", "tokenizer.model",
                                                   "vocab.json", "spiece.model")):
            missing.append("tokenizer files (tokenizer.json or vocab.txt ...)")
        if missing:
            what = "ONNX" if onnx else "transformers"
            raise ModelError(f"{folder}: not a complete {what} model folder; missing {', '.join(missing)}")
    elif kind == _handler.HANDLER:
        _handler.check_handler_folder(folder)
    elif kind == "majority" and not (folder / _ad.MAJORITY_FILE).exists():
        raise ModelError(f"{folder}: a majority baseline needs {_ad.MAJORITY_FILE}")
    elif kind == "bag-of-words":
        for f in (_ad.BOW_WEIGHTS, _ad.BOW_VOCAB):
            if not (folder / f).exists():
                raise ModelError(f"{folder}: a bag-of-words model needs {f}")


# ---------------------------------------------------------------- registry

@dataclass(frozen=True)
class ModelDeclaration:
    """What the person registering a folder says it is: its ``kind`` (checked against a manifest the folder has)
    and its ``labels``, the two facts a manifest is written from when the folder has none. One value, so
    :func:`register_model` takes the folder, the task and this declaration rather than two loose options."""

    kind: str | None = None
    labels: tuple[str, ...] | None = None


def register_model(store: Store, path: str | os.PathLike[str], task_name: str, *, name: str | None = None,
                   declared: ModelDeclaration | None = None, allow_pickle: bool = False,
                   replace: bool = False, info: dict[str, Any] | None = None) -> ModelRecord:
    """Register a model folder; writes its manifest when missing (from ``declared``: nothing declared when not
    given). Idempotent for an unchanged folder.

    ``allow_pickle`` registers a pickle-only folder for sandboxed evaluation
    only; it is never loaded on the host.
    """
    kind = declared.kind if declared is not None else None
    labels = list(declared.labels) if declared is not None and declared.labels is not None else None
    folder = Path(path).expanduser().resolve()
    if not folder.is_dir():
        raise ModelError(f"{path}: no such model folder")
    task = get_task(task_name)
    name = name or folder.name
    check_name(name, "model name (pass --name)")
    has_pickle = _ad.pickle_only(folder)
    if has_pickle and not allow_pickle:
        pickles = ", ".join(p.name for p in _ad.weight_files(folder)[1])
        raise UnsafeModelError(
            f"{folder}: refused: the weights are pickle files only ({pickles})."
            " Loading a pickle executes arbitrary code, so DynaDesk never unpickles on the host. Convert the weights "
            "to safetensors (e.g. model.save_pretrained() with transformers, which writes model.safetensors), or "
            "register with --allow-pickle to evaluate the model only inside the sandboxed evaluation container.")
    manifest_path = folder / MANIFEST_NAME
    if manifest_path.exists():
        manifest = _read_json(manifest_path)
        if kind and manifest.get("kind") != kind:
            raise ModelError(f"{manifest_path}: says kind '{manifest.get('kind')}', not '{kind}'")
    else:
        manifest = build_manifest(folder, task, kind, labels)
    check_manifest_for_task(manifest, task, str(manifest_path))
    check_folder(folder, manifest)
    if not manifest_path.exists():
        try:
            manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ModelError(f"{manifest_path}: cannot write the manifest ({exc}); write it by hand or copy the "
                             "folder somewhere writable") from exc
    digest = tree_digest(folder)
    if store.models.exists(name):
        old = store.models.get(name)
        if old.digest == digest and old.path == str(folder) and old.task == task.name and not info:
            return old
        if not replace:
            raise AlreadyExistsError(f"a model named '{name}' is already registered (digest {old.digest[:19]}, "
                                     f"{old.path}); use --name or --replace")
    return store.models.add(name, task.name, manifest["kind"], str(folder), digest, manifest,
                            ModelExtras(has_pickle=has_pickle, info=info), replace=replace)


def remove_model(store: Store, name: str, *, delete_files: bool = False, models_dir: Path | None = None) -> ModelRecord:
    """Unregister a model; with ``delete_files`` also delete its folder, but only inside ``models_dir``."""
    record = store.models.get(name)
    folder = Path(record.path)
    if delete_files:
        root = Path(models_dir).resolve() if models_dir else None
        if root is None or root not in folder.resolve().parents:
            raise ModelError(f"{folder}: not deleting a folder outside the workspace's models folder ({root}); "
                             "remove it yourself")
    store.models.remove(name)
    if delete_files and folder.exists():
        shutil.rmtree(folder)
    return record


def relocate_model(store: Store, name: str, new_path: str | os.PathLike[str]) -> ModelRecord:
    """Point model ``name`` at a moved copy of its folder; refused unless the content digest is the same."""
    record = store.models.get(name)
    folder = Path(new_path).expanduser().resolve()
    if not folder.is_dir():
        raise ModelError(f"{new_path}: no such model folder")
    digest = tree_digest(folder)
    if digest != record.digest:
        raise ModelError(f"{folder}: content digest {digest[:19]}... differs from model '{name}' as registered "
                         f"({record.digest[:19]}...); this is not the same model, so '{name}' still points at "
                         f"{record.path} (register the folder as a new model with 'dynadesk models add')")
    moved: ModelRecord = store.models.set_path(name, str(folder))
    return moved


def verify_model(record: ModelRecord) -> str:
    """Recompute the folder digest; raise when it no longer matches the registration."""
    folder = Path(record.path)
    if not folder.is_dir():
        raise ModelError(f"model '{record.name}': its folder {folder} is gone; remove it with "
                         f"'dynadesk models remove {record.name}' or restore the folder")
    digest = tree_digest(folder)
    if digest != record.digest:
        raise ModelError(f"model '{record.name}': files in {folder} changed since registration "
                         f"(digest {digest[:19]}..., registered {record.digest[:19]}...); register it again with "
                         f"'dynadesk models add {folder} --task {record.task} --name {record.name} --replace'")
    return digest


def model_files(record: ModelRecord) -> list[dict[str, Any]]:
    """Relative path and size of each file, for ``models show``."""
    return [{"path": rel, "bytes": p.stat().st_size} for rel, p in tree_files(Path(record.path))]
