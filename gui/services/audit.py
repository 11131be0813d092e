"""Audits over :mod:`dynadesk.audit`: check a bundle's inputs, or re-run it and compare field by field.

Both run on a pool worker (held by a :class:`~dynadesk.gui.jobs.JobSlot`) with their own store
connection. A re-run's progress events reach the page as they are (``progress``) and as log lines;
``cancel()`` cancels the token the runner polls, so the re-run stops (stored ``cancelled``) and the
audit ends ``cancelled``.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from dynadesk.errors import DynaDeskError
from dynadesk.gui.jobs import JobSlot
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.gui.workers import WorkContext, Worker
from dynadesk.progress import ProgressEvent, render_progress


class AuditService(QObject):
    started = Signal()
    progress = Signal(object)  # ProgressEvent
    log = Signal(str)
    finished = Signal(object)  # AuditReport
    failed = Signal(str)
    cancelled = Signal()
    done = Signal()
    left = Signal(str)  # an audit started in a workspace since closed ended

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self.job = JobSlot("an audit", lambda: ws.home, self)
        self.job.relay_to(self)

    @property
    def running(self) -> bool:
        return self.job.running

    def audit(self, path: str | Path, *, rerun: bool = False, runner: str | None = None,
              model_path: str | None = None, server: str | None = None) -> Worker:
        """Start an audit of the bundle file at ``path``; ``rerun`` evaluates it again with ``runner``."""
        ws = self._ws
        p = Path(path)

        def job(ctx: WorkContext):
            from dynadesk.audit.audit import audit_bundle

            try:
                raw = p.read_bytes()
            except OSError as exc:
                raise DynaDeskError(f"cannot read {p}: {exc}") from exc
            ctx.log(f"== audit {p.name}" + (f": re-run with the {runner or 'recorded'} runner" if rerun else
                                              ": checking the inputs it names"))
            ctx.progress(ProgressEvent("check", message="the signature and inputs"))

            def on_event(event: ProgressEvent) -> None:
                ctx.progress(event, job="re-run")
                ctx.log(render_progress(event))

            store = ws.open_store()
            try:
                report = audit_bundle(store, ws.workspace, raw, where=str(p), model_path=model_path or None,
                                      rerun=rerun, runner=runner or None, server=server or None,
                                      progress=on_event, cancel=ctx.cancel)
            finally:
                store.close()
            ctx.log(f"== {report.verdict_lines()[0]}: " +
                    ", ".join(f"{n} {v}" for v, n in report.counts().items()))
            return report

        return self.job.start(job)

    def cancel(self) -> None:
        if self.job.cancel():
            self.log.emit("== cancel requested: stopping the re-run")

    def close(self) -> None:
        """On quit: stop a running re-run so its worker process does not outlive the app."""
        self.job.close()
