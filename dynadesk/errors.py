"""One exception hierarchy for the whole core library.

Foreign errors (sqlite3, yaml, json, docker, requests, torch) are translated
into these where they enter, so callers (CLI, GUI, server) catch one family
and can show ``str(err)`` to a user as-is: every message names what is wrong
and where.
"""

from __future__ import annotations


class DynaDeskError(Exception):
    """Base of every error the library raises on purpose."""


class ConfigError(DynaDeskError):
    """A task file, manifest, spec or setting is malformed."""


class NotFoundError(DynaDeskError):
    """A named thing (task, dataset, model, run, bundle ...) does not exist."""


class AlreadyExistsError(DynaDeskError):
    """A name or content digest is already registered."""


class ValidationError(DynaDeskError):
    """Input data failed validation; ``problems`` lists every issue found."""

    def __init__(self, message: str, problems: list[str] | None = None):
        self.problems = list(problems or [])
        if self.problems:
            shown = "\n".join(f"  - {p}" for p in self.problems[:50])
            more = len(self.problems) - 50
            if more > 0:
                shown += f"\n  ... and {more} more"
            message = f"{message}\n{shown}"
        super().__init__(message)


class StoreError(DynaDeskError):
    """The workspace database could not be opened or written."""


class DataRecipeError(DynaDeskError):
    """The bundled-data recipe failed (download, digest mismatch, bad archive)."""


class ModelError(DynaDeskError):
    """A model folder cannot be registered or loaded."""


class UnsafeModelError(ModelError):
    """A model holds pickle weights, which execute code when loaded on the host."""


class EvaluationError(DynaDeskError):
    """An evaluation run failed; ``verdict`` says how (oom, timeout, ...)."""

    def __init__(self, message: str, verdict: str = "error"):
        self.verdict = verdict
        super().__init__(message)


class AnnotationError(DynaDeskError):
    """An annotation action is not allowed (own example, second vote, ...)."""


class BundleError(DynaDeskError):
    """A score bundle is malformed or does not verify."""


class SyncError(DynaDeskError):
    """Talking to the leaderboard server failed."""
