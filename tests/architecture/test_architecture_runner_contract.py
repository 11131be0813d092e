"""The runner contract is typed (issue 48 item 3): no ``Any`` in a signature a runner implements or a caller reads.

Every public method of :class:`Runner` and every field of :class:`RunOutcome` and :class:`HostObservation` is
resolved with its real types; an ``Any`` anywhere in them (``for_request(request: Any, client: Any)``, a
``details["observed"]`` dict of anything) fails here, naming the member.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing

from dynadesk.cancel import CancelToken
from dynadesk.orchestration import runners
from dynadesk.orchestration.daemon import DockerClient
from dynadesk.orchestration.request import RunRequest
from dynadesk.orchestration.runner_base import HostObservation, Runner, RunOutcome
from dynadesk.progress import ProgressFn

NAMES = {"RunRequest": RunRequest, "DockerClient": DockerClient, "CancelToken": CancelToken, "ProgressFn": ProgressFn}


def _has_any(tp: object) -> bool:
    return tp is typing.Any or any(_has_any(arg) for arg in typing.get_args(tp))


def _members() -> dict[str, dict[str, object]]:
    out = {}
    for name, member in inspect.getmembers(Runner):
        if not name.startswith("_") and callable(member):
            out[f"Runner.{name}"] = typing.get_type_hints(member, localns=NAMES)
    for cls in (RunOutcome, HostObservation):
        out[cls.__name__] = {f.name: typing.get_type_hints(cls, localns=NAMES)[f.name] for f in dataclasses.fields(cls)}
    return out


def test_the_runner_contract_has_no_any():
    members = _members()
    assert "Runner.for_request" in members and members["Runner.for_request"]["request"] is RunRequest
    untyped = sorted(f"{where}: {name}" for where, hints in members.items() for name, tp in hints.items()
                     if _has_any(tp))
    assert not untyped, untyped


def test_every_runner_implements_the_contract_with_the_same_signatures():
    for cls in (runners.LocalRunner, runners.DockerRunner, runners.RemoteRunner):
        for name in ("run", "for_request", "gpu_status", "describe", "check_ready", "image_id", "image_name"):
            ours, base = getattr(cls, name), getattr(Runner, name)
            assert typing.get_type_hints(ours, localns=NAMES) == typing.get_type_hints(base, localns=NAMES), \
                (cls.__name__, name)
        assert cls.enforced_limits <= runners.Limits.__dataclass_fields__.keys(), cls.__name__
