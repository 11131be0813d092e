"""Audits over :mod:`dynadesk.audit`: check a bundle's inputs, or re-run it and compare field by field.

Both run on a pool worker (held by a :class:`~dynadesk.gui.jobs.JobSlot`) with their own store
connection. A re-run's progress events reach the page as they are (``progress``) and as log lines;
``cancel()`` cancels the token the runner polls, so the re-run stops (stored ``cancelled``) and the
audit ends ``cancelled``.
"""

from __future__ import annotations

from pathlib import Path

from dynadesk.errors import DynaDeskError
from dynadesk.gui.jobs import JobService
from dynadesk.gui.workers import WorkContext, Worker
from dynadesk.progress import ProgressEvent, render_progress


class AuditService(JobService):
    """Audits of a bundle file (``finished``: the AuditReport)."""

    what = "an audit"

    def audit(self, path: str | Path, *, rerun: bool = False, runner: str | None = None,
              model_path: str | None = None, server: str | None = None) -> Worker:
        """Start an audit of the bundle file at ``path``; ``rerun`` evaluates it again with ``runner``."""
        ws = self._ws
        p = Path(path)

        def job(ctx: WorkContext):
            from dynadesk.audit.audit import AuditOptions, audit_bundle

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
                report = audit_bundle(store, ws.workspace, raw,
                                      AuditOptions(model_path=model_path or None, rerun=rerun,
                                                   runner=runner or None, server=server or None), where=str(p),
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

