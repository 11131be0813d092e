"""The one registry of runners: every list of runner names (the request's check, the CLI's ``--runner`` choices, the
app's runner boxes, make_runner) derives from :data:`RUNNERS`.

A runner is registered by a :class:`RunnerSpec`; its class is named as ``"module:Class"`` and imported only when a
run starts, so reading the registry (the CLI's help, the app's settings) loads neither docker nor a runner. The
bundle format accepts any runner name of the form :data:`RUNNER_NAME` (it is a leaf and cannot see this registry);
re-running a bundle needs its runner registered here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from dynadesk.errors import ConfigError
from dynadesk.evaluator.registry import Registry, RegistryError
from dynadesk.sync.format.schema import RUNNER_NAME

__all__ = ["RUNNERS", "RunnerSpec", "register_runner", "runner_class", "runner_help", "runner_names", "runner_spec"]


@dataclass(frozen=True)
class RunnerSpec:
    """One runner: its name (recorded in runs and bundles), how the app and CLI show it, and its class."""

    name: str
    label: str                 # the app's runner boxes
    sandboxed: bool            # False: its runs and bundles are marked not sandboxed
    runner: str                # "module:Class", a subclass of orchestration.runners.Runner
    uses_image: bool = False   # runs in the evaluator image: request.image, image Ids and image checks apply
    help: str = ""             # the CLI's one-line description

    @property
    def plain_label(self) -> str:
        """The name with its sandbox in words: ``local (not sandboxed)``."""
        return f"{self.name} ({'sandboxed' if self.sandboxed else 'not sandboxed'})"


def _runner_problem(name: str, spec: RunnerSpec) -> str | None:
    """A runner's name must have the bundle format's runner-name form and its class be named ``module:Class``."""
    if spec.name != name:
        return f"is registered as '{name}' but names itself '{spec.name}'"
    if not RUNNER_NAME.match(spec.name):
        return f"runner name {spec.name!r} must match {RUNNER_NAME.pattern}"
    if ":" not in spec.runner:
        return f"its class must be named as 'module:Class', got {spec.runner!r}"
    return None


# Third-party runners: a RunnerSpec as a `dynadesk.runners` entry point (evaluator/registry.py).
RUNNERS: Registry[RunnerSpec] = Registry("runners", "runner", RunnerSpec, check=_runner_problem)


def register_runner(spec: RunnerSpec) -> RunnerSpec:
    """Add (or replace) a runner; its name must have the bundle format's runner-name form."""
    try:
        RUNNERS.add(spec.name, spec)
    except RegistryError as exc:
        raise ConfigError(str(exc)) from None
    return spec


def runner_names() -> tuple[str, ...]:
    """Every registered runner's name, in registration order (the CLI's choices)."""
    return tuple(RUNNERS)


def runner_spec(name: str) -> RunnerSpec:
    """The registered runner ``name``; :class:`ConfigError` naming the known ones otherwise."""
    try:
        spec = RUNNERS.get(name)
    except RegistryError as exc:  # a plugin's entry that does not load
        raise ConfigError(str(exc)) from None
    if spec is None:
        raise ConfigError(f"unknown runner '{name}' (use one of {', '.join(RUNNERS)})")
    return spec


def runner_class(name: str) -> type:
    """The class that runs ``name``, imported now."""
    spec = runner_spec(name)
    module, _, attr = spec.runner.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"runner '{name}': cannot import its class {spec.runner}: {exc}") from exc


def runner_help() -> str:
    """``docker = ...; local = ...``: the CLI's ``--runner`` help."""
    return "; ".join(f"{s.name} = {s.help}" for s in RUNNERS.values() if s.help) + "."


register_runner(RunnerSpec("docker", "Docker sandbox", True, "dynadesk.orchestration.docker_runner:DockerRunner",
                           uses_image=True, help="sandboxed container"))
register_runner(RunnerSpec("local", "Local subprocess (no sandbox)", False,
                           "dynadesk.orchestration.local_runner:LocalRunner",
                           help="subprocess, results marked not sandboxed"))
register_runner(RunnerSpec("remote", "Remote machine (agent over SSH, not sandboxed here)", False,
                           "dynadesk.orchestration.remote_runner:RemoteRunner",
                           help="another machine's agent (DYNADESK_REMOTE), results marked not sandboxed"))
