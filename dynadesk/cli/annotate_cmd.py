"""``dynadesk annotators``, ``dynadesk rounds`` and ``dynadesk annotate`` (headless annotation)."""

from __future__ import annotations

import json
import sys

import click

from dynadesk import annotation as ann
from dynadesk.cli.common import echo_json, echo_table, json_option, pass_app
from dynadesk.errors import AnnotationError, DynaDeskError, ValidationError
from dynadesk.jsonio import loads_bounded
from dynadesk.store.annotation import ROLES, VERDICTS


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


# --------------------------------------------------------------------------- annotators
@click.group()
def annotators() -> None:
    """Local annotator profiles and the active one."""


@annotators.command("add")
@click.argument("name")
@click.option("--role", type=click.Choice(ROLES), default="annotator", show_default=True)
@json_option
@pass_app
def annotators_add(app, name, role, as_json) -> None:
    """Add a profile (the first one becomes active)."""
    a = ann.add_annotator(app.store, name, role)
    echo_json(a.to_dict()) if as_json else click.echo(f"added {a.role} '{a.name}'")


@annotators.command("list")
@json_option
@pass_app
def annotators_list(app, as_json) -> None:
    """List profiles; * marks the active one."""
    items = ann.list_annotators(app.store)
    active = ann.active_annotator(app.store)
    active_name = active.name if active else None
    if as_json:
        echo_json([{**a.to_dict(), "active": a.name == active_name} for a in items])
        return
    echo_table(["", "annotator", "role", "created"],
               [["*" if a.name == active_name else "", a.name, a.role, a.created_at] for a in items])


@annotators.command("use")
@click.argument("name")
@pass_app
def annotators_use(app, name) -> None:
    """Make NAME the active annotator."""
    a = ann.use_annotator(app.store, name)
    click.echo(f"active annotator: {a.name} ({a.role})")


# --------------------------------------------------------------------------- rounds
@click.group()
def rounds() -> None:
    """Annotation rounds: target models, context pools, statistics."""


@rounds.command("new")
@click.argument("task")
@click.option("--model", "models", multiple=True, required=True, help="Target model (repeatable).")
@click.option("--contexts", type=click.Path(dir_okay=False), help="Context pool: .txt (one per line) or .jsonl.")
@click.option("--by", "created_by", help="Annotator opening the round (default: the active one, if any).")
@json_option
@pass_app
def rounds_new(app, task, models, contexts, created_by, as_json) -> None:
    """Open the next round of TASK (closes the open one for creation)."""
    if created_by is None:
        active = ann.active_annotator(app.store)
        created_by = active.name if active else None
    r = ann.new_round(app.store, task, list(models), contexts, created_by)
    if as_json:
        echo_json(r.to_dict())
    else:
        click.echo(f"opened round {r.number} of '{r.task}' against {', '.join(m.name for m in r.models)}"
                   f" ({r.n_contexts} contexts)")


@rounds.command("list")
@click.argument("task", required=False)
@json_option
@pass_app
def rounds_list(app, task, as_json) -> None:
    """List rounds (of TASK, or of every task)."""
    items = ann.list_rounds(app.store, task)
    if as_json:
        echo_json([r.to_dict() for r in items])
        return
    echo_table(["task", "round", "status", "models", "contexts", "opened"],
               [[r.task, r.number, r.status, ", ".join(m.name for m in r.models), r.n_contexts, r.created_at]
                for r in items])


@rounds.command("stats")
@click.argument("task")
@click.option("--round", "round_number", type=int, help="One round (default: every round).")
@json_option
@pass_app
def rounds_stats(app, task, round_number, as_json) -> None:
    """Collected, fooled, verified fooled, MER, vMER, median time and agreement per round and annotator."""
    items = [ann.round_stats(app.store, task, round_number)] if round_number else ann.task_stats(app.store, task)
    if as_json:
        echo_json([s.to_dict() for s in items])
        return
    for s in items:
        alpha = "-" if s.alpha is None else f"{s.alpha:.3f}"
        click.echo(f"{s.task} round {s.round} ({s.status}; {', '.join(s.models)}): collected {s.collected},"
                   f" fooled {s.fooled}, verified fooled {s.verified_fooled}, MER {_pct(s.mer)},"
                   f" vMER {_pct(s.vmer)}, median {s.median_time_ms or 0:.0f} ms, alpha {alpha}")
        if s.assistant.get("assisted"):
            a = s.assistant
            click.echo(f"generative assistant: {a['assisted']} examples written from a draft ({a['edited']} edited),"
                       f" MER {_pct(a['mer_assisted'])} with it, {_pct(a['mer_unassisted'])} without")
        echo_table(["annotator", "collected", "fooled", "v.fooled", "MER raw", "MER Dynabench board", "vMER",
                    "median ms", "validations"],
                   [[a.annotator, a.collected, a.fooled, a.verified_fooled, _pct(a.mer), _pct(a.board_mer),
                     _pct(a.vmer),
                     "-" if a.median_time_ms is None else f"{a.median_time_ms:.0f}", a.validations_given]
                    for a in s.annotators])
        if len(s.by_model) > 1:
            echo_table(["target model", "collected", "fooled", "v.fooled", "MER", "vMER"],
                       [[m.model, m.collected, m.fooled, m.verified_fooled, _pct(m.mer), _pct(m.vmer)]
                        for m in s.by_model])


@rounds.command("report")
@click.argument("task")
@click.option("--model", "models", multiple=True, help="Model to report on (repeatable; default: every model "
                                                       "of the task).")
@click.option("--test-set", "test_sets", multiple=True, help="Base test set (repeatable; default: the task's "
                                                             "test-split datasets).")
@json_option
@pass_app
def rounds_report(app, task, models, test_sets, as_json) -> None:
    """Each model's error rate (%) on each round's verified-fooled examples and on the base test sets.

    Round examples that a reported model was trained on are held out of that round's column."""
    from dynadesk.annotation.report import round_report

    report = round_report(app.store, task, list(models) or None, list(test_sets) if test_sets else None)
    if as_json:
        echo_json(report.to_dict())
        return
    click.echo(f"{report.task}: error rate (%) per model; rounds = verified-fooled examples")
    header = ["model"] + [f"{c.name} (n={c.n}{f', {c.held_out} held out' if c.held_out else ''})"
                          for c in report.columns]
    echo_table(header, [[r.model] + ["-" if r.errors.get(c.name) is None else f"{r.errors[c.name]:.1f}"
                                     for c in report.columns] for r in report.rows])
    for r in report.rows:
        if r.note:
            click.echo(f"{r.model}: {r.note}")


# --------------------------------------------------------------------------- annotate
@click.group()
def annotate() -> None:
    """Create and validate adversarial examples; export, pack, merge, verify."""


@annotate.command("context")
@click.argument("task")
@click.option("--annotator", help="Default: the active annotator.")
@click.option("--seed", type=int, help="Seed the random choice.")
@json_option
@pass_app
def context_cmd(app, task, annotator, seed, as_json) -> None:
    """Draw a context of the open round that the annotator has not used yet."""
    ctx = ann.next_context(app.store, task, annotator, seed)
    if as_json:
        echo_json(ctx.to_dict() if ctx else None)
    elif ctx is None:
        click.echo("this round has no context pool: write every input yourself")
    else:
        click.echo(f"{ctx.id}\n{ctx.text}")


def _parse_inputs(pairs: tuple[str, ...], option: str = "--input") -> dict[str, str]:
    out = {}
    for p in pairs:
        if "=" not in p:
            raise ValidationError(f"{option} {p!r} must look like FIELD=TEXT")
        k, v = p.split("=", 1)
        out[k] = v
    return out


def _create_line(app, task, annotator, model, obj) -> dict:
    if not isinstance(obj, dict) or not isinstance(obj.get("inputs"), dict) or "target" not in obj:
        raise ValidationError("expected an object with 'inputs' (object) and 'target'")
    ex = ann.submit_example(app.store, task, obj.get("annotator", annotator), obj["inputs"], obj["target"],
                            ann.ExampleDetails(obj.get("context_id"), obj.get("explanation", ""),
                                               obj.get("time_ms", 0), obj.get("fields")),
                            model=obj.get("model", model))
    return ex.to_dict()


@annotate.command("create")
@click.argument("task")
@click.option("--input", "inputs", multiple=True, metavar="FIELD=TEXT", help="An input field (repeatable).")
@click.option("--target", help="The label the model should miss (QA: the answer span).")
@click.option("--context-id", help="A context of the round's pool (see 'annotate context').")
@click.option("--model", help="Target model (default: the round's first).")
@click.option("--explanation", default="", help="Why the model is fooled.")
@click.option("--time-ms", type=int, default=0, show_default=True, help="Time spent writing it.")
@click.option("--field", "fields", multiple=True, metavar="NAME=TEXT",
              help="A metadata field the task file declares under metadata.create (repeatable).")
@click.option("--annotator", help="Default: the active annotator.")
@click.option("--batch", type=click.File("r", encoding="utf-8"),
              help="JSONL of {inputs, target, context_id?, explanation?, time_ms?, fields?}; '-' for stdin. Prints"
                   " each id once committed.")
@json_option
@pass_app
def create_cmd(app, task, inputs, target, context_id, model, explanation, time_ms, fields, annotator, batch,
               as_json) -> None:
    """Write an example; the target model answers live and the verdict is stored."""
    if batch is None:
        if target is None:
            raise click.UsageError("--target is required (or use --batch)")
        ex = ann.submit_example(app.store, task, annotator, _parse_inputs(inputs), target,
                                ann.ExampleDetails(context_id, explanation, time_ms, _parse_inputs(fields, "--field")),
                                model=model)
        if as_json:
            echo_json(ex.to_dict())
        else:
            verdict = "FOOLED" if ex.fooled else "not fooled"
            click.echo(f"{ex.uid}  model said {ex.model_output.get('label', ex.model_output.get('answer'))!r}"
                       f" (target {ex.target!r}): {verdict}")
        return
    failed = 0
    for lineno, line in enumerate(batch, 1):
        if not line.strip():
            continue
        try:
            d = _create_line(app, task, annotator, model, loads_bounded(line, f"line {lineno}"))
        except (DynaDeskError, json.JSONDecodeError) as exc:
            failed += 1
            click.echo(f"line {lineno}: {exc}", err=True)
            continue
        click.echo(json.dumps(d, ensure_ascii=False) if as_json else f"{d['uid']}\t{'fooled' if d['fooled'] else '-'}")
        sys.stdout.flush()
    if failed:
        raise DynaDeskError(f"{failed} line(s) were not stored (see above); every other line was")


@annotate.command("list")
@click.argument("task")
@click.option("--round", "round_number", type=int)
@click.option("--annotator")
@json_option
@pass_app
def list_cmd(app, task, round_number, annotator, as_json) -> None:
    """List stored examples with their verdicts and votes."""
    items = ann.list_examples(app.store, task, round_number, annotator)
    if as_json:
        echo_json([{**ex.to_dict(), "status": st.to_dict()} for ex, st in items])
        return
    echo_table(["example", "round", "annotator", "target", "model said", "fooled", "votes", "status"],
               [[ex.uid, ex.round, ex.annotator, ex.target, ex.model_output.get("label", ex.model_output.get("answer")),
                 "yes" if ex.fooled else "no", len(ex.validations), st.status] for ex, st in items])


@annotate.command("queue")
@click.argument("task")
@click.option("--round", "round_number", type=int, help="Default: the latest round.")
@click.option("--annotator", help="Default: the active annotator.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--limit", type=int, default=20, show_default=True)
@json_option
@pass_app
def queue_cmd(app, task, round_number, annotator, seed, limit, as_json) -> None:
    """Examples waiting for this annotator's vote, in serving order."""
    items = ann.validation_queue(app.store, task, annotator, round_number, seed, limit)
    if as_json:
        echo_json([ex.to_dict() for ex in items])
        return
    echo_table(["example", "fooled", "votes", "target", "inputs"],
               [[ex.uid, "yes" if ex.fooled else "no", len(ex.validations), ex.target,
                 " | ".join(ex.inputs.values())[:60]] for ex in items])


@annotate.command("validate")
@click.argument("example")
@click.option("--verdict", type=click.Choice(VERDICTS), required=True)
@click.option("--label", help="Corrected label (QA: answer) for an 'incorrect' verdict.")
@click.option("--reason", default="", help="Why it is flagged.")
@click.option("--field", "fields", multiple=True, metavar="NAME=TEXT",
              help="A metadata field the task file declares under metadata.validate (repeatable).")
@click.option("--annotator", help="Default: the active annotator.")
@json_option
@pass_app
def validate_cmd(app, example, verdict, label, reason, fields, annotator, as_json) -> None:
    """Vote on EXAMPLE (committed before the command returns)."""
    v, st = ann.validate(app.store, example, annotator, verdict, label, reason,
                         metadata=_parse_inputs(fields, "--field"))
    if as_json:
        echo_json({"validation": v.to_dict(), "status": st.to_dict()})
    else:
        click.echo(f"recorded '{v.verdict}' by {v.annotator} on {v.example_uid}: now {st.status}")


@annotate.command("export")
@click.argument("task")
@click.option("--round", "round_number", type=int, help="Default: the latest round.")
@click.option("--status", type=click.Choice(ann.STATUSES), default="all", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="File to write (default: stdout).")
@click.option("--register", "register", metavar="NAME", help="Register it as an evaluation dataset NAME.")
@click.option("--split", default="test", show_default=True, help="Split of the registered dataset.")
@click.option("--replace", is_flag=True, help="Replace a registered dataset of the same name.")
@json_option
@pass_app
def export_cmd(app, task, round_number, status, fmt, output, register, split, replace, as_json) -> None:
    """Write a round in the task's schema (plus annotation metadata), or register it as a dataset."""
    if register:
        d = ann.register_round(app.store, task, register, round_number, status, split, replace)
        echo_json(d.to_dict()) if as_json else click.echo(f"registered {d.size} examples as '{d.name}' ({d.digest})")
        return
    n = ann.export_round(app.store, task, output or sys.stdout, round_number, status, fmt)
    if output:
        click.echo(f"wrote {n} examples to {output}", err=True)


@annotate.command("pack")
@click.argument("output", type=click.Path(dir_okay=False))
@click.option("--task")
@click.option("--round", "round_number", type=int)
@json_option
@pass_app
def pack_cmd(app, output, task, round_number, as_json) -> None:
    """Write this workspace's examples and validations to one file for another machine, signed with its key."""
    from dynadesk.annotation.signing import key_is_encrypted
    from dynadesk.cli.common import key_passphrase

    passphrase = key_passphrase(key_is_encrypted(app.store))
    counts = ann.pack(app.store, output, task, round_number, passphrase)
    echo_json(counts) if as_json else click.echo(
        f"packed {counts['examples']} examples and {counts['validations']} validations into {output}")


@annotate.command("trust")
@click.argument("key_file", type=click.Path(dir_okay=False, exists=True))
@click.option("--name", help="What to call the key (default: the file name).")
@click.option("--person", help="Bind the key to this annotator: only then do their votes in its packs count with"
              " their role here (an owner's).")
@json_option
@pass_app
def trust_cmd(app, key_file: str, name: str | None, person: str | None, as_json: bool) -> None:
    """Merge packs signed by the Ed25519 public key in KEY_FILE ('dynadesk keys export' on its machine)."""
    key = ann.trust_key(app.store, key_file, name, person)
    echo_json(key.to_dict()) if as_json else click.echo(f"trusting packs signed by '{key.name}' {key.fingerprint}")


@annotate.command("trusted")
@json_option
@pass_app
def trusted_cmd(app, as_json: bool) -> None:
    """List the keys whose packs this workspace merges (besides its own)."""
    keys = app.store.annotation.trusted_keys()
    if as_json:
        echo_json([k.to_dict() for k in keys])
        return
    echo_table(["name", "fingerprint", "added"], [[k.name, k.fingerprint, k.added_at] for k in keys])


@annotate.command("merge")
@click.argument("pack_file", type=click.Path(dir_okay=False))
@json_option
@pass_app
def merge_cmd(app, pack_file, as_json) -> None:
    """Merge a signed pack from a trusted machine (no duplicates; refused records listed)."""
    r = ann.merge(app.store, pack_file)
    if as_json:
        echo_json(r.to_dict())
        return
    click.echo(f"merged from {r.origin} (key {r.signer}): {r.examples_added} examples added"
               f" ({r.examples_present} already here), {r.validations_added} validations added"
               f" ({r.validations_present} already here), {r.annotators_added} annotators, {r.rounds_added} rounds;"
               f" model responses re-checked {r.responses_checked}, not checkable here {r.responses_unchecked}")
    for refusal in r.refused:
        click.echo(f"  refused: {refusal}")
    for c in r.conflicts:
        click.echo(f"  note: {c}", err=True)
    if r.held:
        click.echo(f"  held: {r.examples_held} examples, {r.validations_held} votes (identities or targets not known"
                   " here; they count nowhere until an owner runs 'dynadesk annotate accept')")
        for line in r.held:
            click.echo(f"  held: {line}")


@annotate.command("accept")
@click.option("--as", "owner", help="The owner accepting (default: the active annotator).")
@json_option
@pass_app
def accept_cmd(app, owner: str | None, as_json: bool) -> None:
    """Accept every merged record held for an unknown person or target (see 'annotate verify'); owners only."""
    counts = ann.accept_held(app.store, owner)
    echo_json(counts) if as_json else click.echo(
        f"accepted {counts['examples']} held examples and {counts['validations']} held votes")


@annotate.command("verify")
@click.option("--task")
@click.option("--round", "round_number", type=int)
@json_option
@pass_app
def verify_cmd(app, task, round_number, as_json) -> None:
    """Recompute every example's HMAC; exit 1 and list the examples edited after recording."""
    rep = ann.verify(app.store, task, round_number)
    if as_json:
        echo_json(rep.to_dict())
    elif rep.ok:
        click.echo(f"all {rep.checked} examples verify")
    else:
        for uid in rep.edited:
            click.echo(f"EDITED {uid}")
    if not as_json:
        for line in rep.held:
            click.echo(f"HELD {line} (not counted until an owner runs 'dynadesk annotate accept')")
    if not rep.ok:
        raise AnnotationError(f"{len(rep.edited)} of {rep.checked} examples fail the HMAC check:"
                              " their recorded content was edited")
