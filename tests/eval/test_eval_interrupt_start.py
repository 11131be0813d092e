"""A Ctrl-C or SIGTERM while the local worker starts must still stop it (a clean-clone failure of
``test_sigterm_to_the_cli_marks_the_run_interrupted_and_stops_the_worker``).

The signal landed inside ``subprocess.Popen`` after its fork (the parent waits there for the child's exec, tens of
milliseconds on a loaded machine): KeyboardInterrupt came out of Popen itself, the runner never had the process,
and the worker outlived the interrupted CLI (1 in 5 under three busy loops). The runner now holds both signals
while the worker starts and raises them again once it holds the process. Shown in a real process with the CLI's
own SIGTERM handler and a real child, the signal sent at the moment the old code lost it.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, signal, subprocess, time
from dynadesk.cli import _terminated
from dynadesk.orchestration.runner_base import interrupts_held, raise_held

signal.signal(signal.SIGTERM, _terminated)
with interrupts_held() as arrived:
    os.kill(os.getpid(), signal.SIGTERM)  # as if it came while Popen waited for the exec
    time.sleep(0.2)  # a held signal raises nothing here
    worker = subprocess.Popen(["sleep", "30"], start_new_session=True)
print("held", arrived, signal.getsignal(signal.SIGTERM) is _terminated, flush=True)
try:
    raise_held(arrived)
    time.sleep(5)
    print("never raised", flush=True)
except KeyboardInterrupt:  # the runner's own handler: it has the worker, and stops it
    worker.kill()
    print("stopped", worker.wait(), flush=True)
"""


def test_a_sigterm_while_the_worker_starts_is_held_then_raised_where_the_runner_stops_the_worker():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["held [15] True", "stopped -9"], out.stdout


def test_outside_the_main_thread_nothing_is_held():
    import threading

    from dynadesk.orchestration.runner_base import interrupts_held

    seen: list[list[int]] = []

    def start() -> None:
        with interrupts_held() as arrived:
            seen.append(arrived)

    t = threading.Thread(target=start)
    t.start()
    t.join()
    assert seen == [[]]
