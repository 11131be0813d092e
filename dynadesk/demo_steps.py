"""The demo's numbered, timed steps and its two channels (``make demo``; issue 39 timed them, issue 47 split them).

Every detail goes to ``echo`` (the CLI's log file); with ``say``, one line per step with its result, and the
lines a step adds (the board, the audit's differing fields), go to the brief channel too, wrapped to
:data:`LINE_WIDTH` characters.
"""

from __future__ import annotations

import os
import re
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Echo = Callable[[str], None]
LINE_WIDTH = 160  # the longest line the demo prints on its brief channel (stdout of ``dynadesk demo``)


def fit(text: str, width: int = LINE_WIDTH, indent: str = "      ") -> list[str]:
    """``text`` as lines of at most ``width`` characters, continuation lines indented: wrapped, never cut,
    so a long name or path stays whole for the reader."""
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=True) or [""]


def group_fields(fields: list[str]) -> str:
    """Field names for one line: ``metrics[SET].METRIC`` fields grouped as "metrics M1, M2 of SET1, SET2" (one group
    per set of test sets the metrics share; a lone field keeps its name), others as they are; every name kept."""
    plain, sets_of = [], dict[str, list[str]]()
    for name in fields:
        m = re.fullmatch(r"metrics\[(.+)\]\.([\w.-]+)", name)
        if m:
            sets_of.setdefault(m.group(2), []).append(m.group(1))
        else:
            plain.append(name)
    groups = dict[tuple[str, ...], list[str]]()
    for metric, sets in sets_of.items():
        groups.setdefault(tuple(sets), []).append(metric)
    grouped = [f"metrics[{sets[0]}].{ms[0]}" if len(sets) == 1 and len(ms) == 1
               else f"metrics {', '.join(ms)} of {', '.join(sets)}" for sets, ms in groups.items()]
    return "; ".join([", ".join(plain)] * bool(plain) + grouped)


def closing_line(home: str | os.PathLike[str], seconds: float) -> str:
    """The demo's last line: its wall time and the command that opens the app on *its* workspace ('make gui' opens
    the one ``DYNADESK_HOME`` or the default names, so after ``dynadesk --home DIR demo`` it names DIR)."""
    from dynadesk.workspace import resolve_home

    here = Path(home).expanduser().resolve()
    how = "make gui" if here == resolve_home() else f"dynadesk --home {here} gui"
    return f"demo finished in {seconds:.0f} s; '{how}' opens the app on this workspace"


def training_threads(build_beside: bool = False) -> str:
    """Load torch in the demo's process (where the zoo trains) with a thread policy chosen from the cores free now:
    a quiet machine keeps torch's default (every core, spinning); a busy one gets passive waiting (issue 50 item 1: 2
    spinning threads on 2 busy cores ran 2.8x slower than 1), still on every core: a training's numbers depend on
    its thread count (:func:`dynadesk.evaluator.threads.for_training`). ``build_beside``: the
    evaluator image is about to build beside the training (a first run), which the sample cannot see yet; then the
    threads wait passively on a quiet machine too (every core still used): with spinning threads beside the build
    the zoo step took 216 and 247 s, passive 188 and 183 s, the same models (interleaved, 2 cores). The wait policy
    is read when torch loads, so it is set just for that and removed after: the evaluation's subprocesses choose
    their own. A policy the user set is kept. Returns the log's line."""
    import dynadesk.evaluator.threads as policy_of

    beside = build_beside and os.environ.get(policy_of.WAIT_ENV) is None
    policy = policy_of.for_training(others_beside=build_beside)
    why = "the evaluator image builds beside the training" if beside else f"chosen by {policy.chosen_by}"
    return (f"training threads: {policy.threads} of {policy.cores} cores, OpenMP wait policy {policy.wait_policy} "
            f"({policy.busy_cores:.1f} cores busy with other work; {why})")


@dataclass(frozen=True)
class StepTime:
    """One step's cost: wall seconds and CPU seconds of this process, its waited-for children, its containers."""

    title: str
    wall: float
    cpu_self: float
    cpu_children: float
    cpu_containers: float

    @property
    def cpu(self) -> float:
        return self.cpu_self + self.cpu_children + self.cpu_containers


def _clock() -> tuple[float, float, float, float]:
    from dynadesk.orchestration.observe import CONTAINER_CPU_SECONDS

    t = os.times()
    return time.monotonic(), t.user + t.system, t.children_user + t.children_system, CONTAINER_CPU_SECONDS[0]


def load_average() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


class Steps:
    """Numbered, timed steps; each says what it is doing before it does it, and what it cost when it ends."""

    def __init__(self, echo: Echo, total: int, say: Echo | None = None):
        self.echo, self.total, self.n = echo, total, 0
        self.say_line = say
        self.t0 = time.monotonic()
        self.times: list[StepTime] = []
        self._open: tuple[str, tuple[float, float, float, float]] | None = None
        self._short, self._result, self._extra = "", "", list[str]()

    def say(self, text: str) -> None:
        """A line of the brief channel (wrapped to :data:`LINE_WIDTH`); into the detailed log as well."""
        for line in fit(text):
            if self.say_line is not None:
                self.say_line(line)
            self.echo(line)

    def result(self, text: str, extra: list[str] | None = None) -> None:
        """The open step's one-line result (said when the step ends), and lines said after it (the board)."""
        self._result = text
        self._extra.extend(extra or [])

    def start(self, title: str, short: str = "") -> None:
        self.close()
        self.n += 1
        self.echo("")
        self.echo(f"[{self.n}/{self.total}] {title}  (+{time.monotonic() - self.t0:.0f} s)")
        self._open = (title, _clock())
        self._short, self._result, self._extra = short or title, "", []

    def fail(self, exc: BaseException) -> None:
        """The open step's line when it raised: its name and the error's first line."""
        if self._open is not None:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            self.say(f"[{self.n}/{self.total}] {self._short}: FAILED ({first})")
            self._open = None

    def close(self) -> None:
        """End the open step and print its wall and CPU seconds (CPU / wall is the parallelism it reached)."""
        if self._open is None:
            return
        title, before = self._open
        after = _clock()
        t = StepTime(title, *(a - b for a, b in zip(after, before)))
        self.times.append(t)
        self._open = None
        self.note(f"step {self.n}: {t.wall:.1f} s wall, {t.cpu:.1f} CPU s (demo process {t.cpu_self:.1f}, "
                  f"child processes {t.cpu_children:.1f}, containers {t.cpu_containers:.1f}); {load_average()}")
        self.say(f"[{self.n}/{self.total}] {self._short}: {self._result or 'done'}  ({t.wall:.0f} s)")
        for line in self._extra:
            self.say(line)

    def summary(self) -> None:
        """The per-step table (docs/measurement.md "The demo's first run" reads it)."""
        self.close()
        self.echo("")
        self.echo(f"    {'step':<58} {'wall s':>8} {'CPU s':>8}  {'CPU/wall':>8}")
        for i, t in enumerate(self.times, start=1):
            self.echo(f"    {f'{i}. {t.title}'[:58]:<58} {t.wall:8.1f} {t.cpu:8.1f}  "
                      f"{t.cpu / t.wall if t.wall > 0 else 0:8.2f}")
        wall, cpu = sum(t.wall for t in self.times), sum(t.cpu for t in self.times)
        self.echo(f"    {'total':<58} {wall:8.1f} {cpu:8.1f}  {cpu / wall if wall > 0 else 0:8.2f}")
        self.echo(f"    ({load_average()}; CPU s = this process + child processes + the evaluation containers; "
                  "the image build runs in the Docker daemon and is not counted)")

    def note(self, text: str) -> None:
        self.echo(f"    {text}")

    def fraction(self, stage: str, done: int, total: int) -> None:
        """A progress line at every tenth of a long stage (model training, scoring)."""
        tenth = done * 10 // max(1, total)
        if done == total or tenth != (done - 1) * 10 // max(1, total):
            self.note(f"{stage}: {done}/{total} ({done * 100 // max(1, total)}%, "
                      f"+{time.monotonic() - self.t0:.0f} s)")
