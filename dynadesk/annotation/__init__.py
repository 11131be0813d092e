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
    ``submit_example(store, task, annotator, inputs, target, details=None, model=None)
    -> AnnotatedExample`` (``details``: an ``ExampleDetails`` of context id, explanation, time spent and
    metadata fields) — predicts live with the round's
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
    ``pack(store, out_path, task=None, round=None)`` (signed with the workspace key),
    ``merge(store, pack_path) -> MergeReport`` (trusted signers only; refused records listed),
    ``trust_key(store, key_file)``, ``export_pack_key(store, out)``,
    ``verify(store, task=None) -> VerifyReport`` (recomputes every example's HMAC; lists held pack records),
    ``accept_held(store, owner)`` (an owner here accepts the records a merge held).
"""

from __future__ import annotations

from dynadesk.annotation.annotators import (
    active_annotator,
    add_annotator,
    list_annotators,
    resolve_annotator,
    use_annotator,
)
from dynadesk.annotation.create import Context, ExampleDetails, is_fooled, next_context, submit_example
from dynadesk.annotation.export import STATUSES, export_examples, export_round, neutralise_formulas, register_round
from dynadesk.annotation.held import accept_held
from dynadesk.annotation.integrity import VerifyReport, verify
from dynadesk.annotation.pack import MergeReport, merge, pack, read_pack, read_pack_unverified, write_signed_pack
from dynadesk.annotation.rounds import get_round, list_rounds, new_round, open_round
from dynadesk.annotation.signing import export_pack_key, trust_key
from dynadesk.annotation.stats import RoundStats, krippendorff_alpha_nominal, round_stats, task_stats
from dynadesk.annotation.validate import (
    ExampleStatus,
    example_status,
    list_examples,
    next_to_validate,
    validate,
    validation_queue,
)
from dynadesk.formats.contexts import read_contexts

__all__ = [
    "STATUSES",
    "Context",
    "ExampleDetails",
    "ExampleStatus",
    "MergeReport",
    "RoundStats",
    "VerifyReport",
    "accept_held",
    "active_annotator",
    "add_annotator",
    "example_status",
    "export_examples",
    "export_pack_key",
    "export_round",
    "get_round",
    "is_fooled",
    "krippendorff_alpha_nominal",
    "list_annotators",
    "list_examples",
    "list_rounds",
    "merge",
    "neutralise_formulas",
    "new_round",
    "next_context",
    "next_to_validate",
    "open_round",
    "pack",
    "read_contexts",
    "read_pack",
    "read_pack_unverified",
    "register_round",
    "resolve_annotator",
    "round_stats",
    "submit_example",
    "task_stats",
    "trust_key",
    "use_annotator",
    "validate",
    "validation_queue",
    "verify",
    "write_signed_pack",
]
