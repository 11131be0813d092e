"""Hostile test models: model folders whose code tries to escape or exhaust the sandbox.

A model can only run code through a loader hole; these stand in for one. Each
folder is a normal tiny classifier plus ``hostile.json`` naming a behaviour, and
``payload/sitecustomize.py`` carries it out when the worker loads the model, with
exactly the rights the model's code would have (the sandbox user, no network,
read-only /model, limits).

The payload runs ONLY under :class:`HostileDockerRunner`, a test-only subclass
that mounts ``payload/`` and puts it on PYTHONPATH. The product's runners have no
option to add mounts or environment variables, so a user's model folder that
contains a ``hostile.json`` (or anything else) can never switch this on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dynadesk.orchestration.runners import DockerRunner, Limits, RunPaths

PAYLOAD_DIR = Path(__file__).resolve().parent / "payload"
BEHAVIOURS = ("network", "write_model", "fork_bomb", "memory", "hang", "symlink_out", "fill_out", "flood",
              "rewrite_metrics", "duplicate_id", "missing_id", "inflate_throughput", "shrink_memory", "forge_windows",
              "replay")


def make_hostile_model(path: Path, behaviour: str, target: str | None = None) -> Path:
    """A registered-able tiny sentiment model whose code does ``behaviour`` (``target``: a host path it aims at)."""
    from support.tiny_models import make_tiny_classifier

    if behaviour not in BEHAVIOURS:
        raise ValueError(f"unknown behaviour {behaviour!r}")
    folder = make_tiny_classifier(path, ["negative", "neutral", "positive"], task="sentiment")
    (folder / "hostile.json").write_text(json.dumps({"behaviour": behaviour, "target": target}))
    return folder


class HostileDockerRunner(DockerRunner):
    """DockerRunner with the same lock-down, plus the payload mounted read-only (tests only)."""

    def container_options(self, paths: RunPaths, limits: Limits) -> dict[str, Any]:
        opts = super().container_options(paths, limits)
        opts["volumes"][str(PAYLOAD_DIR)] = {"bind": "/hostile", "mode": "ro"}
        opts["environment"]["PYTHONPATH"] = "/hostile"
        return opts
