"""The workspace's disk full (issue 38): during an annotation merge and during an evaluation.

The workspace lives on a real, small tmpfs (mounted by the test; root, as in CI), filled with a
filler file until only a few KiB remain. The operation must stop with a DynaDesk error that says the
disk is full and names the database or run, the database must pass ``PRAGMA integrity_check`` with
nothing of the operation in it, and once space is freed the same operation succeeds.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support import missing
from support.annotation import build_tiny_models, two_machines
from support.eval import run_request, setup_workspace

from dynadesk import annotation as ann
from dynadesk.errors import DynaDeskError, EvaluationError, StoreError
from dynadesk.progress import ProgressEvent
from dynadesk.store import Store
from dynadesk.workspace import Workspace

pytestmark = pytest.mark.timeout(600)


@contextmanager
def small_disk(mountpoint: Path, size: str = "8m") -> Iterator[Path]:
    """A real tmpfs of ``size`` at ``mountpoint`` (unmounted afterwards)."""
    if os.geteuid() != 0:
        missing("root", "mounting a small tmpfs for the disk-full tests needs root (CI runs as root)")
    mountpoint.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mountpoint)], check=True)
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def fill(disk: Path, leave: int = 16 * 1024) -> Path:
    """Fill ``disk`` until ``leave`` bytes remain; returns the filler (delete it to free the space)."""
    st = os.statvfs(disk)
    filler = disk / "filler"
    left = max(0, st.f_bavail * st.f_frsize - leave)
    # unbuffered: when the run under test wrote meanwhile (a loaded machine), the last write fails short, and a
    # buffered file would keep that tail to raise ENOSPC again from close() - out of the ``with``, failing the test
    with open(filler, "wb", buffering=0) as fh:
        chunk = b"\0" * (1 << 20)
        try:
            while left > 0:
                left -= fh.write(chunk[:left]) or 0
        except OSError as exc:  # the disk is full anyway, which is what the caller wanted
            if exc.errno != errno.ENOSPC:
                raise
    return filler


def test_fill_copes_with_a_run_that_wrote_between_its_look_and_its_write(tmp_path):
    """The helper itself (a CI failure): the run under test wrote a few KiB after ``fill`` read the free space,
    so the write asks for more than is left. The disk must end full and ``fill`` must not raise."""
    with small_disk(tmp_path / "d", "1m") as disk:
        filler = fill(disk, leave=-3000)  # as if 3,000 bytes had been written meanwhile by someone else
        st = os.statvfs(disk)
        assert filler.exists() and st.f_bavail == 0


def _counts(st: Store) -> tuple[int, int, int]:
    return tuple(st.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]  # type: ignore[return-value]
                 for t in ("annotated_examples", "validations", "annotators"))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return build_tiny_models(tmp_path_factory.mktemp("tiny"))


def test_disk_full_during_a_pack_merge_is_a_clear_error_and_writes_nothing(tmp_path, models):
    with small_disk(tmp_path / "b", "3m") as disk, two_machines(tmp_path, models, mutual=False) as (a, b):
        ann.add_annotator(a, "ada")
        for i in range(200):
            ann.submit_example(a, "sentiment", "ada" if i % 2 else "amy", {"statement": f"example {i} " + "x" * 300},
                               "positive", details=ann.ExampleDetails(time_ms=100))
        ann.pack(a, tmp_path / "a.pack")
        before = _counts(b)
        filler = fill(disk)
        with pytest.raises(StoreError) as err:
            ann.merge(b, tmp_path / "a.pack")
        msg = str(err.value)
        assert "is full" in msg and str(b.path) in msg and "nothing of this change was written" in msg, msg
        assert b.integrity_check() == "ok"
        assert _counts(b) == before  # all or nothing: no example, vote or person of the pack
        filler.unlink()
        report = ann.merge(b, tmp_path / "a.pack")
        assert report.examples_added == 200 and _counts(b)[0] == before[0] + 200
        assert b.integrity_check() == "ok" and ann.verify(b).ok


def test_disk_full_during_an_evaluation_fails_the_run_clearly_and_keeps_the_database(tmp_path):
    from dynadesk.orchestration.evaluate import evaluate

    with small_disk(tmp_path / "disk", "24m") as disk:
        ws = Workspace(disk / "ws").ensure()
        store = ws.open_store()
        try:
            setup_workspace(store, tmp_path / "outside", sizes=(400, 400))
            runs_before = store.db.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
            filler = fill(disk, leave=64 * 1024)
            with pytest.raises(DynaDeskError) as err:
                evaluate(store, ws, run_request("tiny", runner="local", latency_samples=4, warmup=1))
            msg = str(err.value)
            assert "full" in msg or "No space left" in msg, msg
            assert isinstance(err.value, (EvaluationError, StoreError)), type(err.value)
            assert store.integrity_check() == "ok"
            rows = store.db.execute("SELECT status FROM evaluations").fetchall()
            assert len(rows) <= runs_before + 1
            assert all(r[0] != "succeeded" for r in rows), rows  # a half-written run is never stored as a result
            filler.unlink()
            rec = evaluate(store, ws, run_request("tiny", runner="local", latency_samples=4, warmup=1))
            assert rec.status == "succeeded"
            assert store.integrity_check() == "ok"
        finally:
            store.close()


def test_disk_full_during_the_workers_own_writes_fails_the_run_naming_it_and_leaves_nothing_half_written(tmp_path):
    """The run folder is prepared with room to spare; the disk fills while the evaluation worker is predicting,
    so its own output writes (predictions, metrics) and the host's log fail on the full disk. The run must end
    ``failed`` (never left ``running``) with an error naming it and the full disk, its out/ holding no half-written
    file, and the database intact; the next run succeeds once space is freed."""
    from dynadesk.orchestration.evaluate import evaluate

    with small_disk(tmp_path / "disk", "24m") as disk:
        ws = Workspace(disk / "ws").ensure()
        store = ws.open_store()
        try:
            setup_workspace(store, tmp_path / "outside", sizes=(400, 400))
            filled: list[Path] = []

            def fill_when_predicting(event: ProgressEvent) -> None:
                if event.phase == "predict" and not filled:
                    filled.append(fill(disk, leave=8 * 1024))

            with pytest.raises(DynaDeskError) as err:
                rec = evaluate(store, ws, run_request("tiny", runner="local", latency_samples=4, warmup=1),
                               progress=fill_when_predicting)
                raise AssertionError(f"run {rec.id} ended {rec.status}: {rec.error}")  # must raise, naming the run
            assert filled, "the worker never reported predicting"
            (row,) = store.db.execute("SELECT id, status, error FROM evaluations").fetchall()
            run_id, status, error = row
            msg = str(err.value)
            assert f"run {run_id}" in msg and ("full" in msg or "No space left" in msg), msg
            assert status == "failed", (status, error)  # never left 'running' or 'queued'
            assert "full" in error or "No space left" in error, error
            assert store.integrity_check() == "ok"
            out = ws.runs_dir / str(run_id) / "out"
            assert not [p.name for p in out.iterdir()] if out.exists() else True  # nothing half-written kept
            filled[0].unlink()
            rec = evaluate(store, ws, run_request("tiny", runner="local", latency_samples=4, warmup=1))
            assert rec.status == "succeeded"
            assert store.integrity_check() == "ok"
        finally:
            store.close()


def test_a_database_that_fills_while_its_results_are_stored_fails_the_run_naming_it(tmp_path):
    """The other order of the case above, made certain: the worker's own writes succeed and the database fills
    (SQLite's own page limit, so its real SQLITE_FULL) before the host stores the results. A suite run saw this
    order end in a bare "the disk holding ... is full" naming no run. The error names the run, the run is not
    stored as a result (marked failed where the kept room allows), and the database stays intact."""
    from dynadesk.orchestration.evaluate import evaluate

    ws = Workspace(tmp_path / "ws").ensure()
    store = ws.open_store()
    try:
        setup_workspace(store, tmp_path / "outside", sizes=(40, 40))
        capped: list[int] = []

        def cap_when_predicting(event: ProgressEvent) -> None:
            if event.phase == "predict" and not capped:
                pages = store.db.execute("PRAGMA page_count").fetchone()[0]
                capped.append(store.db.execute(f"PRAGMA max_page_count = {pages}").fetchone()[0])

        with pytest.raises(StoreError) as err:
            rec = evaluate(store, ws, run_request("tiny", runner="local", latency_samples=4, warmup=1),
                           progress=cap_when_predicting)
            raise AssertionError(f"run {rec.id} ended {rec.status}: {rec.error}")
        assert capped, "the worker never reported predicting"
        (row,) = store.db.execute("SELECT id, status, error FROM evaluations").fetchall()
        run_id, status, error = row
        msg = str(err.value)
        assert msg.startswith(f"run {run_id} failed: ") and "full" in msg, msg
        assert status != "succeeded" and (status == "failed" or "could not be marked failed" in msg), (status, msg)
        assert store.db.execute("SELECT COUNT(*) FROM metric_values").fetchone()[0] == 0  # no result half-stored
        store.db.execute("PRAGMA max_page_count = 1073741823")
        assert store.integrity_check() == "ok"
    finally:
        store.close()
