"""Administrator actions on a server database that need more than one SQL call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dynadesk.errors import ConfigError, NotFoundError
from dynadesk.sync.format.schema import DIGEST
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.task_registry import board_tasks


def register_dataset(db: ServerDB, task: str, name: str, *, split: str = "test", digest: str | None = None,
                     size: int | None = None, file: str | Path | None = None, replace: bool = False) -> dict[str, Any]:
    """Accept a dataset by digest, or compute digest and size from a dataset file (validated)."""
    tasks = board_tasks(db)  # bundled + registered on this board (never a workspace's own)
    if task not in tasks:
        raise NotFoundError(f"unknown task '{task}' (known: {', '.join(sorted(tasks))})")
    t = tasks[task]
    if file is not None:
        from dynadesk.datasets import dataset_digest
        from dynadesk.formats import read_examples

        examples = read_examples(t, Path(file)).examples
        digest, size = dataset_digest(examples), len(examples)
    if digest is None or size is None:
        raise ConfigError("give --file, or both --digest and --size")
    if not DIGEST.match(digest):
        raise ConfigError(f"--digest must look like sha256:<64 hex digits>, got {digest!r}")
    change = db.add_dataset(t.name, name, split, digest, size, replace=replace)
    return {**next(d for d in db.datasets(t.name) if d["name"] == name), **change}


def import_workspace_datasets(db: ServerDB, home: str | Path, split: str = "test",
                              task: str | None = None) -> list[dict[str, Any]]:
    """Accept every ``split`` dataset of a workspace. A changed digest becomes the name's next version
    (reported in ``previous_digest``); bundles scored on the old one stay on the board, marked stale.

    Derived datasets (robustness/fairness suites) are skipped: a bundle reports them as the
    robustness and fairness of their source set, not as datasets of their own.
    """
    from dynadesk.workspace import Workspace

    known = board_tasks(db)
    if task is not None and task not in known:
        raise NotFoundError(f"unknown task '{task}' (known: {', '.join(sorted(known))})")
    store = Workspace(Path(home)).open_store()
    try:
        added = []
        for d in store.datasets.list(task):
            if d.split != split or d.task not in known or d.derived_from:
                continue  # perturbation suites are not board datasets: bundles score them per source set
            change = db.add_dataset(d.task, d.name, d.split, d.digest, d.size, replace=True)
            added.append({**d.to_dict(), **change})
        return added
    finally:
        store.close()
