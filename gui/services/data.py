"""Tasks and datasets: listing, label distribution, import with a per-line report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from dynadesk.data import SPLITS, FileReading
from dynadesk.data import import_file as import_data_file
from dynadesk.datasets import DatasetSummary
from dynadesk.errors import DynaDeskError, ValidationError
from dynadesk.formats import Mapping
from dynadesk.gui.jobs import JobSlot
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.gui.workers import WorkContext, Worker
from dynadesk.progress import ProgressEvent
from dynadesk.tasks import Task, load_tasks


def replace_quoting(mapping: Mapping, quoting: str) -> Mapping:
    from dataclasses import replace

    return replace(mapping, quoting=quoting)


@dataclass
class ImportOutcome:
    """What the import dialog shows: the stored summary, or the message and each bad line."""

    summary: DatasetSummary | None = None
    message: str = ""
    problems: list[str] = field(default_factory=list)
    format: str = ""  # the format that read the file
    detected: bool = False
    dropped: dict[str, int] = field(default_factory=dict)  # rows left out by a format's rule: reason -> count
    splits_found: dict[str, int] = field(default_factory=dict)  # a file with a split column: rows per split

    @property
    def ok(self) -> bool:
        return self.summary is not None


class DataService(QObject):
    changed = Signal()
    importFinished = Signal(object)  # ImportOutcome
    taskAdded = Signal(bool, str)  # stored?, the line to show (the task and its digest, or why not)
    left = Signal(str)  # an import started in a workspace since closed ended (its outcome is not this view's)

    splits = SPLITS

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self._tasks: dict[str, Task] | None = None
        self.job = JobSlot("an import", lambda: ws.home, self)
        self.job.finished.connect(self._on_import_done)
        self.job.failed.connect(lambda msg: self._on_import_done(ImportOutcome(message=msg)))
        self.job.left.connect(self.left)
        ws.opened.connect(lambda _h: self.changed.emit())

    def tasks(self) -> dict[str, Task]:
        # asked each time: the open workspace's own tasks (dynadesk tasks add) may change; load_tasks caches
        self._tasks = load_tasks()
        return self._tasks

    def add_task(self, path: str | Path) -> None:
        """Store a task file in the workspace (``dynadesk tasks add``: refused whole on any problem) on a worker;
        ``taskAdded`` follows, and ``changed`` when it was stored."""
        def job(store) -> tuple[bool, str]:
            from dynadesk.taskfile_guard import read_task_text
            from dynadesk.tasks import parse_task_text

            try:
                text = read_task_text(Path(path))
                task = parse_task_text(text, str(path))
                row = store.tasks.add(task, text)
            except DynaDeskError as exc:
                return False, str(exc)
            return True, f"Added the task '{task.name}' ({row.digest[:19]}…) to this workspace."

        self._ws.run_with_store(job, on_result=self._on_task_added, on_error=lambda m: self.taskAdded.emit(False, m))

    def _on_task_added(self, result: tuple[bool, str]) -> None:
        ok, line = result
        self.taskAdded.emit(ok, line)
        if ok:
            self.changed.emit()

    def task(self, name: str) -> Task:
        return self.tasks()[name]

    def preferred_task(self, rounds: bool = False) -> str | None:
        """The task a page opens on (issue 47: not the first name when only another has data): the task with a
        round (``rounds``), else the one with the most datasets, else models; None on an empty workspace."""
        store = self._ws.store
        newest = max(store.annotation.list_rounds(), key=lambda r: r.created_at, default=None) if rounds else None
        if newest is not None:
            return newest.task
        counts: dict[str, int] = {}
        for d in store.datasets.list(None, include_derived=False):
            counts[d.task] = counts.get(d.task, 0) + 1
        if not counts:
            for m in store.models.list():
                counts[m.task] = counts.get(m.task, 0) + 1
        return max(sorted(counts), key=lambda t: counts[t]) if counts else None

    def datasets(self, task: str | None = None, include_derived: bool = True) -> list[DatasetSummary]:
        return self._ws.store.datasets.list(task, include_derived=include_derived)

    def head(self, name: str, n: int = 20) -> list[dict]:
        out = []
        for i, ex in enumerate(self._ws.store.datasets.iter_examples(name)):
            if i >= n:
                break
            out.append(ex)
        return out

    @property
    def importing(self) -> bool:
        return self.job.running

    def import_file(self, task: str, path: str | Path, name: str | None = None, split: str = "test",
                    replace: bool = False, fmt: str | None = None, quoting: str = "auto",
                    mapping: Mapping | None = None) -> Worker:
        """Validate and store a file on a worker; ``importFinished`` reports the outcome. ``mapping`` carries the
        field and label mapping (``quoting`` goes into it)."""
        mapping = replace_quoting(mapping or Mapping(), quoting)
        def job(ctx: WorkContext) -> ImportOutcome:
            ctx.progress(ProgressEvent("validate", message=Path(path).name))
            store = self._ws.open_store()
            try:
                done = import_data_file(store, task, path, name=name or None, split=split,
                                        reading=FileReading(fmt, mapping), replace=replace)
                return ImportOutcome(summary=done.summary, format=done.format, detected=done.detected,
                                     dropped=done.dropped, splits_found=done.splits_found)
            except ValidationError as exc:
                head = str(exc).splitlines()[0] if str(exc) else "invalid file"
                return ImportOutcome(message=head, problems=exc.problems)
            except DynaDeskError as exc:
                return ImportOutcome(message=str(exc))
            finally:
                store.close()

        return self.job.start(job)

    def _on_import_done(self, outcome: ImportOutcome) -> None:
        if outcome.ok:
            self.changed.emit()
        self.importFinished.emit(outcome)
