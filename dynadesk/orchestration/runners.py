"""Runners: where the evaluation worker runs. One contract, three places; this module names them all.

The contract (:class:`Runner`, :class:`RunOutcome`, the :class:`HostObservation` every run returns) is
:mod:`.runner_base`; the runners are :mod:`.local_runner` (a subprocess here, not sandboxed),
:mod:`.docker_runner` (the sandbox, and the one Docker boundary of the runners) and :mod:`.remote_runner`
(another machine, reached over a socket: see docs/remote-runner.md). They are registered in
:mod:`.runner_registry`; this module re-exports them so that ``from dynadesk.orchestration.runners import ...``
keeps working.
"""

from __future__ import annotations

from dynadesk.orchestration.docker_runner import IN_SANDBOX_GRACE_S, DockerRunner, remove_leftover_containers
from dynadesk.orchestration.folder import RunPaths
from dynadesk.orchestration.limits import Limits
from dynadesk.orchestration.local_runner import LocalRunner
from dynadesk.orchestration.observe import HostObservation
from dynadesk.orchestration.remote_runner import RemoteRunner
from dynadesk.orchestration.runner_base import POLL_S, Runner, RunOutcome

__all__ = ["IN_SANDBOX_GRACE_S", "POLL_S", "DockerRunner", "HostObservation", "Limits", "LocalRunner", "RemoteRunner",
           "RunOutcome", "RunPaths", "Runner", "remove_leftover_containers"]
