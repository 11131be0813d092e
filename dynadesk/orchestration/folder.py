"""The run folder's layout, in one place, and the host's rules for touching what a container wrote.

``runs/<id>/`` holds ``spec/spec.json`` and ``data/*.jsonl`` (host-written; the full examples, which
stay on the host), ``inputs/*.jsonl`` (the model's view of ``data/``: ids and input fields only, mounted
read-only with the spec; :mod:`.model_view`), ``out/`` (the only folder the worker writes),
``run.log`` (the host's copy of the worker output) and, for a root host, a transient ``model-snapshot/``. Everything
under ``out/`` may have been written by hostile code, so the host never follows a link
there: sizes come from ``lstat``, files are opened with ``O_NOFOLLOW``, ownership is
changed with ``lchown``, and a resume first removes links and files the worker never
writes, naming each one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from dynadesk.errors import RunFolderError
from dynadesk.evaluator.schema import (
    ENVIRONMENT_FILE,
    LOG_FILE,
    METRICS_FILE,
    PARTS_DIR,
    PREDICTIONS_FILE,
    PROFILE_FILE,
    SPEC_FILE,
)

ERROR_FILE = "error.json"
OUT_FILES = frozenset({PREDICTIONS_FILE, METRICS_FILE, PROFILE_FILE, ENVIRONMENT_FILE, LOG_FILE, ERROR_FILE})
PART_NAME = re.compile(r"d\d{3}\.jsonl(\.done\.json)?(\.tmp)?")
MAX_RESULT_FILE = 64 << 20  # metrics/profile/environment/error JSON: far below this when genuine


@dataclass(frozen=True)
class RunPaths:
    """Host folders of one run as a runner mounts them: spec and data read-only, ``out_dir`` writable.

    ``data_dir`` is what the worker reads as its data: the model's view (``inputs/``), never the gold."""

    spec_dir: Path
    data_dir: Path
    model_dir: Path
    out_dir: Path


@dataclass(frozen=True)
class RunFolder:
    """``runs/<id>`` (or any work folder with the same layout, e.g. a pre-flight repeat)."""

    root: Path

    @classmethod
    def of_run(cls, runs_dir: Path, run_id: int) -> RunFolder:
        return cls(Path(runs_dir) / str(run_id))

    @classmethod
    def stored(cls, run_dir: str | None, run_id: int) -> RunFolder:
        """The folder a stored run names; a run row without one (a hand-made row) is a clear error, not a TypeError."""
        if not run_dir:
            raise RunFolderError(f"run {run_id} has no run folder recorded in the workspace database")
        return cls(Path(run_dir))

    @property
    def spec_dir(self) -> Path:
        return self.root / "spec"

    @property
    def spec_file(self) -> Path:
        return self.spec_dir / SPEC_FILE

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def inputs_dir(self) -> Path:
        """The model's view of ``data/`` (:mod:`.model_view`): the only data a worker is given."""
        return self.root / "inputs"

    @property
    def out_dir(self) -> Path:
        return self.root / "out"

    @property
    def log_file(self) -> Path:
        return self.root / "run.log"

    @property
    def snapshot_dir(self) -> Path:
        return self.root / "model-snapshot"

    @property
    def predictions_file(self) -> Path:
        return self.out_dir / PREDICTIONS_FILE

    @property
    def legacy_predictions_file(self) -> Path:
        """Where runs recorded before this layout (no ``spec/``, no ``out/``) kept their predictions."""
        return self.root / PREDICTIONS_FILE

    def predictions_candidates(self) -> list[Path]:
        """Where a run may keep its predictions: ``out/`` (this layout), then the older folder's own."""
        return [self.predictions_file, self.legacy_predictions_file]

    def kept_predictions(self) -> Path | None:
        """The predictions file the run kept (the first of :meth:`predictions_candidates` that exists), or None."""
        return next((p for p in self.predictions_candidates() if p.is_file()), None)

    def create(self) -> None:
        """A fresh, empty layout (an older folder of the same run is removed without following links)."""
        if self.root.is_symlink():
            self.root.unlink()
        elif self.root.exists():
            shutil.rmtree(self.root)
        self.data_dir.mkdir(parents=True)
        self.spec_dir.mkdir()
        self.out_dir.mkdir()

    def open_inputs(self) -> None:
        """Write the model's view of the data (``inputs/``, from ``data/`` and the spec) and make spec and view
        readable by the sandbox's unprivileged user; ``data/`` (the gold) is the host's alone."""
        from dynadesk.evaluator.schema import Spec
        from dynadesk.orchestration.model_view import write_model_view

        write_model_view(Spec.read(self.spec_file), self.data_dir, self.inputs_dir)
        os.chmod(self.data_dir, 0o700)
        os.chmod(self.spec_dir, 0o755)
        os.chmod(self.spec_file, 0o644)

    def paths(self, model_dir: Path, data_dir: Path | None = None) -> RunPaths:
        """The folders a runner mounts: the spec, the model's view of the data (``inputs/``), the model, ``out/``."""
        return RunPaths(self.spec_dir, data_dir or self.inputs_dir, model_dir, self.out_dir)

    def has_spec(self) -> bool:
        return self.spec_file.is_file() and not self.spec_file.is_symlink()

    def strays(self) -> list[str]:
        """What in ``out/`` the worker never writes: links, special files, unknown names (paths relative to ``out``)."""
        found: list[str] = []
        if not self.out_dir.exists():
            return found
        for entry in os.scandir(self.out_dir):
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                found.append(entry.name)
            elif entry.name == PARTS_DIR and stat.S_ISDIR(mode):
                found += [f"{PARTS_DIR}/{name}" for name in _part_strays(Path(entry.path))]
            elif not (stat.S_ISREG(mode) and (entry.name in OUT_FILES or entry.name.removesuffix(".tmp") in OUT_FILES)):
                found.append(entry.name)
        return sorted(found)

    def remove_strays(self) -> list[str]:
        """Delete every stray (the link itself, never its target) and return their names."""
        strays = self.strays()
        for name in strays:
            _remove_entry(self.out_dir / name)
        return strays

    def check_inputs(self) -> None:
        """Refuse a folder whose host-written part was tampered with (links in ``spec/``, ``data/``, ``inputs/``)."""
        subs = (self.spec_dir, self.data_dir, self.inputs_dir)
        bad = [str(p.relative_to(self.root)) for sub in subs if sub.exists()
               for p in [sub, *sub.iterdir()] if p.is_symlink() or not (p.is_file() or p.is_dir())]
        if any(p.is_symlink() for p in (*subs, self.out_dir)):
            bad.append("spec/, data/, inputs/ or out/ itself is a link")
        if bad:
            raise RunFolderError(f"run folder {self.root} holds links or special files the host did not write: "
                                 f"{', '.join(sorted(set(bad)))}; start a new run instead of resuming this one")

    def clear_out(self) -> None:
        """Empty ``out/`` (after a ``disk`` verdict its contents are only the overflow)."""
        for entry in os.scandir(self.out_dir):
            _remove_entry(Path(entry.path))

    def out_bytes(self) -> int:
        """Bytes under ``out/`` by ``lstat`` (links are counted as themselves and never followed)."""
        return tree_bytes(self.out_dir)

    def read_out(self, name: str, limit: int = MAX_RESULT_FILE) -> bytes:
        """A regular file of ``out/``, opened without following links and read up to ``limit`` bytes."""
        return read_no_follow(self.out_dir / name, limit)


def _part_strays(parts: Path) -> list[str]:
    bad = []
    for entry in os.scandir(parts):
        mode = entry.stat(follow_symlinks=False).st_mode
        if not stat.S_ISREG(mode) or not PART_NAME.fullmatch(entry.name):
            bad.append(entry.name)
    return bad


def _remove_entry(path: Path) -> None:
    mode = path.lstat().st_mode
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)  # rmtree removes links inside without following them
    else:
        path.unlink()


def tree_bytes(root: Path) -> int:
    """Total ``lstat`` size of a tree; a folder vanishing mid-walk (the worker renames) is skipped."""
    total = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += st.st_size
            if stat.S_ISDIR(st.st_mode):
                stack.append(Path(entry.path))
    return total


def read_no_follow(path: Path, limit: int) -> bytes:
    """Read a regular file that a container may have replaced by a link or a FIFO: refuse both."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise RunFolderError(f"{path} cannot be read as a regular file ({exc.strerror}; a link is never "
                             "followed)") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RunFolderError(f"{path} is not a regular file; the host does not read it")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise RunFolderError(f"{path} is larger than {limit} bytes; the host does not read it")
    return data


def sha256_no_follow(path: Path) -> str:
    """``sha256:<hex>`` of a regular file opened without following a link (any size: read in blocks)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise RunFolderError(f"{path} cannot be read as a regular file ({exc.strerror}; a link is never "
                             "followed)") from None
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RunFolderError(f"{path} is not a regular file; the host does not read it")
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def chown_tree_no_follow(root: Path, uid: int, gid: int) -> None:
    """Hand a tree to the sandbox user without following any link in it (``lchown``)."""
    os.lchown(root, uid, gid)
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            os.lchown(os.path.join(folder, name), uid, gid)
