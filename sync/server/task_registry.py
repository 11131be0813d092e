"""The server's task registry: tasks a board accepts beyond the bundled four, registered by file.

``dynadesk-server tasks add FILE.yaml`` validates the file exactly as ``dynadesk tasks add`` does and
records the definition under its canonical digest. One name has one definition: a second, different
definition under a registered (or bundled) name is refused, so every row under a task name means the
same labels and metric. Uploads carry ``payload.task_digest``; one naming another definition is refused.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from dynadesk.canonical import canonical_bytes
from dynadesk.errors import AlreadyExistsError, ConfigError, NotOnBoardError
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.values import MetricRule, registry
from dynadesk.taskfile_guard import name_problem, read_task_text
from dynadesk.tasks import Task, bundled_task_names, load_tasks, parse_task_text, task_digest


def add_task_file(db: ServerDB, path: Path) -> tuple[Task, str]:
    """Validate and register the task in ``path``; returns it and its digest (idempotent for the same file)."""
    task = parse_task_text(read_task_text(Path(path)), str(path))  # the workspace's rules: caps, no aliases
    problem = name_problem(task.name, board_tasks(db))  # look-alikes of this board's registered tasks too
    if problem:
        raise ConfigError(f"{path}: {problem}")
    return task, add_task(db, task)


def add_task(db: ServerDB, task: Task) -> str:
    if task.name in bundled_task_names():
        raise AlreadyExistsError(f"task '{task.name}' is a bundled task; a board has one definition per name")
    digest = task_digest(task)
    with db.tx() as c:
        row = c.execute("SELECT digest FROM server_tasks WHERE name = ?", [task.name]).fetchone()
        if row is not None:
            if row[0] != digest:
                raise AlreadyExistsError(f"task '{task.name}' is already registered with another definition"
                                         f" ({row[0]}); this file's is {digest}. Choose another name.")
            return digest
        c.execute("INSERT INTO server_tasks(name, digest, definition, added_at) VALUES (?, ?, ?, ?)",
                  [task.name, digest, canonical_bytes(task.to_dict()).decode(), utc_now_text()])
    return digest


def registered_tasks(db: ServerDB) -> dict[str, Task]:
    """The tasks registered by file, by name."""
    with db.lock:
        rows = db.conn.execute("SELECT name, definition FROM server_tasks ORDER BY name").fetchall()
    return {str(name): Task.from_dict({**json.loads(definition), "source": "server"}) for name, definition in rows}


def board_tasks(db: ServerDB, tasks_dir: Path | None = None) -> dict[str, Task]:
    """Every task this board accepts: the bundled ones (or ``tasks_dir``'s) and the registered ones."""
    tasks = load_tasks(tasks_dir if tasks_dir is not None else _bundled_dir())
    for name, task in registered_tasks(db).items():
        tasks.setdefault(name, task)
    return tasks


def registry_version(db: ServerDB) -> int:
    """How many tasks are registered: tasks are only ever added (one name, one definition, never removed),
    so the count changes exactly when the registry does. One cheap query."""
    with db.lock:
        row = db.conn.execute("SELECT COUNT(*) FROM server_tasks").fetchone()
    return int(row[0]) if row else 0


class LiveTasks(Mapping[str, Task]):
    """The board's tasks, seeing ``dynadesk-server tasks add`` without a restart (the CLI and every serve process
    share the database). A registered task never changes, so a name already known is answered from memory; a
    name not known yet, or a listing, first checks :func:`registry_version` and re-reads the registry when it
    moved. The bundled tasks (or ``tasks_dir``'s) are read once."""

    def __init__(self, db: ServerDB, tasks_dir: Path | None = None):
        self._db = db
        self._base = load_tasks(tasks_dir if tasks_dir is not None else _bundled_dir())
        self._lock = threading.Lock()
        self._version = -1
        self._tasks: dict[str, Task] = dict(self._base)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the registered tasks if the registry changed since the last look."""
        version = registry_version(self._db)
        if version == self._version:
            return
        with self._lock:
            merged = dict(self._base)
            for name, task in registered_tasks(self._db).items():
                merged.setdefault(name, task)
            self._tasks, self._version = merged, version

    def __getitem__(self, name: str) -> Task:
        if name not in self._tasks:
            self.refresh()
        return self._tasks[name]

    def __contains__(self, name: object) -> bool:
        if name in self._tasks:
            return True
        self.refresh()
        return name in self._tasks

    def __iter__(self) -> Iterator[str]:
        self.refresh()
        return iter(dict(self._tasks))

    def __len__(self) -> int:
        self.refresh()
        return len(self._tasks)


class LiveRules(Mapping[str, dict[str, MetricRule]]):
    """Each task's metric rules (:func:`values.registry`), for the tasks of a :class:`LiveTasks`."""

    def __init__(self, tasks: LiveTasks):
        self._tasks = tasks
        self._rules: dict[str, dict[str, MetricRule]] = {}

    def __getitem__(self, name: str) -> dict[str, MetricRule]:
        found = self._rules.get(name)
        if found is None:
            found = self._rules[name] = registry(self._tasks[name])
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._tasks)

    def __len__(self) -> int:
        return len(self._tasks)


def _bundled_dir() -> Path:
    from dynadesk.tasks import default_tasks_dir

    return default_tasks_dir()


def check_task_digest(payload_digest: object, task: Task) -> None:
    """Refuse an upload whose task digest is not this board's definition of its task (absent: older bundles)."""
    if payload_digest is None:
        return
    known = task_digest(task)
    if payload_digest != known:
        raise NotOnBoardError(f"payload.task_digest: {payload_digest} is not the definition of task '{task.name}'"
                              f" this board knows ({known}); register the same task file on the server")


def describe(task: Task) -> str:
    """One line of a task's definition for the board and model pages: output, metric, fooling rule, digest."""
    output = f"labels {', '.join(task.labels)}" if task.labels else f"span of {task.span_of}"
    rule = task.fooled_rule.kind + (f" < {task.fooled_rule.threshold}" if task.fooled_rule.threshold else "")
    return f"{output}; metric {task.metric}; fooled when {rule}; {task_digest(task)}"


def definition(task: Task) -> dict[str, object]:
    """The task's definition as the public API shows it (``/api/tasks``): the parsed file and its digest."""
    return {**task.to_dict(), "digest": task_digest(task)}
