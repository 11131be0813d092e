"""The local runner: the evaluation worker in a subprocess of this machine, no sandbox (results marked so).

For machines without Docker. It applies what a subprocess can: the wall-clock timeout, the /out size limit and the
GPUs it may see (``CUDA_VISIBLE_DEVICES``); memory, pids and tmpfs are the Docker sandbox's, so the local runner
declares it does not enforce them (``enforced_limits``). Its host observation is the process tree's memory and the
load generator's timed windows, as for a container.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from typing import TYPE_CHECKING, ClassVar

from dynadesk.errors import EvaluationError
from dynadesk.evaluator.allocator import environment_overrides
from dynadesk.orchestration.folder import RunPaths
from dynadesk.orchestration.limits import Limits
from dynadesk.orchestration.loadgen import start_loadgen
from dynadesk.orchestration.observe import local_memory, observations
from dynadesk.orchestration.output import WorkerOutput
from dynadesk.orchestration.runner_base import POLL_S, Runner, RunOutcome, Watch, finished, interrupts_held, raise_held

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.progress import ProgressFn

__all__ = ["LocalRunner"]


class LocalRunner(Runner):
    """The worker in a subprocess of this Python: same code, no sandbox, no memory limit."""

    name = "local"
    sandboxed = False
    enforced_limits: ClassVar[frozenset[str]] = frozenset({"timeout_s", "out_bytes", "gpus"})

    def __init__(self, python: str | None = None):
        self.python = python or sys.executable

    def command(self, paths: RunPaths) -> list[str]:
        """The worker, isolated to the image's packages when it is this Python (see :mod:`.worker_site`)."""
        args = ["run", "--spec", str(paths.spec_dir / "spec.json"), "--out", str(paths.out_dir),
                "--model", str(paths.model_dir), "--data", str(paths.data_dir)]
        if self.python == sys.executable and not getattr(sys, "frozen", False):
            from dynadesk.orchestration import worker_site

            try:
                view = worker_site.site_view()
            except OSError as exc:
                raise EvaluationError(f"cannot prepare the local worker's packages in {worker_site.cache_root()}: "
                                      f"{exc}") from exc
            return worker_site.isolated_command(self.python, view, args)
        return [self.python, "-m", "dynadesk.evaluator", *args]

    def run(self, paths: RunPaths, limits: Limits, progress: ProgressFn | None = None,
            cancel: CancelToken | None = None) -> RunOutcome:
        inherited = set(environment_overrides())  # the worker fixes malloc itself; these would void it
        env = {k: v for k, v in os.environ.items() if k not in inherited}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
        if limits.gpus is None:
            env["CUDA_VISIBLE_DEVICES"] = ""
        elif limits.gpus != "all":
            env["CUDA_VISIBLE_DEVICES"] = limits.gpus
        watch = Watch(paths, limits, cancel)
        loadgen = start_loadgen(paths.spec_dir / "spec.json", paths.data_dir, paths.out_dir, paths.model_dir)
        try:
            # the data folder the worker reads is the load generator's, empty until the timed windows are over
            staged = RunPaths(paths.spec_dir, loadgen.sandbox_data, paths.model_dir, paths.out_dir)
            with interrupts_held() as arrived:  # a Ctrl-C inside Popen would leave us without the process to stop
                proc = subprocess.Popen([*self.command(staged), "--loadgen", str(loadgen.path)],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=env, start_new_session=True)
        except OSError as exc:
            loadgen.close()
            raise EvaluationError(f"cannot start the local worker {self.python}: {exc}") from exc
        verdict = None
        try:  # from the moment the worker exists: a signal while the reader starts must not orphan it
            raise_held(arrived)
            out = WorkerOutput(progress)
            memory = local_memory(proc.pid)
            stdout = proc.stdout
            assert stdout is not None
            chunks = iter(lambda: stdout.read1(65536), b"")  # type: ignore[attr-defined]  # a BufferedReader
            reader = threading.Thread(target=out.feed, args=(chunks,), daemon=True)
            reader.start()
            while proc.poll() is None:
                out.drain()
                memory.sample(before_windows=loadgen.counting())
                verdict = watch.verdict()
                if verdict:
                    self._kill(proc)
                    break
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=POLL_S)  # a poll's pause that ends the moment the worker does
            proc.wait()
            reader.join(timeout=30)
            out.drain()
            if not reader.is_alive():
                stdout.close()
        except BaseException:  # Ctrl-C or any host-side failure: the worker must not outlive us
            self._kill(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)  # reaped, so it is gone when the exception reaches the caller
            raise
        finally:
            loadgen.close()
        return finished(verdict, proc.returncode, out.text(), watch.elapsed(), paths, limits,
                        observations(loadgen.report(), memory))

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
