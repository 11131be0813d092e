"""A worker's progress lines are untrusted: whatever it prints, the host's one event type and renderer hold.

A model runs inside the worker and can print anything, including lines that start with the progress
prefix. They reach the CLI's progress bar, the demo's printer and the app's progress bars, which read
only :class:`ProgressEvent` fields; a line that is not a JSON object is dropped, a count that is not a
non-negative integer is left out."""

from __future__ import annotations

import pytest

from dynadesk.cancel import CancelToken
from dynadesk.cli.eval_cmd import _Bar
from dynadesk.errors import Cancelled
from dynadesk.evaluator.schema import PROGRESS_PREFIX
from dynadesk.orchestration.output import WorkerOutput
from dynadesk.progress import ProgressEvent, render_progress

HOSTILE = [
    '[1, 2, 3]',
    '"predict"',
    '{"phase": "predict", "overall_done": "many", "overall_total": 120}',
    '{"phase": "predict", "overall_done": 5, "overall_total": -1}',
    '{"phase": "predict", "overall_done": true, "overall_total": {"n": 1}, "dataset": ["x"]}',
    '{"phase": ["load"], "resumed": "yes", "run": 3.5}',
]


def _feed(lines: list[str], sink) -> WorkerOutput:
    out = WorkerOutput(sink)
    out.feed([("".join(PROGRESS_PREFIX + line + "\n" for line in lines)).encode()])
    out.drain()
    return out


def test_hostile_progress_lines_reach_the_cli_bar_as_typed_events():
    bar = _Bar(enabled=True)
    seen: list[ProgressEvent] = []

    def sink(event: ProgressEvent) -> None:
        seen.append(event)
        bar(event)
        render_progress(event)

    _feed(HOSTILE + ['{"phase": "predict", "dataset": "d", "overall_done": 40, "overall_total": 120}'], sink)
    bar.close()
    assert len(seen) == 5  # the list and the string are not events
    assert all(e.done is None or isinstance(e.done, int) for e in seen)
    assert seen[1].done == 5 and seen[1].total is None and seen[2].dataset is None and seen[2].done is None
    assert seen[3].resumed is False and seen[3].run is None
    assert render_progress(seen[-1]) == "predict d 40/120 (33%)"


def test_an_event_round_trips_through_the_stored_form():
    event = ProgressEvent("predict", 40, 120, "d", resumed=True, run=7)
    assert ProgressEvent.from_dict(event.to_dict()) == event
    assert ProgressEvent.from_dict({"phase": "predict", "overall_done": 2, "overall_total": 6}).to_dict() == \
        {"phase": "predict", "overall_done": 2, "overall_total": 6}
    assert ProgressEvent.from_dict([1, 2]) == ProgressEvent("")  # a job's stored progress is not trusted either


def test_a_cancel_token_is_seen_once_asked_and_rearms():
    token = CancelToken()
    token.raise_if_cancelled()
    assert not token.cancelled() and not token.wait(0.01)
    token.cancel()
    assert token.cancelled() and token.wait(0)
    with pytest.raises(Cancelled, match="the re-run was cancelled"):
        token.raise_if_cancelled("the re-run")
    token.reset()
    assert not token.cancelled()
