"""Moving annotation work between offline machines: one signed pack file, merged without duplicates.

A pack is one JSON document (``format``/``version`` header, annotators, rounds
with their target models and context pools, examples, validations) signed with
the exporting workspace's Ed25519 key (``signer`` + ``signature`` over the
canonical JSON of everything else; see :mod:`dynadesk.annotation.signing`).
A merge takes packs only from this workspace's own key or keys it trusts, so
a hand-edited file is refused whatever digest it carries. Even a trusted pack
is checked record by record: ``fooled`` is recomputed from the recorded model
output and target with the task's rule, the recorded response is compared with
the same model (same digest) when this workspace has it, and roles are never
granted (an owner is made locally). Identities a pack cannot prove are held
(:mod:`dynadesk.annotation.held`): a vote counts with an owner's weight only when
made here or signed by a key bound to that person, and examples or votes by
people this workspace did not know, or answered by a round target it never had,
are merged held, counting nowhere until an owner here accepts them. Each refused record is listed in the
report; everything else merges in one transaction. Examples and validations
keep the uids minted where they were made: merging the same pack twice, or a
pack of a machine's own work, adds nothing. Examples whose HMAC no longer
verifies are never packed; merged examples are re-signed with the receiving
workspace's secret.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.annotation import held, signing
from dynadesk.annotation.annotators import check_name
from dynadesk.annotation.create import check_inputs, check_output, check_target, is_fooled
from dynadesk.annotation.integrity import compute_hmac, signed_fields, tampered, workspace_id, workspace_secret
from dynadesk.annotation.pack_identity import base_name
from dynadesk.annotation.pack_tasks import pack_task_problems, task_definitions
from dynadesk.errors import AnnotationError, ConfigError, DynaDeskError, NotFoundError, ValidationError
from dynadesk.jsonio import loads_bounded
from dynadesk.names import check_name as check_any_name
from dynadesk.store.annotation import ROLES, VERDICTS, AnnotatedExample, AnnotationRepo, RoundModel
from dynadesk.store.datasets import now_iso
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

FORMAT = "dynadesk-annotation-pack"
VERSION = 2
MAX_PACK_BYTES = 1 << 30
_UID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")


def pack(store: Store, out_path: str | Path, task: str | None = None, round_number: int | None = None,
         passphrase: str | None = None) -> dict[str, int]:
    """Write every example and validation (optionally of one task / round) to ``out_path``, signed."""
    if round_number is not None and task is None:
        raise ValidationError("--round needs --task")
    if task is not None:
        get_task(task)
    examples = store.annotation.examples(task, round_number)
    bad = tampered(store, examples)
    if bad:
        raise AnnotationError(f"{len(bad)} example(s) fail the HMAC check and are not packed: {', '.join(bad[:10])}"
                              " (see 'dynadesk annotate verify')")
    rounds = [r for r in store.annotation.list_rounds(task) if round_number is None or r.number == round_number]
    names = {ex.annotator for ex in examples} | {v.annotator for ex in examples for v in ex.validations}
    names |= {r.created_by for r in rounds if r.created_by}
    body: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "origin": workspace_id(store), "created_at": now_iso(),
        "annotators": [a.to_dict() for a in store.annotation.list_annotators() if a.name in names],
        "rounds": [{"task": r.task, "number": r.number, "status": r.status, "created_by": r.created_by,
                    "created_at": r.created_at, "models": [{"name": m.name, "digest": m.digest} for m in r.models],
                    "contexts": [{"id": cid, "text": text} for cid, text in store.annotation.contexts(r.id)]}
                   for r in rounds],
        "examples": [{k: v for k, v in signed_fields(ex).items()} | {
            "explanation": ex.explanation, "time_ms": ex.time_ms, "origin": ex.origin} for ex in examples],
        "validations": [{"uid": v.uid, "example_uid": v.example_uid, "annotator": v.annotator, "verdict": v.verdict,
                         "label": v.label, "reason": v.reason, "origin": v.origin, "created_at": v.created_at}
                        for ex in examples for v in ex.validations],
        "tasks": task_definitions([r.task for r in rounds] + [ex.task for ex in examples]),
    }
    write_signed_pack(store, body, out_path, passphrase)
    return {"annotators": len(body["annotators"]), "rounds": len(rounds), "examples": len(body["examples"]),
            "validations": len(body["validations"])}


def write_signed_pack(store: Store, body: dict[str, Any], out_path: str | Path,
                      passphrase: str | None = None) -> Path:
    """Sign ``body`` with this workspace's key and write it atomically (any earlier signature is replaced)."""
    signed = signing.sign(body, signing.signing_key(store, passphrase))
    out_path = Path(out_path)
    tmp = out_path.with_name(out_path.name + ".part")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(signed, fh, ensure_ascii=False, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, out_path)
    return out_path


class _Checker:
    """Collects every problem with its JSON path, so one run reports them all."""

    def __init__(self, path: Path):
        self.path = path
        self.problems: list[str] = []

    def need(self, obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str,
             optional: bool = False) -> Any:
        if key not in obj:
            if not optional:
                self.problems.append(f"{where}: missing field '{key}'")
            return None
        value = obj[key]
        if value is None and optional:
            return None
        if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, (int, float))):
            expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.problems.append(f"{where}.{key}: expected {expected}, got {type(value).__name__}")
            return None
        return value

    def entries(self, items: list[Any], name: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each entry of the list ``name`` that is an object, with its JSON path (``name[i]``); any other entry is
        a problem, so every section's checks see objects only."""
        for i, item in enumerate(items):
            where = f"{name}[{i}]"
            if isinstance(item, dict):
                yield where, item
            else:
                self.problems.append(f"{where}: expected an object")

    def uid(self, obj: dict[str, Any], key: str, where: str) -> str | None:
        value: str | None = self.need(obj, key, str, where)
        if value is not None and not _UID.match(value):
            self.problems.append(f"{where}.{key}: {value[:40]!r} is not a valid id")
            return None
        return value

    def fail(self) -> None:
        if self.problems:
            raise ValidationError(f"{self.path}: not a valid annotation pack; nothing was merged", self.problems)


def read_pack_unverified(path: str | Path) -> dict[str, Any]:
    """Load a pack file and check its header only (no signature or trust check: for inspection)."""
    path = Path(path)
    if not path.is_file():
        raise ValidationError(f"{path}: no such pack file")
    if path.stat().st_size > MAX_PACK_BYTES:
        raise ValidationError(f"{path}: {path.stat().st_size} bytes, over the {MAX_PACK_BYTES} byte pack limit")
    try:
        body = loads_bounded(path.read_text(encoding="utf-8"), str(path))
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: not valid UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise ValidationError(f"{path}: not a DynaDesk annotation pack (field 'format' is not '{FORMAT}')")
    if body.get("version") == 1:
        raise ValidationError(f"{path}: an unsigned version 1 pack, which anyone could have edited; ask its sender"
                              " to pack it again with this version (packs are now signed)")
    if body.get("version") != VERSION:
        raise ValidationError(f"{path}: pack version {body.get('version')!r} is not supported (this is {VERSION})")
    return body


def read_pack(store: Store, path: str | Path) -> tuple[dict[str, Any], str]:
    """Load a pack, verify its signature and that this workspace trusts the signer, and check it strictly.

    Returns the body and the signer's fingerprint; a :class:`ValidationError` lists every problem found."""
    body = read_pack_unverified(path)
    fingerprint = signing.verify(body, str(path))
    signing.require_trusted(store, fingerprint, str(path))
    c = _Checker(Path(path))
    for key in ("origin", "created_at"):
        c.need(body, key, str, "pack")
    for key in ("annotators", "rounds", "examples", "validations"):
        c.need(body, key, list, "pack")
    c.problems.extend(pack_task_problems(body))  # a task this workspace lacks: add it first (names its digest)
    c.fail()
    _check_annotators(c, body["annotators"])
    tasks = _check_rounds(c, body["rounds"])
    c.fail()
    _check_examples(c, body, tasks)
    c.fail()
    _check_validations(c, body, tasks)
    c.fail()
    return body, fingerprint


def _check_annotators(c: _Checker, annotators: list[Any]) -> None:
    seen = set()
    for where, a in c.entries(annotators, "annotators"):
        name = c.need(a, "name", str, where)
        role = c.need(a, "role", str, where)
        c.need(a, "created_at", str, where)
        if name is not None:
            try:  # a pack identity (a re-exported merge) is checked by the name it carries
                check_name(base_name(name), f"{where}.name")
            except ValidationError as exc:
                c.problems.append(str(exc))
            if name in seen:
                c.problems.append(f"{where}: annotator '{name}' listed twice")
            seen.add(name)
        if role is not None and role not in ROLES:
            c.problems.append(f"{where}.role: '{role}' is not one of {', '.join(ROLES)}")


def _check_rounds(c: _Checker, rounds: list[Any]) -> dict[str, Task]:
    tasks: dict[str, Task] = {}
    seen = set()
    for where, r in c.entries(rounds, "rounds"):
        name = c.need(r, "task", str, where)
        number = c.need(r, "number", int, where)
        status = c.need(r, "status", str, where)
        c.need(r, "created_at", str, where)
        c.need(r, "created_by", str, where, optional=True)
        models = c.need(r, "models", list, where) or []
        contexts = c.need(r, "contexts", list, where) or []
        if name is not None and name not in tasks:
            try:
                tasks[name] = get_task(name)
            except (NotFoundError, ConfigError) as exc:
                c.problems.append(f"{where}.task: {exc}")
        if number is not None and number < 1:
            c.problems.append(f"{where}.number: must be >= 1")
        if (name, number) in seen:
            c.problems.append(f"{where}: round {number} of '{name}' listed twice")
        seen.add((name, number))
        if status not in (None, "open", "closed"):
            c.problems.append(f"{where}.status: '{status}' is not open or closed")
        if not models:
            c.problems.append(f"{where}.models: a round needs at least one target model")
        for j, m in enumerate(models):
            if not isinstance(m, dict) or not isinstance(m.get("name"), str) or not isinstance(m.get("digest"), str):
                c.problems.append(f"{where}.models[{j}]: expected {{name, digest}} strings")
                continue
            try:
                check_any_name(m["name"], f"{where}.models[{j}].name")
            except ValidationError as exc:
                c.problems.append(str(exc))
        for j, ctx in enumerate(contexts):
            if not isinstance(ctx, dict) or not isinstance(ctx.get("id"), str) or not isinstance(ctx.get("text"), str) \
                    or not ctx["text"].strip():
                c.problems.append(f"{where}.contexts[{j}]: expected {{id, text}} non-empty strings")
    return tasks


def _check_examples(c: _Checker, body: dict[str, Any], tasks: dict[str, Task]) -> None:
    rounds = {(r["task"], r["number"]): r for r in body["rounds"]}
    people = {a["name"] for a in body["annotators"]}
    seen = set()
    for where, ex in c.entries(body["examples"], "examples"):
        uid = c.uid(ex, "uid", where)
        for key, kind in (("task", str), ("round", int), ("annotator", str), ("model_name", str),
                          ("model_digest", str), ("model_output", dict), ("fooled", bool), ("explanation", str),
                          ("time_ms", int), ("origin", str), ("created_at", str), ("inputs", dict)):
            c.need(ex, key, kind, where)
        c.need(ex, "context_id", str, where, optional=True)
        if "target" not in ex:
            c.problems.append(f"{where}: missing field 'target'")
        if uid in seen:
            c.problems.append(f"{where}: example '{uid}' listed twice")
        seen.add(uid)
        rnd = rounds.get((ex.get("task"), ex.get("round")))
        if rnd is None:
            c.problems.append(f"{where}: round {ex.get('round')} of '{ex.get('task')}' is not in the pack")
        elif ex.get("model_name") not in {m["name"] for m in rnd["models"]}:
            c.problems.append(f"{where}.model_name: '{ex.get('model_name')}' is not a target of its round")
        if ex.get("annotator") not in people:
            c.problems.append(f"{where}.annotator: '{ex.get('annotator')}' is not in the pack's annotators")
        task = tasks.get(str(ex.get("task")))
        if task is not None and isinstance(ex.get("inputs"), dict) and "target" in ex:
            try:
                inputs = check_inputs(task, ex["inputs"], None)
                check_target(task, ex["target"], inputs)
                if isinstance(ex.get("time_ms"), int) and ex["time_ms"] < 0:
                    raise ValidationError("field 'time_ms' must be >= 0")
            except ValidationError as exc:
                c.problems.append(f"{where}: {exc}".replace("\n", " "))


def _check_validations(c: _Checker, body: dict[str, Any], tasks: dict[str, Task]) -> None:
    examples = {ex["uid"]: ex for ex in body["examples"]}
    people = {a["name"] for a in body["annotators"]}
    seen, votes = set(), set()
    for where, v in c.entries(body["validations"], "validations"):
        uid = c.uid(v, "uid", where)
        ex_uid = c.uid(v, "example_uid", where)
        who = c.need(v, "annotator", str, where)
        verdict = c.need(v, "verdict", str, where)
        for key in ("reason", "origin", "created_at"):
            c.need(v, key, str, where)
        if uid in seen:
            c.problems.append(f"{where}: validation '{uid}' listed twice")
        seen.add(uid)
        if verdict is not None and verdict not in VERDICTS:
            c.problems.append(f"{where}.verdict: '{verdict}' is not one of {', '.join(VERDICTS)}")
        if who is not None and who not in people:
            c.problems.append(f"{where}.annotator: '{who}' is not in the pack's annotators")
        ex = examples.get(ex_uid)
        if ex is None:
            c.problems.append(f"{where}.example_uid: example '{ex_uid}' is not in the pack")
            continue
        if who == ex["annotator"]:
            c.problems.append(f"{where}: '{who}' validates their own example '{ex_uid}'")
        if (ex_uid, who) in votes:
            c.problems.append(f"{where}: '{who}' votes twice on example '{ex_uid}'")
        votes.add((ex_uid, who))
        task = tasks.get(ex["task"])
        if verdict == "incorrect" and task is not None:
            try:
                check_target(task, v.get("label"), ex["inputs"], what="corrected label")
            except ValidationError as exc:
                c.problems.append(f"{where}: {exc}")
        elif v.get("label") is not None:
            c.problems.append(f"{where}.label: only an 'incorrect' verdict carries a label")


@dataclass
class MergeReport:
    origin: str
    signer: str = ""
    annotators_added: int = 0
    rounds_added: int = 0
    examples_added: int = 0
    examples_present: int = 0
    validations_added: int = 0
    validations_present: int = 0
    responses_checked: int = 0
    responses_unchecked: int = 0
    refused: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    examples_held: int = 0
    validations_held: int = 0
    held: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _example_obj(ex: dict[str, Any]) -> AnnotatedExample:
    return AnnotatedExample(
        uid=ex["uid"], task=ex["task"], round=ex["round"], annotator=ex["annotator"], inputs=ex["inputs"],
        target=ex["target"], model_name=ex["model_name"], model_digest=ex["model_digest"],
        model_output=ex["model_output"], fooled=ex["fooled"], explanation=ex["explanation"], time_ms=ex["time_ms"],
        hmac="", origin=ex["origin"], created_at=ex["created_at"], context_id=ex.get("context_id"))


def _same_model_here(store: Store, ex: AnnotatedExample) -> str | None:
    """A model registered here with the digest the example records (one the host may load), if any."""
    for record in store.models.list(ex.task):
        if record.digest == ex.model_digest and not record.has_pickle:
            return record.name
    return None


def _refusal(store: Store, ex: AnnotatedExample, round_digests: dict[str, str], report: MergeReport) -> str | None:
    """Why the example must not be merged, or None; counts the model-response checks it could make."""
    task = get_task(ex.task)
    if round_digests.get(ex.model_name) != ex.model_digest:
        return f"model '{ex.model_name}' {ex.model_digest[:19]}... is not the round's target version"
    try:
        output = check_output(task, ex.model_name, ex.model_output)
    except DynaDeskError as exc:
        return f"recorded model output is malformed: {exc}"
    fooled = is_fooled(task, ex.target, output)
    if fooled != ex.fooled:
        return (f"claims fooled={str(ex.fooled).lower()}, but the task's rule on the recorded model output and target"
                f" gives fooled={str(fooled).lower()}")
    local = _same_model_here(store, ex)
    if local is None:
        report.responses_unchecked += 1
        return None
    from dynadesk.models import predict_live

    key = task.kind.output_key
    try:
        answer = predict_live(store, local, dict(ex.inputs))[key]
    except DynaDeskError:
        report.responses_unchecked += 1
        return None
    report.responses_checked += 1
    if answer != output[key]:
        return (f"the recorded model response {key}={output[key]!r} is not what model '{local}' (same digest)"
                f" answers here ({answer!r})")
    return None


def merge(store: Store, path: str | Path) -> MergeReport:
    """Merge a signed pack from a trusted key; existing uids are kept, not duplicated.

    Records that fail a check (a wrong ``fooled``, an edited model response, an
    example whose uid exists here with other content, votes on refused examples,
    roles) are left out and listed in ``refused``; a vote by someone who already
    voted on that example here is listed in ``conflicts``."""
    body, fingerprint = read_pack(store, path)
    report = MergeReport(origin=body["origin"], signer=fingerprint)
    repo = store.annotation
    trust = held.Provenance.before_merge(store, body, fingerprint)
    digests = {(r["task"], r["number"]): {m["name"]: m["digest"] for m in r["models"]} for r in body["rounds"]}
    candidates, refused_uids = [], set()
    for i, raw in enumerate(body["examples"]):
        ex = _example_obj(raw)
        if repo.has_example(ex.uid):
            if signed_fields(repo.get_example(ex.uid, with_validations=False)) == signed_fields(ex):
                report.examples_present += 1
            else:
                report.refused.append(f"examples[{i}] ({ex.uid}): differs from the example with this id here")
                refused_uids.add(ex.uid)
            continue
        reason = _refusal(store, ex, digests[(ex.task, ex.round)], report)
        if reason is None:
            candidates.append(ex)
        else:
            report.refused.append(f"examples[{i}] ({ex.uid}): {reason}")
            refused_uids.add(ex.uid)
    secret = workspace_secret(store)
    with store.atomic():
        _merge_annotators(repo, body["annotators"], report)
        for r in body["rounds"]:
            unknown = trust.unknown_targets(r)
            report.held += [f"target '{m}' of {r['task']} round {r['number']}: {why}" for m, why in unknown.items()]
            if repo.ensure_round(r["task"], r["number"], r["status"], [RoundModel(m["name"], m["digest"])
                                 for m in r["models"]], [(x["id"], x["text"]) for x in r["contexts"]],
                                 r.get("created_by"), r["created_at"], held=unknown):
                report.rounds_added += 1
        new_examples = []
        for ex in candidates:
            ex.hmac = compute_hmac(secret, ex)
            ex.held = trust.example_hold(ex)
            if ex.held:
                report.examples_held += 1
                report.held.append(f"example {ex.uid}: {ex.held}")
            new_examples.append((ex, repo.round_id(ex.task, ex.round)))
        known = repo.validation_uids()
        new_votes = []
        for i, v in enumerate(body["validations"]):
            if v["uid"] in known:
                report.validations_present += 1
            elif v["example_uid"] in refused_uids:
                report.refused.append(f"validations[{i}] ({v['uid']}): its example '{v['example_uid']}' was refused")
            else:
                vote, notes = trust.merged_vote(repo, v)
                for kind, text in notes:
                    {"conflicts": report.conflicts, "refused": report.refused, "held": report.held}[kind].append(text)
                if vote is not None:
                    report.validations_held += vote.held is not None
                    new_votes.append(vote)
        repo.merge_rows(new_examples, new_votes)
        report.examples_added = len(new_examples)
        report.validations_added = len(new_votes)
    return report


def _merge_annotators(repo: AnnotationRepo, annotators: list[dict[str, Any]], report: MergeReport) -> None:
    """Add missing people as plain annotators: a pack never grants a role (owners are made locally)."""
    for a in annotators:
        added = repo.ensure_annotator(a["name"], "annotator", a["created_at"])
        if added:
            report.annotators_added += 1
        local = "annotator" if added else repo.get_annotator(a["name"]).role
        if a["role"] == "owner" and local != "owner":
            report.refused.append(f"annotator '{a['name']}': role 'owner' not granted (roles are made locally:"
                                  f" 'dynadesk annotators add {a['name']} --role owner' on this machine)")
        elif a["role"] != local:
            report.conflicts.append(f"annotator '{a['name']}' is '{a['role']}' in the pack; kept the local role")
