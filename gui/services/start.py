"""The first steps on a brand-new workspace (the app's start page): what the workspace holds, and the two jobs
that fill it — fetch the bundled data (:func:`dynadesk.recipes.fetch_default_data`) and build the demo model zoo
(:func:`dynadesk.models.zoo.build_demo_zoo`), each on a worker (held by a :class:`~dynadesk.gui.jobs.JobSlot`) with
its progress lines and Cancel."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from dynadesk.gui.jobs import JobService
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.gui.workers import WorkContext, Worker


@dataclass(frozen=True)
class Holdings:
    """What the workspace holds, for the start page's checklist."""

    datasets: int
    bundled: int  # the bundled (vaderSentiment) sets among them
    models: int
    demo_models: int  # the demo zoo's models among them
    tasks_with_data: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return self.datasets == 0 and self.models == 0


def is_empty(store: Any) -> bool:
    """No dataset and no model: a brand-new workspace, which the window opens on the start page (two quick
    queries: no import of the model zoo on the GUI thread)."""
    return not store.datasets.list(None, include_derived=False) and not store.models.list()


def holdings(store: Any) -> Holdings:
    from dynadesk.models.zoo import DEMO_MODELS
    from dynadesk.recipes import load_recipe

    recipe = load_recipe()
    sets = store.datasets.list(None, include_derived=False)
    bundled = {recipe.dataset_name(src, split) for src in recipe.sources for split in recipe.splits}
    models = store.models.list()
    return Holdings(len(sets), sum(d.name in bundled for d in sets), len(models),
                    sum(m.name in DEMO_MODELS for m in models), tuple(sorted({d.task for d in sets})))


class StartService(JobService):
    """The start page's jobs (``progress``: a line each, the steps report lines, not counts; ``finished``: the
    dataset names fetched, or the zoo's rows) and what the workspace holds (``held``)."""

    what = "a start-page job"
    held = Signal(object)  # Holdings

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(ws, parent)
        self.zoo_only: tuple[str, ...] | None = None  # None: every demo model (a narrower zoo for a quick check)

    def read_holdings(self) -> None:
        """What the workspace holds, read on a worker (the zoo's names import the model registry); ``held``
        follows."""
        self._ws.run_with_store(holdings, on_result=self._on_holdings, on_error=self.failed.emit)

    def _on_holdings(self, held: Holdings) -> None:
        self.held.emit(held)

    def _run(self, fn: Any) -> Worker:
        workspace = self._ws.workspace

        def job(ctx: WorkContext) -> Any:
            def note(line: str) -> None:
                ctx.check()  # Cancel stops the job at its next progress line
                ctx.note(line)

            store = workspace.open_store()
            try:
                return fn(store, workspace, note)
            finally:
                store.close()

        return self.job.start(job)

    def fetch_data(self) -> Worker:
        """Register the bundled sentiment sets (downloads the pinned sdist with pip when it is not cached)."""
        from dynadesk.recipes import fetch_default_data

        return self._run(lambda store, ws, note: fetch_default_data(store, Path(ws.cache_dir), progress=note))

    def build_zoo(self) -> Worker:
        """Build, score and register the demo models (fetches the data first when it is missing)."""
        from dynadesk.models.zoo import DEMO_MODELS, build_demo_zoo

        only = self.zoo_only or DEMO_MODELS
        return self._run(lambda store, ws, note: build_demo_zoo(store, ws, progress=note, only=only))

