"""Robustness and fairness suites: seeded, versioned, content-digested derived datasets.

``perturb_examples(task, examples, suite, seed)`` is pure: the same examples, suite
and seed always give the same perturbed examples (each op draws from a
``random.Random`` seeded with the suite version, the seed and the example id, so the
output does not depend on example order or on the process). Only the task's
``perturb_fields`` are changed (default: every input but the span context), so QA
answer spans stay valid; an example that a suite leaves unchanged is dropped, never
copied. Each perturbed example keeps the gold field and gets ``metadata.source_id``
(the original id) and ``metadata.perturbation`` (suite and what changed).

``generate_suites(store, dataset, suites=None, seed=0, replace=False)`` stores one
derived dataset per suite, named ``<dataset>.<suite>.s<seed>``, with
``derived_from=<dataset>`` and ``derivation={"suite", "kind", "seed", "version",
"source_digest", "perturbed", "dropped"}``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dynadesk.datasets import (
    DatasetOrigin,
    DatasetSummary,
    dataset_digest,
    label_counts,
    validate_example,
)
from dynadesk.errors import AlreadyExistsError, ValidationError
from dynadesk.scoring.augly_suite import AUGLY_OPS, DEFAULT_SUITE_SET, SUITE_SET
from dynadesk.scoring.gender import ethnic_names, gender
from dynadesk.scoring.textops import ROBUSTNESS_OPS, Op, protected_tokens
from dynadesk.scoring.wordlists import LISTS_VERSION
from dynadesk.tasks import FAIRNESS_SUITES, ROBUSTNESS_SUITES, Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

OPS_VERSION = "4"  # 4: surname-only persons, businesses, slash titles, coordinated full names left alone;
# unpaired -man nouns; lists 4. (3: names beside all-caps, particle, '&' or lower-case surname neighbours)
VERSION = f"ops{OPS_VERSION}-lists{LISTS_VERSION}"
# What every op's random generator is seeded with besides suite, seed, example and field. Frozen at the version
# it was when it stopped following VERSION (ops2-lists2): a new version regenerates every suite (VERSION is in
# each copy's metadata, so every digest changes and stored suites are upgraded), but only the examples whose
# perturbation the change really alters get another text, so a reviewer reads the examples a change touches.
RNG_SALT = "ops2-lists2"
SUITES: dict[str, str] = {**{s: "robustness" for s in ROBUSTNESS_SUITES}, **{s: "fairness" for s in FAIRNESS_SUITES},
                          **{s: "robustness" for s in AUGLY_OPS}}
OPS: dict[str, Op] = {**ROBUSTNESS_OPS, "gender": gender, "ethnic_names": ethnic_names, **AUGLY_OPS}
# Robustness suite sets: DynaDesk's own (the default) and the reference's AugLy families (opt-in,
# ``dynadesk perturb --suite-set dynaboard-augly``). One test set's robustness suites come from one set,
# since every robustness suite of a test set is pooled into its one robustness value.
SUITE_SETS: dict[str, tuple[str, ...]] = {DEFAULT_SUITE_SET: ROBUSTNESS_SUITES, SUITE_SET: tuple(AUGLY_OPS)}


def suite_set_of(suite: str) -> str | None:
    """The robustness suite set a suite belongs to (None for a fairness suite)."""
    return next((name for name, members in SUITE_SETS.items() if suite in members), None)
MAX_ID = 200


@dataclass
class SuiteResult:
    suite: str
    kind: str
    name: str          # derived dataset name
    status: str        # created | replaced | upgraded (older suite version) | resized | unchanged | empty | retired
    size: int          # source examples the suite changed (one perturbed copy each)
    dropped: int       # source examples it left unchanged
    digest: str | None

    @property
    def coverage(self) -> float:
        """Percent of the source examples the suite changed."""
        total = self.size + self.dropped
        return 100.0 * self.size / total if total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "coverage": self.coverage}


def derived_name(source: str, suite: str, seed: int) -> str:
    return f"{source}.{suite}.s{seed}"


def perturb_fields(task: Task) -> tuple[str, ...]:
    """Fields a suite may change: the task's ``perturb_fields`` minus the span context."""
    fields = task.perturb_fields or task.input_names
    return tuple(f for f in fields if f != task.span_of)


def _example_id(source_id: str, suite: str) -> str:
    new = f"{source_id}~{suite}"
    if len(new) <= MAX_ID:
        return new
    return f"{hashlib.sha256(source_id.encode()).hexdigest()[:32]}~{suite}"


def _rng(suite: str, seed: int, example_id: str, field: str) -> random.Random:
    return random.Random(f"{RNG_SALT}|{suite}|{seed}|{example_id}|{field}")


def perturb_example(task: Task, example: dict[str, Any], suite: str, seed: int) -> dict[str, Any] | None:
    """The perturbed copy of one example, or None when the suite does not change it."""
    op = OPS[suite]
    out = dict(example)
    changes = {}
    reference = suite_set_of(suite) == SUITE_SET  # the reference guards nothing: kept as it perturbs
    for field in perturb_fields(task):
        new, change = op(example[field], _rng(suite, seed, example["id"], field))
        # a change that would alter or create a URL, handle, hashtag, emoticon, emoji or number is discarded
        if change and new != example[field] and new.strip() \
                and (reference or protected_tokens(new) == protected_tokens(example[field])):
            out[field] = new
            changes[field] = change
    if not changes:
        return None
    out["id"] = _example_id(example["id"], suite)
    out["metadata"] = {**(example.get("metadata") or {}), "source_id": example["id"],
                       "perturbation": {"suite": suite, "seed": seed, "version": VERSION, "changes": changes}}
    return out


def perturb_examples(task: Task, examples: Iterable[dict[str, Any]], suite: str, seed: int
                     ) -> tuple[list[dict[str, Any]], int]:
    """``(perturbed examples, number dropped)``; every output passes the task's validation."""
    if suite not in SUITES:
        raise ValidationError(f"unknown perturbation suite '{suite}' (known: {', '.join(SUITES)})")
    out, dropped = [], 0
    for ex in examples:
        new = perturb_example(task, ex, suite, seed)
        if new is None:
            dropped += 1
            continue
        try:
            out.append(validate_example(task, new, new["id"]))
        except ValueError:
            dropped += 1  # e.g. a change that would empty a field: never store an invalid example
    return out, dropped


def sample_sources(examples: list[dict[str, Any]], size: int | None, seed: int) -> list[dict[str, Any]]:
    """The source examples a sized suite perturbs: all when ``size`` is None or the set is no larger, else the
    ``size`` examples whose ``sha256(f"{seed}|{id}")`` is lowest, in dataset order (a pure function of the ids
    and the seed, independent of example order; docs/perturbations.md "Sized suites")."""
    if size is None or len(examples) <= size:
        return list(examples)
    keep = set(sorted(range(len(examples)),
                      key=lambda i: hashlib.sha256(f"{seed}|{examples[i]['id']}".encode()).hexdigest())[:size])
    return [ex for i, ex in enumerate(examples) if i in keep]


def task_suites(task: Task) -> list[str]:
    """The suites a task asks for (its YAML), or every suite of the default set when it names none."""
    named = [*task.robustness_suites, *task.fairness_suites]
    return named or [s for s in SUITES if suite_set_of(s) != SUITE_SET]


def generate_suites(store: Store, dataset: str, suites: Iterable[str] | None = None, seed: int = 0,
                    replace: bool = False, progress: Callable[[str], None] | None = None,
                    suite_set: str | None = None, sample: int | None = None) -> list[SuiteResult]:
    """Create (or confirm) one derived dataset per suite; see the module docstring.

    A derived dataset that already exists with the same digest is left as it is
    (``unchanged``); one an older suite version made is regenerated (``upgraded``), one made with another
    ``sample`` size is regenerated (``resized``), and one of a suite that no longer exists is removed
    (``retired``); any other difference (an edited source) is an error unless ``replace``. A suite that changes
    no example stores nothing (``empty``). ``sample``: perturb only that many source examples, chosen by
    :func:`sample_sources` (None: every example).
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValidationError(f"seed must be a non-negative integer, got {seed!r}")
    source = store.datasets.get(dataset)
    if source.derived_from is not None:
        raise ValidationError(f"dataset '{dataset}' is itself derived from '{source.derived_from}': "
                              "perturb the original dataset")
    task = get_task(source.task)
    if suite_set is not None and suite_set not in SUITE_SETS:
        raise ValidationError(f"unknown suite set '{suite_set}' (known: {', '.join(SUITE_SETS)})")
    if suite_set == SUITE_SET and not suites:
        suites = [*SUITE_SETS[SUITE_SET], *task.fairness_suites]
    suites = list(suites) if suites else task_suites(task)
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise ValidationError(f"unknown perturbation suite(s) {', '.join(unknown)} (known: {', '.join(SUITES)})")
    _check_one_set(store, dataset, suites)
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 1):
        raise ValidationError(f"sample must be a positive number of examples, got {sample!r}")
    examples = sample_sources(store.datasets.examples(dataset), sample, seed)
    size = sample if sample is not None and sample < source.size else None  # None: the whole set
    results = _retire_stale(store, source, seed)
    for suite in dict.fromkeys(suites):
        if progress:
            progress(suite)
        results.append(_one_suite(store, task, source, examples, suite, seed, replace, size))
    return results


def _check_one_set(store: Store, dataset: str, suites: list[str]) -> None:
    """Refuse to mix robustness suite sets on one test set: its robustness would pool both."""
    wanted = {suite_set_of(s) for s in suites} - {None}
    have = {suite_set_of(str((d.derivation or {}).get("suite"))) for d in store.datasets.derived(dataset)} - {None}
    sets = wanted | have
    if len(sets) > 1:
        raise ValidationError(
            f"dataset '{dataset}' would hold robustness suites of the {' and '.join(sorted(map(str, sets)))} suite "
            "sets, which its one robustness value would pool: import the test set again under another name "
            f"(dynadesk data import FILE --name {dataset}-augly) and perturb that copy with the other set")


def robustness_suite_sets(store: Store, dataset: str) -> list[str]:
    """The robustness suite set(s) of a test set's derived datasets (what its robustness value rests on)."""
    found = {suite_set_of(str((d.derivation or {}).get("suite"))) for d in store.datasets.derived(dataset)}
    return sorted(s for s in found if s is not None)


def check_one_suite_set(store: Store, datasets: Iterable[str]) -> None:
    """Refuse a run whose test sets were perturbed with different robustness suite sets: the run's robustness
    (the mean over its test sets) would be one number resting on two sets of suites (issue 49). Names each test
    set's set and the way out: a run per suite set."""
    by_set: dict[str, list[str]] = {}
    for name in datasets:
        for suite_set in robustness_suite_sets(store, name):
            by_set.setdefault(suite_set, []).append(name)
    if len(by_set) > 1:
        groups = "; ".join(f"{s}: {', '.join(names)}" for s, names in sorted(by_set.items()))
        first = sorted(by_set.items())[0][1]
        raise ValidationError(f"the test sets were perturbed with different robustness suite sets ({groups}); "
                              "one run reports one robustness figure, so evaluate each suite set in its own run "
                              f"(e.g. --dataset {' --dataset '.join(first)})")


def _is_stale(derivation: dict[str, Any] | None) -> bool:
    """Made by an older version of these suites: their own output, safe to regenerate or retire."""
    version = (derivation or {}).get("version")
    return isinstance(version, str) and version.startswith("ops") and version != VERSION


def _retire_stale(store: Store, source: DatasetSummary, seed: int) -> list[SuiteResult]:
    """Remove the source's suites for ``seed`` that an older version made and that no longer exist
    (e.g. ``gender_words``): left in place they would still be pooled into robustness/fairness."""
    out = []
    for d in store.datasets.derived(source.name):
        der = d.derivation or {}
        if _is_stale(der) and der.get("seed") == seed and der.get("suite") not in SUITES:
            store.datasets.remove(d.name)
            out.append(SuiteResult(str(der.get("suite")), str(der.get("kind")), d.name, "retired", 0, 0, None))
    return out


def _resized(derivation: dict[str, Any] | None, sample: int | None) -> bool:
    """These suites' own output (current version) made from another number of source examples."""
    der = derivation or {}
    return der.get("version") == VERSION and der.get("sample") != sample


def _one_suite(store: Store, task: Task, source: DatasetSummary, examples: list[dict[str, Any]], suite: str, seed: int,
               replace: bool, sample: int | None = None) -> SuiteResult:
    name = derived_name(source.name, suite, seed)
    kind = SUITES[suite]
    perturbed, dropped = perturb_examples(task, examples, suite, seed)
    if not perturbed:
        if store.datasets.exists(name) and (_is_stale(store.datasets.get(name).derivation)
                                            or _resized(store.datasets.get(name).derivation, sample)):
            store.datasets.remove(name)  # an older version (or size) changed some examples; this one none
        return SuiteResult(suite, kind, name, "empty", 0, dropped, None)
    digest = dataset_digest(perturbed)
    status = "created"
    if store.datasets.exists(name):
        existing = store.datasets.get(name)
        resized = _resized(existing.derivation, sample)
        if existing.digest == digest and not resized:
            return SuiteResult(suite, kind, name, "unchanged", existing.size, dropped, digest)
        if not replace and not _is_stale(existing.derivation) and not resized:
            raise AlreadyExistsError(f"derived dataset '{name}' exists with different content "
                                     f"({existing.digest[:19]} vs {digest[:19]}); use --replace to regenerate it")
        status = ("replaced" if replace else "resized" if resized else
                  "upgraded" if _is_stale(existing.derivation) else "replaced")
    derivation = {"suite": suite, "kind": kind, "seed": seed, "version": VERSION, "source_digest": source.digest,
                  "perturbed": len(perturbed), "dropped": dropped}
    if sample is not None:
        derivation["sample"] = sample  # sized suite: perturbed + dropped = sample, of the source's size
    if suite_set_of(suite) == SUITE_SET:
        derivation["suite_set"] = SUITE_SET  # DynaDesk's own suites are the default set, named by absence
    store.datasets.add(name, task.name, source.split, perturbed, digest, label_counts(task, perturbed),
                       DatasetOrigin(source=f"perturb:{source.name}", derived_from=source.name, derivation=derivation),
                       replace=status != "created")
    return SuiteResult(suite, kind, name, status, len(perturbed), dropped, digest)
