"""Model-in-the-loop adversarial annotation (Dynabench-style), as a library.

The CLI (``dynadesk annotators|rounds|annotate``) and the GUI's Annotate /
Validate / Rounds pages are thin layers over these functions. Every call takes
the open :class:`dynadesk.store.Store` first; every write is committed before
the call returns. Errors are :class:`dynadesk.errors.DynaDeskError` subclasses
whose message can be shown to the user as-is.

API summary
-----------
Annotators (``annotators``)
    ``add_annotator(store, name, role="annotator"|"owner") -> Annotator``
    ``list_annotators(store)``, ``use_annotator(store, name)`` (sets the active one),
    ``active_annotator(store) -> Annotator | None``, ``resolve_annotator(store, name|None)``.
Rounds (``rounds``)
    ``new_round(store, task, models=[...], contexts_file=None, created_by=None) -> Round``
    (closes the task's open round), ``list_rounds(store, task=None)``,
    ``get_round(store, task, number=None)`` (latest), ``open_round(store, task)``,
    ``read_contexts(task, path)``.
Create (``create``)
    ``next_context(store, task, annotator) -> Context | None`` — a random context of the
    open round that this annotator has not used yet (None when the round has no pool).
    ``submit_example(store, task, annotator, inputs, target, model=None, context_id=None,
    explanation="", time_ms=0) -> AnnotatedExample`` — predicts live with the round's
    target model, stores the example with model output, digest, fooled verdict and HMAC.
    ``is_fooled(task, target, output) -> bool``.
Validate (``validate``)
    ``next_to_validate(store, task, annotator, round=None, seed=0) -> AnnotatedExample | None``,
    ``validation_queue(..., limit=20)``,
    ``validate(store, example_uid, annotator, verdict, label=None, reason="") -> (Validation, ExampleStatus)``,
    ``example_status(example, votes_needed) -> ExampleStatus``,
    ``list_examples(store, task, round=None, annotator=None) -> [(AnnotatedExample, ExampleStatus)]``.
Statistics (``stats``)
    ``round_stats(store, task, round=None) -> RoundStats`` (MER, vMER, median time, alpha,
    per-annotator rows), ``task_stats(store, task) -> list[RoundStats]``,
    ``krippendorff_alpha_nominal(units)``.
Export, packs, integrity (``export``, ``pack``, ``integrity``)
    ``export_round(store, task, out, round=None, status="all"|"verified-fooled", fmt="jsonl")``,
    ``register_round(store, task, name, round=None, status=..., split="test")``,
    ``pack(store, out_path, task=None, round=None)``, ``merge(store, pack_path) -> MergeReport``,
    ``verify(store, task=None) -> VerifyReport`` (recomputes every example's HMAC).
"""

from __future__ import annotations

from dynadesk.annotation.annotators import (
    active_annotator,
    add_annotator,
    list_annotators,
    resolve_annotator,
    use_annotator,
)
from dynadesk.annotation.create import Context, is_fooled, next_context, submit_example
from dynadesk.annotation.export import STATUSES, export_examples, export_round, register_round
from dynadesk.annotation.integrity import VerifyReport, verify
from dynadesk.annotation.pack import MergeReport, merge, pack, read_pack
from dynadesk.annotation.rounds import get_round, list_rounds, new_round, open_round, read_contexts
from dynadesk.annotation.stats import RoundStats, krippendorff_alpha_nominal, round_stats, task_stats
from dynadesk.annotation.validate import (
    ExampleStatus,
    example_status,
    list_examples,
    next_to_validate,
    validate,
    validation_queue,
)

__all__ = [
    "active_annotator", "add_annotator", "list_annotators", "resolve_annotator", "use_annotator",
    "Context", "is_fooled", "next_context", "submit_example",
    "STATUSES", "export_examples", "export_round", "register_round",
    "VerifyReport", "verify", "MergeReport", "merge", "pack", "read_pack",
    "get_round", "list_rounds", "new_round", "open_round", "read_contexts",
    "RoundStats", "krippendorff_alpha_nominal", "round_stats", "task_stats",
    "ExampleStatus", "example_status", "list_examples", "next_to_validate", "validate", "validation_queue",
]
