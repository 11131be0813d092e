"""``--dist loadfile`` that survives a crashed worker (pytest-xdist 3.8.0 deadlocks there).

`make test`'s parallel phase hands whole test files to its workers. When one worker died (a segfault in a
test's process), stock xdist 3.8.0 put back on the queue *every* file that worker had been given, the
finished ones included; a finished file reaches its next worker as an empty batch that never reports back,
so no worker is asked for more and the session waits forever (pytest-xdist issues 784, 1323, 1378). One CI
run on a clean clone sat there until CI's 90-minute limit, the crash's own report never printed.

:class:`CrashSafeLoadFile` is xdist's own ``loadfile`` scheduler with three differences, each the fix of one
of those issues: a crashed worker's finished files are not queued again; the test it crashed on is counted
done (xdist has already reported it failed, naming the worker: running it again only crashes the
replacement); and a worker that joined late is given work until it holds enough to run, or told there is no
more. It is used through xdist's own extension point, the ``pytest_xdist_make_scheduler`` hook
(tests/conftest.py imports it; elsewhere ``-p support.xdist_scheduler`` with ``tests/`` on the path).
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

__all__ = ["CrashSafeLoadFile", "pytest_xdist_make_scheduler"]


class CrashSafeLoadFile(LoadFileScheduling):
    """xdist's ``loadfile`` scheduling; a crashed worker leaves only its unfinished files behind."""

    def remove_node(self, node: Any) -> str | None:
        """Forget ``node``; when it died during a test, return that test's id and queue what it had not run."""
        workload = self.assigned_work.pop(node)
        unfinished = {scope: unit for scope, unit in workload.items() if not all(unit.values())}
        if not unfinished:
            return None
        # a worker runs its files in the order given, so the first test not done is the one it died in
        crashed = next(nodeid for unit in unfinished.values() for nodeid, done in unit.items() if not done)
        for unit in unfinished.values():
            if crashed in unit:
                unit[crashed] = True  # counted done: xdist has reported it failed, naming the worker
        for scope, unit in unfinished.items():
            if not all(unit.values()):
                self.workqueue[scope] = unit
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed

    def _reschedule(self, node: Any) -> None:
        """Top ``node`` up to more than two pending tests while files wait; shut it down once none do.

        xdist gave one file per call, and only a test report calls again: a replacement worker whose one
        file held one test kept it (a worker runs a test once it knows the next) and waited for ever."""
        if node.shutting_down:
            return
        while self.workqueue and self._pending_of(self.assigned_work[node]) <= 2:
            self._assign_work_unit(node)
        if not self.workqueue:
            node.shutdown()


@pytest.hookimpl(optionalhook=True)  # no hook to implement when a run disables xdist (-p no:xdist)
def pytest_xdist_make_scheduler(config: Any, log: Any) -> CrashSafeLoadFile | None:
    """``--dist loadfile`` gets :class:`CrashSafeLoadFile`; any other mode stays xdist's."""
    if config.getvalue("dist") == "loadfile":
        return CrashSafeLoadFile(config, log)
    return None
