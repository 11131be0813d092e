"""What a signed-in hub person can do, over the annotation library (no web stack here).

Each method takes a :class:`HubSession` (from :func:`identity.session_for`) and runs on a worker thread
with that thread's own store connection (SQLite connections are not shared between threads). Every rule
is the library's: :func:`dynadesk.annotation.submit_example` decides the target model and the fooled
verdict, :func:`dynadesk.annotation.validate` refuses one's own example and second votes; the hub adds
only roles, request ids (a retried request never stores twice) and the micro-batched live prediction.
"""

from __future__ import annotations

import functools
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk import annotation as ann
from dynadesk.annotation.create import choose_target
from dynadesk.errors import AnnotationError, DynaDeskError, NotFoundError, ValidationError
from dynadesk.hub import identity
from dynadesk.hub.batcher import DEFAULT_MAX_BATCH, DEFAULT_WINDOW_S, BatcherPool, BatchInfo, RunBatch
from dynadesk.hub.lead import require_lead, round_table
from dynadesk.store import tasks as store_tasks
from dynadesk.store.annotation import AnnotatedExample
from dynadesk.store.hub import HubSession
from dynadesk.taskfile_guard import BIDI
from dynadesk.tasks import Task, get_task, load_tasks
from dynadesk.workspace import Workspace

if TYPE_CHECKING:
    from dynadesk.store import Store

TOUCH_EVERY_S = 15.0  # a session's last_seen is written at most this often
MAX_REQUEST_ID = 64


Say = Callable[[str], None]


def _run_for(record: Any, say: Say | None = None) -> RunBatch:
    """The batch function of one model: its own warm predictor (so models never wait on each other's lock)."""
    from dynadesk.models.live import LivePredictor

    predictor = LivePredictor(capacity=1)
    # load now, off every caller's thread: the first request then waits (on the predictor's lock) for less
    threading.Thread(target=_warm, args=(predictor, record, say), name=f"hub-warm-{record.name}",
                     daemon=True).start()

    def run(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return predictor.predict_batch(record, batch)

    return run


def _warm(predictor: Any, record: Any, say: Say | None) -> None:
    """Load one target model; ``say`` tells the operator when it is ready (or why not), which is also when a
    live prediction stops waiting on the load."""
    started = time.monotonic()
    try:
        predictor.warm(record)
    except DynaDeskError as exc:  # the first prediction raises it again, to the person who asked
        if say:
            say(f"  target model {record.name} did not load: {exc} (each prediction asked of it says so)")
        return
    if say:
        say(f"  target model {record.name} ready (loaded in {time.monotonic() - started:.1f} s)")


def task_view(task: Task) -> dict[str, Any]:
    """What the page needs to draw a task's form."""
    return {"name": task.name, "title": task.title, "description": task.description,
            "inputs": [{"name": f.name, "description": f.description, "is_context": f.is_context}
                       for f in task.inputs],
            "output_kind": task.kind.name, "chooses_labels": task.kind.chooses_labels, "labels": list(task.labels),
            "span_of": task.span_of,
            "context_field": task.context_field, "votes_needed": task.votes_needed,
            "guidelines": task.guidelines.to_dict() if task.guidelines else None,
            "create_fields": [f.to_dict() for f in task.create_metadata],
            "validate_fields": [f.to_dict() for f in task.validate_metadata]}


def _fields(body: dict[str, Any]) -> dict[str, Any] | None:
    """The task file's metadata field values a form sent (``fields``: name -> text), checked for hidden text; the
    library checks them against the task's declaration (unknown, missing required, a label not offered)."""
    fields = body.get("fields")
    if fields is None:
        return None
    if not isinstance(fields, dict):
        raise ValidationError("fields must be a mapping of the task's metadata field names to text")
    for name, value in fields.items():
        _check_visible(value, f"fields.{name}")
    return fields


def _span(text: str, span: Any, what: str) -> str:
    """``text[start:end]`` for a ``{"start", "end"}`` of character (code point) offsets the page sent."""
    if not isinstance(span, dict) or set(span) != {"start", "end"}:
        raise ValidationError(f"{what} must be {{\"start\": N, \"end\": M}}: character offsets of the selection")
    start, end = span["start"], span["end"]
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)) \
            or not 0 <= start < end <= len(text):
        raise ValidationError(f"{what} offsets {start!r}..{end!r} do not select text of the {len(text)}-character"
                              " passage (select the answer in the passage)")
    return text[start:end]


def _request_id(body: dict[str, Any]) -> str:
    rid = body.get("request_id")
    if not isinstance(rid, str) or not 8 <= len(rid) <= MAX_REQUEST_ID or not rid.replace("-", "").isalnum():
        raise ValidationError(f"request_id must be 8 to {MAX_REQUEST_ID} letters, digits or dashes"
                              " (one per form submission; a retry sends the same one)")
    return rid


def _check_visible(value: Any, field: str) -> None:
    """Refuse text a validator would not see as written: a bidi control (U+202E shows what follows reversed) or a
    control character other than a line break or tab (NUL included). Emoji joiners and accents pass."""
    if not isinstance(value, str):
        return
    for i, c in enumerate(value):
        if c in BIDI or (unicodedata.category(c) == "Cc" and c not in "\n\r\t"):
            raise ValidationError(f"{field} holds U+{ord(c):04X} {unicodedata.name(c, 'a control character')} at "
                                  f"position {i}: it would show the validator other text than was written; "
                                  "remove it and send again")


@dataclass
class HubCore:
    """The hub's state: the workspace, a store per worker thread, one micro-batcher per model."""

    home: Path
    session_hours: float = identity.DEFAULT_SESSION_HOURS
    window_s: float = DEFAULT_WINDOW_S
    max_batch: int = DEFAULT_MAX_BATCH
    say: Say | None = None  # where the operator reads that a target model is ready (the serve command's output)
    pool: BatcherPool = field(init=False)
    _local: threading.local = field(init=False, default_factory=threading.local)
    _stores: list[Store] = field(init=False, default_factory=list)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _touched: dict[int, float] = field(init=False, default_factory=dict)
    _drafts: dict[tuple[int, str], Any] = field(init=False, default_factory=dict)  # (session, task) -> last Draft

    def __post_init__(self) -> None:
        self.workspace = Workspace(Path(self.home)).ensure()
        self.pool = BatcherPool(functools.partial(_run_for, say=self.say), self.window_s, self.max_batch)
        self._tasks_source = self.workspace.open_store()  # the one store that lends the workspace's tasks

    # -- plumbing ----------------------------------------------------------------------
    def store(self) -> Store:
        """This thread's own connection to the workspace database."""
        st: Store | None = getattr(self._local, "store", None)
        if st is None:
            st = self.workspace.open_store()
            # every open store lends the workspace's tasks to get_task, which asks each of them (a connection
            # each time): one, the hub's own, is enough (with 40 threads' stores each get_task cost 27 ms)
            store_tasks.detach(st)
            self._local.store = st
            with self._lock:
                self._stores.append(st)
        return st

    def close(self) -> None:
        self.pool.close()
        with self._lock:
            stores, self._stores = [*self._stores, self._tasks_source], []
        for st in stores:
            try:
                st.close()
            except Exception:  # noqa: BLE001 - closing at exit: a connection of a finished thread may be gone
                pass

    def authenticate(self, token: str | None) -> HubSession:
        session = identity.session_for(self.store(), token)
        now = time.monotonic()
        if now - self._touched.get(session.id, 0.0) > TOUCH_EVERY_S:
            self._touched[session.id] = now
            self.store().hub.touch(session.id, identity.iso(identity.now_utc()))
        return session

    def sign_in(self, code: str, client: str) -> identity.SignIn:
        return identity.sign_in(self.store(), code, client, self.session_hours)

    def sign_out(self, session: HubSession) -> None:
        self.store().hub.end_session(session.id, identity.iso(identity.now_utc()))

    def warm(self) -> list[str]:
        """Start loading every open round's target models (each on its own batcher's predictor)."""
        st = self.store()
        names = sorted({m for t in self.tasks() for m in t["targets"]})
        for name in names:
            self.pool.for_record(st.models.get(name))
        return names

    # -- reads -------------------------------------------------------------------------
    def tasks(self) -> list[dict[str, Any]]:
        """Every task (bundled or the workspace's) with a round open for creation, and its targets."""
        from dynadesk.models.registry import GENERATIVE_KINDS
        from dynadesk.models.served import served_names

        st = self.store()
        out = []
        served = served_names(st)
        drafts = {m.name for m in st.models.list() if m.kind in GENERATIVE_KINDS}  # targets that can draft
        for name, task in sorted(load_tasks().items()):
            try:
                rnd = ann.get_round(st, name)
            except NotFoundError:
                continue
            if rnd.is_open:
                out.append({**task_view(task), "round": rnd.number, "targets": [m.name for m in rnd.models],
                            "served": [m.name for m in rnd.models if m.name in served],  # "served, not sandboxed"
                            "assistant": [m.name for m in rnd.models if m.name in drafts],  # opt-in drafts
                            "has_pool": bool(rnd.n_contexts and task.context_field)})
        return out

    def context(self, session: HubSession, task: str) -> dict[str, Any] | None:
        ctx = ann.next_context(self.store(), task, session.name)
        return None if ctx is None else ctx.to_dict()

    def models(self) -> list[dict[str, Any]]:
        return self.pool.status()

    def stats(self, session: HubSession, task: str) -> dict[str, Any]:
        s = ann.round_stats(self.store(), task)
        mine = next((a for a in s.annotators if a.annotator == session.name), None)
        return {"task": s.task, "round": s.round, "status": s.status, "collected": s.collected, "fooled": s.fooled,
                "verified_fooled": s.verified_fooled, "mer": s.mer, "vmer": s.vmer, "validations": s.validations,
                "by_model": [m.__dict__ for m in s.by_model], "assistant": s.assistant,
                "mine": None if mine is None else mine.__dict__}

    def next_to_validate(self, session: HubSession, task: str, seed: int = 0,
                         skip: frozenset[str] = frozenset()) -> dict[str, Any] | None:
        """The next example this person may judge, passing over the ones they skipped on their page."""
        st = self.store()
        rnd = ann.get_round(st, task)
        queue = ann.validation_queue(st, task, session.name, rnd.number, seed=seed, limit=len(skip) + 1)
        ex = next((e for e in queue if e.uid not in skip), None)
        return None if ex is None else self._example_view(ex, mine=False)

    def lead_table(self, session: HubSession, task: str) -> dict[str, Any]:
        require_lead(session)
        return round_table(self.store(), task)

    @staticmethod
    def _example_view(ex: AnnotatedExample, mine: bool) -> dict[str, Any]:
        view = {"uid": ex.uid, "task": ex.task, "round": ex.round, "inputs": ex.inputs, "target": ex.target,
                "model": ex.model_name, "model_output": ex.model_output, "fooled": ex.fooled,
                "explanation": ex.explanation, "context_id": ex.context_id}
        if mine:
            view["annotator"] = ex.annotator
        return view

    # -- writes ------------------------------------------------------------------------
    def target_for(self, session: HubSession, task: str) -> str:
        """The model that will answer this person's next example (the library's choice, made now so the
        caller can queue on that model alone)."""
        identity.require_creator(session)
        st = self.store()
        return choose_target(st, ann.open_round(st, get_task(task).name), session.name)

    def assist(self, session: HubSession, body: dict[str, Any]) -> dict[str, Any]:
        """The generative assistant's draft for this person's next example (opt-in: only when asked); kept here so
        the example they then submit with ``"assisted": true`` is recorded against the draft the hub proposed."""
        from dynadesk.annotation.assistant import propose

        identity.require_creator(session)
        task = get_task(str(body.get("task", "")))
        given = body.get("given") or {}
        if not isinstance(given, dict):
            raise ValidationError("given must be a mapping of input field to text")
        label, model = body.get("label"), body.get("model")
        draft = propose(self.store(), task.name, given=given, label=label if isinstance(label, str) else None,
                        model=model if isinstance(model, str) else None)
        with self._lock:
            self._drafts[(session.id, task.name)] = draft
        return draft.to_dict()

    def create(self, session: HubSession, body: dict[str, Any], model: str | None = None) -> dict[str, Any]:
        """Store one example (its target model answers through the batcher); a repeated request id answers
        with the example the first request stored."""
        identity.require_creator(session)
        st = self.store()
        rid = _request_id(body)
        task = get_task(str(body.get("task", "")))
        draft = self._draft_for(session, task.name, body.get("assisted", False))
        inputs = body.get("inputs")
        if not isinstance(inputs, dict):
            raise ValidationError(f"inputs must be a mapping of {', '.join(task.input_names)}")
        context_id = body.get("context_id")
        if context_id is not None and not isinstance(context_id, str):
            raise ValidationError("context_id must be text")
        target: Any
        if not task.kind.chooses_labels:  # the annotator selected text of the context: char offsets
            rnd = ann.open_round(st, task.name)
            passage = st.annotation.get_context(rnd.id, context_id) if context_id else inputs.get(task.span_of)
            if not isinstance(passage, str):
                raise ValidationError(f"input '{task.span_of}' must be text (or a context id of the round's pool)")
            target = _span(passage, body.get("answer"), "answer")
        else:
            target = body.get("target")
        time_ms = body.get("time_ms", 0)
        explanation = body.get("explanation", "")
        for where, value in [*((f"inputs.{k}", v) for k, v in inputs.items()), ("explanation", explanation)]:
            _check_visible(value, where)
        fields = _fields(body)
        prior = st.hub.reserve_write(session.name, session.id, "example", rid, identity.iso(identity.now_utc()))
        if prior is not None:
            return self._replay(st, session, "example", rid, prior)
        info: list[BatchInfo] = []

        def predict(store: Store, name: str, clean: dict[str, Any]) -> dict[str, Any]:
            out, cost = self.pool.for_record(store.models.get(name)).predict(clean)
            info.append(cost)
            return out

        try:
            ex = ann.submit_example(st, task.name, session.name, inputs, target,
                                    ann.ExampleDetails(context_id, explanation, time_ms, fields), model=model,
                                    predict=predict)
        except BaseException:
            st.hub.finish_write(session.name, "example", rid, None)
            raise
        st.hub.finish_write(session.name, "example", rid, ex.uid)
        view = self._example_view(ex, mine=True)
        if draft is not None:
            from dynadesk.annotation.assistant import record_use

            view["assist"] = record_use(st, ex, draft).to_dict()
            with self._lock:
                self._drafts.pop((session.id, task.name), None)
        if info:
            view["live"] = info[0].__dict__
        return view

    def _draft_for(self, session: HubSession, task: str, assisted: object) -> Any:
        """The draft proposed to this session for ``task`` when the example says it was written from one."""
        if assisted is False or assisted is None:
            return None
        if assisted is not True:
            raise ValidationError("assisted must be true or false")
        with self._lock:
            draft = self._drafts.get((session.id, task))
        if draft is None:
            raise ValidationError(f"the example says it was written from the assistant's draft, but no draft for "
                                  f"'{task}' was proposed to this session; ask for one (Suggest a draft) first")
        return draft

    def vote(self, session: HubSession, body: dict[str, Any]) -> dict[str, Any]:
        st = self.store()
        rid = _request_id(body)
        uid = body.get("uid")
        if not isinstance(uid, str):
            raise ValidationError("uid must name the example being judged")
        ex = st.annotation.get_example(uid)
        task = get_task(ex.task)
        label = body.get("label")
        if label is not None and not task.kind.chooses_labels:
            label = _span(ex.inputs[str(task.span_of)], label, "corrected answer")
        fields = _fields(body)
        prior = st.hub.reserve_write(session.name, session.id, "vote", rid, identity.iso(identity.now_utc()))
        if prior is not None:
            return self._replay(st, session, "vote", rid, prior)
        try:
            v, status = ann.validate(st, uid, session.name, str(body.get("verdict", "")), label,
                                     str(body.get("reason") or ""), metadata=fields)
        except BaseException:
            st.hub.finish_write(session.name, "vote", rid, None)
            raise
        st.hub.finish_write(session.name, "vote", rid, v.uid)
        return {"uid": v.uid, "example": uid, "verdict": v.verdict, "status": status.to_dict()}

    def _replay(self, st: Store, session: HubSession, kind: str, rid: str, uid: str) -> dict[str, Any]:
        if not uid:
            raise AnnotationError(f"request {rid} of '{session.name}' is already being stored (or failed);"
                                  " send a new request id to try again")
        if kind == "example":
            return {**self._example_view(st.annotation.get_example(uid), mine=True), "replayed": True}
        return {"uid": uid, "replayed": True}
