"""A run is never left ``running`` (issue 49 item 8): the worker's own writes hit a disk filled to its last byte,
so nothing of the run's output can be cleared to make room, and the run's final state must still be written.

The space for it is kept in advance (``dynadesk/store/reserve.py``: a preallocated reserve beside the database,
given back to write the final state); this holds at any load, because nothing depends on how much the worker had
written when the disk filled. Real tmpfs (root), the real worker through the local runner, no mocks.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from reliability.test_reliability_disk import fill, small_disk
from support.eval import run_request, setup_workspace

from dynadesk.errors import DynaDeskError
from dynadesk.progress import ProgressEvent
from dynadesk.workspace import Workspace

pytestmark = pytest.mark.timeout(600)


def test_a_disk_full_to_the_last_byte_while_predicting_still_fails_the_run_and_says_so(tmp_path):
    from dynadesk.orchestration.evaluate import evaluate

    with small_disk(tmp_path / "disk", "24m") as disk:
        ws = Workspace(disk / "ws").ensure()
        store = ws.open_store()
        try:
            setup_workspace(store, tmp_path / "outside", sizes=(400, 400))
            filled: list[Path] = []
            free: list[int] = []

            def fill_when_predicting(event: ProgressEvent) -> None:
                if event.phase == "predict" and not filled:
                    filled.append(fill(disk, leave=0))
                    extra = disk / "extra"  # the last bytes too (fill leaves what does not fill a block)
                    try:
                        with open(extra, "wb", buffering=0) as fh:
                            while True:
                                fh.write(b"\0" * 512)
                    except OSError:
                        pass
                    if extra.exists():
                        filled.append(extra)
                    st = os.statvfs(disk)
                    free.append(st.f_bavail * st.f_frsize)

            with pytest.raises(DynaDeskError) as err:
                rec = evaluate(store, ws, run_request("tiny", runner="local", latency_samples=4, warmup=1),
                               progress=fill_when_predicting)
                raise AssertionError(f"run {rec.id} ended {rec.status}: {rec.error}")
            assert filled and free == [0], free  # not one block left when the worker went on writing
            (row,) = store.db.execute("SELECT id, status, error FROM evaluations").fetchall()
            run_id, status, error = row
            msg = str(err.value)
            assert f"run {run_id}" in msg and "full" in msg, msg
            assert "could not be marked failed" not in msg, msg
            assert status == "failed", (status, error)  # never left 'running'
            assert "full" in error, error
            assert store.integrity_check() == "ok"
            for f in filled:
                f.unlink()
            rec = evaluate(store, ws, run_request("tiny", runner="local", latency_samples=4, warmup=1))
            assert rec.status == "succeeded" and store.integrity_check() == "ok"
            from dynadesk.store.reserve import reserve_path

            assert reserve_path(store).stat().st_size > 0  # kept again for the next run
        finally:
            store.close()
