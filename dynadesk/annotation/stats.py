"""Round statistics: collected, fooled, verified fooled, MER, vMER, time, agreement.

MER (model error rate) = fooled / collected; vMER = verified fooled / collected
(both fractions in [0, 1], None for an empty round). Agreement is
Krippendorff's alpha (nominal) over the verdicts given to each example.

Per annotator there are two MERs, each named: ``mer`` (raw: every fooling
example counts) and ``board_mer``, Dynabench's user board's (its
``getUserLeaderByRoundRealids`` ranks by ``(total_fooled -
total_verified_not_correct_fooled) / examples_submitted``): a fooling example
that validators rejected no longer counts, an unvalidated one still does.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import permutations
from typing import TYPE_CHECKING, Any

from dynadesk.annotation.assistant import assistant_stats
from dynadesk.annotation.validate import VERIFIED_NOT_CORRECT, ExampleStatus, Judged, example_status
from dynadesk.tasks import get_task

if TYPE_CHECKING:
    from dynadesk.store import Store


def krippendorff_alpha_nominal(units: Iterable[Sequence[Any]]) -> float | None:
    """Krippendorff's alpha for nominal data; each unit is the list of values coders gave it.

    Units with fewer than two values cannot be paired and are ignored. Returns None when
    alpha is undefined (fewer than two pairable values, or only one value used overall).

    Hand-computed example (the test checks it)::

        u1 = [c, c, c]  u2 = [c, i]  u3 = [i, i, f]  u4 = [c]  (u4 dropped: one value)
        coincidences o_xy = sum over units of (#ordered x-y pairs) / (m_u - 1):
          u1: 6 (c,c) pairs / 2 -> o_cc = 3
          u2: (c,i), (i,c) / 1  -> o_ci = o_ic = 1
          u3: 2 (i,i), 2 (i,f), 2 (f,i) / 2 -> o_ii = 1, o_if = o_fi = 1
        n_c = 4, n_i = 3, n_f = 1, n = 8
        observed disagreement sum_{x!=y} o_xy = 4
        expected sum_{x!=y} n_x n_y = 2 (4*3 + 4*1 + 3*1) = 38
        alpha = 1 - (n - 1) * 4 / 38 = 1 - 28/38 = 10/38 = 0.263157...
    """
    coincidence: Counter[tuple[Any, Any]] = Counter()
    for unit in units:
        values = list(unit)
        m = len(values)
        if m < 2:
            continue
        for a, b in permutations(values, 2):
            coincidence[(a, b)] += 1.0 / (m - 1)  # type: ignore[assignment]  # Counter of float weights
    totals: Counter[Any] = Counter()
    for (a, _b), w in coincidence.items():
        totals[a] += w
    n = sum(totals.values())
    if n < 2 or len(totals) < 2:
        return None
    observed = sum(w for (a, b), w in coincidence.items() if a != b)
    expected = sum(totals[a] * totals[b] for a in totals for b in totals if a != b)
    return 1.0 - (n - 1) * observed / expected


@dataclass
class AnnotatorStats:
    annotator: str
    collected: int = 0
    fooled: int = 0
    verified_fooled: int = 0
    mer: float | None = None
    vmer: float | None = None
    median_time_ms: float | None = None
    validations_given: int = 0
    rejected_fooled: int = 0  # fooling examples that validators decided were not correct
    board_mer: float | None = None  # Dynabench's user-board MER: (fooled - rejected_fooled) / collected


@dataclass
class ModelStats:
    """One target model's share of a round (several targets: each example answered by one of them)."""

    model: str
    collected: int = 0
    fooled: int = 0
    verified_fooled: int = 0
    mer: float | None = None
    vmer: float | None = None


@dataclass
class RoundStats:
    task: str
    round: int
    status: str
    models: list[str]
    collected: int
    fooled: int
    verified_fooled: int
    verified_not_correct: int
    mer: float | None
    vmer: float | None
    median_time_ms: float | None
    validations: int
    alpha: float | None
    annotators: list[AnnotatorStats] = field(default_factory=list)
    by_model: list[ModelStats] = field(default_factory=list)
    held: int = 0  # merged examples waiting for an owner here (counted nowhere above)
    assistant: dict[str, Any] = field(default_factory=dict)  # the generative assistant's use (assistant.py)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rates(collected: int, fooled: int, vfooled: int) -> tuple[float | None, float | None]:
    return (fooled / collected, vfooled / collected) if collected else (None, None)


def _median(values: list[int]) -> float | None:
    return float(statistics.median(values)) if values else None


def _summarise(examples: Sequence[Judged], votes_needed: int) -> tuple[list[ExampleStatus], int, int]:
    statuses = [example_status(ex, votes_needed) for ex in examples]
    fooled = sum(ex.fooled for ex in examples)
    vfooled = sum(s.verified_fooled for s in statuses)
    return statuses, fooled, vfooled


def round_stats(store: Store, task_name: str, round_number: int | None = None) -> RoundStats:
    """Statistics of one round (default: the latest), overall and per annotator."""
    task = get_task(task_name)
    rnd = store.annotation.get_round(task.name, round_number)
    examples = store.annotation.example_facts(task.name, rnd.number)
    statuses, fooled, vfooled = _summarise(examples, task.votes_needed)
    mer, vmer = _rates(len(examples), fooled, vfooled)
    people: dict[str, AnnotatorStats] = {}
    for ex, st in zip(examples, statuses):
        a = people.setdefault(ex.annotator, AnnotatorStats(ex.annotator))
        a.collected += 1
        a.fooled += ex.fooled
        a.verified_fooled += st.verified_fooled
        a.rejected_fooled += int(ex.fooled and st.status == VERIFIED_NOT_CORRECT)
        for v in ex.validations:
            people.setdefault(v.annotator, AnnotatorStats(v.annotator)).validations_given += 1
    targets = {m.name: ModelStats(m.name) for m in rnd.models}
    for ex, st in zip(examples, statuses):
        m = targets.setdefault(ex.model_name, ModelStats(ex.model_name))
        m.collected += 1
        m.fooled += ex.fooled
        m.verified_fooled += st.verified_fooled
    for m in targets.values():
        m.mer, m.vmer = _rates(m.collected, m.fooled, m.verified_fooled)
    times: dict[str, list[int]] = {}
    for ex in examples:
        times.setdefault(ex.annotator, []).append(ex.time_ms)
    for a in people.values():
        a.mer, a.vmer = _rates(a.collected, a.fooled, a.verified_fooled)
        a.board_mer = (a.fooled - a.rejected_fooled) / a.collected if a.collected else None
        a.median_time_ms = _median(times.get(a.annotator, []))
    return RoundStats(
        task=task.name, round=rnd.number, status=rnd.status, models=[m.name for m in rnd.models],
        collected=len(examples), fooled=fooled, verified_fooled=vfooled,
        verified_not_correct=sum(s.status == VERIFIED_NOT_CORRECT for s in statuses), mer=mer, vmer=vmer,
        median_time_ms=_median([ex.time_ms for ex in examples]),
        validations=sum(len(ex.validations) for ex in examples),
        alpha=krippendorff_alpha_nominal([v.verdict for v in ex.validations] for ex in examples),
        annotators=sorted(people.values(), key=lambda a: a.annotator), by_model=list(targets.values()),
        held=store.annotation.count_held_examples(task.name, rnd.number), assistant=assistant_stats(store, examples))


def task_stats(store: Store, task_name: str) -> list[RoundStats]:
    """:func:`round_stats` for every round of the task, oldest first."""
    return [round_stats(store, task_name, r.number) for r in store.annotation.list_rounds(get_task(task_name).name)]
