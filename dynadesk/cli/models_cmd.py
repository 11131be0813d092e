"""``dynadesk models``: register, list, show, remove, try, and build the demo zoo."""

from __future__ import annotations

from typing import Any

import click

from dynadesk.cli.common import AppContext, echo_json, echo_table, json_option, pass_app
from dynadesk.evaluator.adapters import KINDS
from dynadesk.tasks import load_tasks


def _input_fields() -> list[str]:
    """Every input field of every bundled task: each becomes a ``models try`` option."""
    names: dict[str, None] = {}
    for task in load_tasks().values():
        for f in task.input_names:
            names[f] = None
    return list(names)


@click.group()
def models() -> None:
    """Local models: register folders, try them live, build the offline demo zoo."""


@models.command("add")
@click.argument("path", type=click.Path(exists=True, file_okay=False), required=False)
@click.option("--task", "task_name", required=True, help="Task the model serves.")
@click.option("--name", help="Model name (default: the folder name).")
@click.option("--kind", type=click.Choice(KINDS), help="Default: inferred from config.json.")
@click.option("--labels", help="Task labels in the model's output order, comma-separated, when config.json's "
                               "id2label cannot be mapped.")
@click.option("--allow-pickle", is_flag=True, help="Register pickle-only weights for sandboxed evaluation ONLY.")
@click.option("--replace", is_flag=True, help="Replace a model of the same name.")
@click.option("--served", "served_url", metavar="URL", help="Instead of PATH: an OpenAI-compatible endpoint's base URL "
              "(vLLM, llama.cpp, Ollama, transformers serve); runs are served, not sandboxed.")
@click.option("--model", "served_model", help="With --served: the model name the endpoint lists (GET /v1/models).")
@click.option("--weights-digest", help="With --served: sha256:<hex> of the weights behind the endpoint, recorded.")
@json_option
@pass_app
def add_cmd(app, path, task_name, name, kind, labels, allow_pickle, replace, served_url, served_model,
            weights_digest, as_json) -> None:
    """Register a model folder PATH (writes dynadesk-model.json when missing), or a served model (--served)."""
    from dynadesk.models.registry import ModelDeclaration, register_model

    if served_url:
        rec = _add_served(app, path, served_url, served_model, task_name, name, weights_digest, replace)
    elif path is None:
        raise click.UsageError("give a model folder PATH, or --served URL --model NAME")
    else:
        rec = register_model(app.store, path, task_name, name=name, declared=ModelDeclaration(
                                 kind, tuple(x.strip() for x in labels.split(",")) if labels else None),
                             allow_pickle=allow_pickle, replace=replace)
    if as_json:
        echo_json(rec.to_dict())
        return
    click.echo(f"registered '{rec.name}' ({rec.kind}, task {rec.task}) {rec.digest}")
    if rec.has_pickle:
        click.secho("  pickle weights: this model runs only inside the evaluation container", fg="yellow")


def _add_served(app: AppContext, path: str | None, url: str, model: str | None, task_name: str, name: str | None,
                weights_digest: str | None, replace: bool) -> Any:
    from dynadesk.models.served import register_served

    if path is not None or not model or not name:
        raise click.UsageError("--served URL takes no PATH and needs --model NAME (as the endpoint lists it) and "
                               "--name")
    return register_served(app.store, app.workspace.models_dir, url, model, task_name, name=name,
                           weights_digest=weights_digest, replace=replace)


def _kind_text(m: Any) -> str:
    """The kind column: a pickle-only folder and a served model say so."""
    return m.kind + (" (pickle)" if m.has_pickle else "") + (" (served, not sandboxed)" if m.kind == "openai-served"
                                                             else "")


@models.command("relocate")
@click.argument("name")
@click.argument("new_path", type=click.Path(exists=True, file_okay=False))
@json_option
@pass_app
def relocate_cmd(app, name: str, new_path: str, as_json: bool) -> None:
    """Point model NAME at its folder's new place NEW_PATH (same content digest required)."""
    from dynadesk.models.registry import relocate_model

    rec = relocate_model(app.store, name, new_path)
    echo_json(rec.to_dict()) if as_json else click.echo(f"'{rec.name}' now uses {rec.path} ({rec.digest})")


@models.command("list")
@click.option("--task", "task_name", help="Only this task's models.")
@json_option
@pass_app
def list_cmd(app, task_name, as_json) -> None:
    """List registered models with their dev scores when known."""
    items = app.store.models.list(task_name)
    if as_json:
        echo_json([m.to_dict() for m in items])
        return
    echo_table(["model", "task", "kind", "dev acc", "dev macro-F1", "digest"], [
        [m.name, m.task, _kind_text(m), _fmt(m.info.get("dev_accuracy")),
         _fmt(m.info.get("dev_macro_f1")), m.digest[:19]] for m in items])


def _fmt(value) -> str:
    return "" if value is None else f"{value:.1f}"


@models.command("show")
@click.argument("name")
@click.option("--verify", is_flag=True, help="Recompute the folder digest and check it still matches.")
@json_option
@pass_app
def show_cmd(app, name, verify, as_json) -> None:
    """Show a model's registration, manifest, info and files."""
    from dynadesk.models.registry import model_files, verify_model

    rec = app.store.models.get(name)
    if verify:
        verify_model(rec)
    files = model_files(rec)
    if as_json:
        echo_json({**rec.to_dict(), "files": files, "verified": bool(verify)})
        return
    click.echo(f"{rec.name}  task={rec.task}  kind={rec.kind}{'  PICKLE (container only)' if rec.has_pickle else ''}")
    click.echo(f"  path    {rec.path}\n  digest  {rec.digest}{'  (verified)' if verify else ''}")
    click.echo(f"  added   {rec.created_at}")
    for key, value in rec.manifest.items():
        click.echo(f"  manifest.{key} = {value}")
    for key, value in rec.info.items():
        click.echo(f"  info.{key} = {value}")
    click.echo(f"  {len(files)} files, {sum(f['bytes'] for f in files) / 1e6:.1f} MB")


@models.command("remove")
@click.argument("name")
@click.option("--delete-files", is_flag=True, help="Also delete the folder (only inside the workspace).")
@json_option
@pass_app
def remove_cmd(app, name, delete_files, as_json) -> None:
    """Unregister a model (its folder is kept unless --delete-files)."""
    from dynadesk.models.registry import remove_model

    rec = remove_model(app.store, name, delete_files=delete_files, models_dir=app.workspace.models_dir)
    if as_json:
        echo_json({"removed": rec.name, "path": rec.path, "files_deleted": delete_files})
    else:
        click.echo(f"removed '{rec.name}'" + (f" and deleted {rec.path}" if delete_files else ""))


def _try_options(func):
    for field in reversed(_input_fields()):
        func = click.option(f"--{field.replace('_', '-')}", field, help=f"Task input '{field}'.")(func)
    return func


@models.command("try")
@click.argument("name")
@click.option("--text", help="The text, for tasks with a single input.")
@_try_options
@json_option
@pass_app
def try_cmd(app: AppContext, /, name: str, text: str | None, as_json: bool, **fields: str | None) -> None:
    """Predict one example live: the label and its probabilities (or the answer span).

    Each task input is an option, e.g. ``models try minilm-sentiment --statement "I loved it"``.
    """
    from dynadesk.errors import ValidationError
    from dynadesk.models.live import predict_live
    from dynadesk.tasks import get_task

    rec = app.store.models.get(name)
    task = get_task(rec.task)
    inputs = {k: v for k, v in fields.items() if v is not None}
    if text is not None:
        if len(task.input_names) != 1:
            raise ValidationError(f"--text works only for single-input tasks; task '{task.name}' takes "
                                  + ", ".join(f"--{f}" for f in task.input_names))
        inputs.setdefault(task.input_names[0], text)
    pred = predict_live(app.store, name, inputs)
    if as_json:
        echo_json({"model": name, "task": task.name, "inputs": inputs, "prediction": pred})
        return
    if "label" in pred:
        click.echo(f"{pred['label']}  ({pred['probs'][pred['label']]:.3f})")
        for label, p in sorted(pred["probs"].items(), key=lambda kv: -kv[1]):
            click.echo(f"  {label:>14} {p:6.3f} " + "#" * round(30 * p))
    else:
        where = f"context[{pred['start']}:{pred['end']}]" if pred["start"] >= 0 else "generated, not in the context"
        click.echo(f"{pred['answer']!r}  (score {pred['score']:.3f}, {where})")


class _StepBars:
    """One tqdm bar (on stderr) per stage of a long build."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._stage: str | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm import tqdm

        if stage != self._stage:
            self.close()
            self._bar = tqdm(total=total, desc=stage, unit="step", leave=False, dynamic_ncols=True)
            self._stage = stage
        self._bar.update(done - self._bar.n)

    def message(self, text: str) -> None:
        self.close()
        click.echo(text, err=True)

    def postfix(self, text: str) -> None:
        """Short live detail beside the current bar (e.g. the loss)."""
        if self._bar is not None:
            self._bar.set_postfix_str(text)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar, self._stage = None, None


@models.command("build-demo")
@click.option("--force", is_flag=True, help="Rebuild even when the models exist.")
@json_option
@pass_app
def build_demo_cmd(app, force, as_json) -> None:
    """Build the offline demo sentiment zoo from the bundled MiniLM checkpoint and report dev scores."""
    from dynadesk.models.zoo import build_demo_zoo

    bars = _StepBars()
    try:
        rows = build_demo_zoo(app.store, app.workspace, progress=lambda s: bars.message(s), steps=bars, force=force)
    finally:
        bars.close()
    if as_json:
        echo_json(rows)
        return
    echo_table(["model", "dev accuracy", "dev macro-F1", "built in s", "status"], [
        [r["model"], f"{r['dev_accuracy']:.1f}", f"{r['dev_macro_f1']:.1f}", f"{r['build_seconds']:.0f}", r["status"]]
        for r in rows])


def _source(text: str) -> tuple[str, float]:
    """``NAME`` or ``NAME=WEIGHT`` of ``--data``."""
    name, _, weight = text.partition("=")
    try:
        return name.strip(), float(weight) if weight else 1.0
    except ValueError:
        raise click.BadParameter(f"'{text}': the weight after '=' must be a number", param_hint="--data") from None


@models.command("train")
@click.argument("name")
@click.option("--task", "task_name", required=True, help="Task the new model serves.")
@click.option("--base", default="minilm", show_default=True,
              help="'minilm' (the bundled MiniLM encoder) or a registered Hugging Face model to fine-tune.")
@click.option("--data", "sources", multiple=True, required=True,
              help="Training dataset, NAME or NAME=WEIGHT (each epoch sees WEIGHT x its size examples); repeatable.")
@click.option("--dev", "dev", required=True, help="Dev dataset: decides early stopping and the kept checkpoint.")
@click.option("--epochs", default=3, show_default=True, type=int)
@click.option("--batch-size", default=16, show_default=True, type=int)
@click.option("--lr", default=5e-5, show_default=True, type=float)
@click.option("--max-length", default=128, show_default=True, type=int)
@click.option("--seed", default=13, show_default=True, type=int)
@click.option("--eval-every", default=0, show_default=True, type=int,
              help="Steps between dev evaluations (0: per epoch).")
@click.option("--patience", default=2, show_default=True, type=int,
              help="Dev evaluations without improvement before stopping early.")
@click.option("--resume", is_flag=True, help="Continue an interrupted training of NAME from its checkpoint.")
@click.option("--allow-test-data", is_flag=True,
              help="Accept a test split as training or dev data, and the dev set among the training data "
                   "(refused by default: the scores that follow would mean nothing).")
@json_option
@pass_app
def train_cmd(app, name, task_name, base, sources, dev, epochs, batch_size, lr, max_length, seed, eval_every,
              patience, resume, allow_test_data, as_json) -> None:
    """Fine-tune the next round's target model (offline, seeded, early-stopped on --dev) and register NAME
    with its lineage. Ctrl+C saves a checkpoint; run the same command with --resume to continue."""
    from dynadesk.models.train import TrainConfig, TrainRequest, TrainSource, train_model
    from dynadesk.progress import ProgressEvent

    request = TrainRequest(task=task_name, name=name, base=base,
                           train=tuple(TrainSource(*_source(s)) for s in sources), dev=dev,
                           config=TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, max_length=max_length,
                                              seed=seed, eval_every=eval_every, patience=patience),
                           allow_test_data=allow_test_data)
    bars = _StepBars()

    def progress(event: ProgressEvent) -> None:
        bars(f"training {name}", event.done or 0, event.total or 0)
        bars.postfix(event.message)

    import signal

    from dynadesk.cancel import CancelToken

    stop = CancelToken()

    def ask_stop(_signum: int, _frame: object) -> None:
        stop.cancel()  # the loop saves its checkpoint before the next step and stops

    previous = {sig: signal.signal(sig, ask_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        result = train_model(app.store, app.workspace.models_dir, request, resume=resume, progress=progress,
                             cancel=stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        bars.close()
    rec = result.record
    if as_json:
        echo_json({"model": rec.to_dict(), "steps": result.steps, "best_step": result.best_step,
                   "best_dev": result.best_dev, "stopped_early": result.stopped_early, "threads": result.threads})
        return
    click.echo(f"registered {rec.name} ({rec.digest[:19]}): dev {result.best_dev:.2f} at step {result.best_step}"
               f" of {result.steps}{' (stopped early)' if result.stopped_early else ''}")
    t = result.threads
    click.echo(f"trained on {t.get('threads')} torch thread(s) of {t.get('cores')} cores, OpenMP wait policy "
               f"{t.get('wait_policy')} ({t.get('busy_cores')} cores busy with other work at the start)")
