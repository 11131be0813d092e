"""The local worker's packages: the same distributions as the evaluator image, nothing more.

The image holds the pinned closure of :data:`~dynadesk.orchestration.image.TOP_REQUIREMENTS`
(torch, transformers, ... and what they require) plus the evaluator. A local worker started
with the host's full site-packages sees every other package installed there, and libraries
probe for optional ones: transformers imports ``scipy.optimize`` whenever scipy is importable
(its object-detection losses), which costs the worker about 50 MB of resident memory, two
OpenBLAS threads and 0.4 s, none of which the container pays. The Dynascore's memory would
then depend on what else the host happens to have installed (measured: 0.382 GiB locally
against 0.347 GiB in Docker for the same tiny model, and more apart on other runs).

So the local runner gives the worker a *site view*: a folder of links to exactly the
top-level files of that closure's distributions (found from the host's own metadata, so the
versions are the host's, the same pins the image is built from) plus ``dynadesk/__init__.py``
and ``dynadesk/evaluator`` from this checkout, and starts Python isolated (``-I -S``) with only
the standard library and that view on ``sys.path``. The view is cached by the digest of what it
links to and rebuilt when the host's packages change.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from dynadesk.orchestration.image import TOP_REQUIREMENTS

VIEW_VERSION = 2
# Runtimes an adapter imports lazily that a host may lack (none now: onnxruntime moved into TOP_REQUIREMENTS, so
# the image and the local view both have it); linked into the view when the host has them.
OPTIONAL_REQUIREMENTS: tuple[str, ...] = ()


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    """Names of the distributions ``dist`` requires unconditionally on this platform (no extras)."""
    from packaging.requirements import InvalidRequirement, Requirement

    names = []
    for text in dist.requires or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        names.append(_canonical(req.name))
    return names


def closure(top: tuple[str, ...] = TOP_REQUIREMENTS) -> dict[str, metadata.Distribution]:
    """canonical name -> installed distribution, for ``top`` and everything it requires."""
    installed: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():
        name = _canonical(dist.metadata["Name"] or "")
        if name and name not in installed:  # the first on sys.path wins, as for imports
            installed[name] = dist
    found: dict[str, metadata.Distribution] = {}
    todo = [_canonical(n) for n in top]
    while todo:
        name = todo.pop()
        if name in found or name not in installed:
            continue
        found[name] = installed[name]
        todo += _requirement_names(installed[name])
    return found


def _top_level_entries(dist: metadata.Distribution) -> set[Path]:
    """The absolute paths of the top-level files and folders a distribution installed into its site folder."""
    base = Path(str(dist.locate_file(""))).resolve()
    entries = set()
    for f in dist.files or []:
        parts = Path(str(f)).parts
        if not parts or parts[0] in ("..", "/") or parts[0].endswith(".pth") or parts[0] == "__pycache__":
            continue  # scripts in bin/, .pth hooks, stray bytecode
        entries.add(base / parts[0])
    return {e for e in entries if e.exists()}


def _evaluator_sources() -> tuple[Path, Path]:
    """(dynadesk/__init__.py, the evaluator package folder) of this checkout: what the image's wheel holds."""
    import dynadesk
    import dynadesk.evaluator

    return Path(dynadesk.__file__).resolve(), Path(dynadesk.evaluator.__file__).resolve().parent


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dynadesk" / "worker-site"


def _installed_key() -> str:
    """A cheap digest of what is installed on ``sys.path`` (the distributions' metadata folder names) and of what
    the view must hold (the image's requirements: a view built before one was added, onnx for the onnxruntime
    backend, would otherwise be reused without it)."""
    init, evaluator = _evaluator_sources()
    wanted = ",".join(TOP_REQUIREMENTS + OPTIONAL_REQUIREMENTS)
    h = hashlib.sha256(f"v{VIEW_VERSION}\n{sys.executable}\n{init}\n{evaluator}\n{wanted}\n".encode()
                       + init.read_bytes())
    for entry in sys.path:
        try:
            names = sorted(n for n in os.listdir(entry or ".") if n.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
        h.update(f"{entry}\n".encode() + "".join(f"\t{n}\n" for n in names).encode())
    return h.hexdigest()[:16]


def site_view(root: Path | None = None) -> Path:
    """The folder of links the local worker imports from (built once per set of host packages)."""
    root = root or cache_root()
    view = root / _installed_key()
    if (view / ".complete").is_file():
        return view
    links: dict[str, Path] = {}
    for dist in closure(TOP_REQUIREMENTS + OPTIONAL_REQUIREMENTS).values():
        for entry in _top_level_entries(dist):
            links.setdefault(entry.name, entry)
    init, evaluator = _evaluator_sources()
    root.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        for name, target in links.items():
            if name != "dynadesk":
                (stage / name).symlink_to(target, target_is_directory=target.is_dir())
        (stage / "dynadesk").mkdir()
        shutil.copy2(init, stage / "dynadesk" / "__init__.py")
        (stage / "dynadesk" / "evaluator").symlink_to(evaluator, target_is_directory=True)
        (stage / ".complete").write_text("".join(f"{n}\t{t}\n" for n, t in sorted(links.items())))
        try:
            os.rename(stage, view)
        except OSError:  # another run built it meanwhile
            if not (view / ".complete").is_file():
                raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return view


# ``-I -S`` drops site-packages and PYTHONPATH; an explicit PYTHONPATH is put back in front of the view (and its
# sitecustomize run, as ``site`` would), so what a user or a test deliberately adds still reaches the worker.
BOOTSTRAP = """\
import os, runpy, sys
view = sys.argv.pop(1)
extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
sys.path[:0] = extra + [view]
if extra:
    try:
        import sitecustomize
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
sys.argv[0] = "dynadesk.evaluator"
runpy.run_module("dynadesk.evaluator", run_name="__main__", alter_sys=True)
"""


def isolated_command(python: str, view: Path, args: list[str]) -> list[str]:
    """``python -m dynadesk.evaluator ARGS`` with only the standard library and ``view`` importable."""
    return [python, "-I", "-S", "-c", BOOTSTRAP, str(view), *args]
