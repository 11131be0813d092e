"""Offline, reproducible build of the evaluator image (no registry, no BuildKit).

Recipe (verified on this kind of machine; two builds give the same image Id):

1. wheelhouse on the host: ``pip download --only-binary :all:`` of torch==2.13.0,
   transformers, psutil, nvidia-ml-py, safetensors, numpy and their dependencies,
   pinned to the host's installed versions (so host and container run the same
   builds), plus a hand-made, deterministic wheel of the evaluator package;
2. ``debootstrap --variant=minbase`` bookworm from the host's Debian mirror, through
   a kept ``--make-tarball`` (the pinnable input of later builds);
3. ``python3 -m venv /opt/venv`` in the chroot; the wheelhouse bind-mounted read-only,
   ``pip install --no-index``; every .pyc (Debian's too: py3compile's are not repeatable)
   recompiled by ``compileall -j 1 --invalidation-mode unchecked-hash``;
4. strip apt lists, caches, logs and machine-id; a deterministic layer tar
   (sorted, clamped mtimes, numeric root owner, no atime/ctime);
5. a hand-written ``docker save`` archive whose config has ``created`` fixed from
   SOURCE_DATE_EPOCH (default: the last commit's time), then ``docker load``.

The image Id is the sha256 of that config, so equal inputs give an equal Id.
Everything is cached by an input digest: a rebuild with unchanged inputs is a no-op. The debootstrap tarball
enters it by what it holds (:func:`tarball_content_sha256`), not by its bytes: another download of the same
packages (another machine: other member times, gzip header, log) gives the same digest, label and Id.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.canonical import file_sha256
from dynadesk.errors import ImageBuildError
from dynadesk.evaluator.schema import SCHEMA_VERSION, evaluator_version
from dynadesk.orchestration.image_archive import IMAGE_ENV, image_config, save_archive
from dynadesk.orchestration.image_rootfs import (
    INCLUDE,
    RECIPE_VERSION,
    STRIP,
    SUITE,
    TOP_REQUIREMENTS,
    RootfsInputs,
    StepFn,
    _unmount_below,
    build_rootfs,
    debian_mirror,
    debootstrap_tarball,
    evaluator_wheel,
    host_pins,
    layer_tar,
    tarball_content_sha256,
    wheelhouse,
)

if TYPE_CHECKING:
    from dynadesk.orchestration.daemon import DockerClient

__all__ = ["IMAGE_ENV", "INCLUDE", "RECIPE_VERSION", "REPOSITORY", "STRIP", "SUITE", "TOP_REQUIREMENTS", "ImageRecord",
           "RootfsInputs", "StepFn", "_unmount_below", "build_image", "build_inputs", "build_rootfs", "built_before",
           "debian_mirror", "debootstrap_tarball", "evaluator_wheel", "host_pins", "image_config", "image_tag",
           "layer_tar", "list_records", "load_record", "save_archive", "source_date_epoch", "wheelhouse"]

REPOSITORY = "dynadesk-evaluator"


def image_tag(version: str | None = None) -> str:
    """The tag the DockerRunner uses: one per evaluator code version, so host and image agree."""
    v = (version or evaluator_version()).split(":")[-1]
    return f"{REPOSITORY}:{v[:12]}"


@dataclass
class ImageRecord:
    """What was built, as recorded next to the archive (and shown by ``dynadesk image show``)."""

    tag: str
    image_id: str
    layer_digest: str
    input_digest: str
    evaluator_version: str
    schema_version: int
    source_date_epoch: int
    created: str
    archive: str
    archive_sha256: str
    size_bytes: int
    debootstrap_tarball: str
    debootstrap_sha256: str
    mirror: str
    suite: str
    dpkg: list[str] = field(default_factory=list)
    python_packages: list[str] = field(default_factory=list)
    wheels: dict[str, str] = field(default_factory=dict)
    build_seconds: float = 0.0
    reproducible: bool = True
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# ---------------------------------------------------------------------- inputs

# What goes into the image from this checkout: the evaluator wheel's files. Its pins are the
# host's installed versions (an input of their own), recipe changes bump RECIPE_VERSION.
EPOCH_PATHS = ("evaluator", "dynadesk/__init__.py")


def source_date_epoch(explicit: int | None = None) -> int:
    """SOURCE_DATE_EPOCH: explicit, else the environment, else the time of the last commit that
    changed what the image holds (:data:`EPOCH_PATHS`), so unrelated commits keep the same image Id."""
    if explicit is not None:
        return int(explicit)
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return int(os.environ["SOURCE_DATE_EPOCH"])
    repo = Path(__file__).resolve().parents[2]
    for paths in (list(EPOCH_PATHS), []):  # a checkout without those paths tracked: the last commit
        try:
            out = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%ct", "--", *paths],
                                 capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                return int(out.stdout.strip())
        except (OSError, ValueError, subprocess.TimeoutExpired):
            break
    raise ImageBuildError("cannot find SOURCE_DATE_EPOCH: set it (seconds since 1970) or build from a git checkout")



# ---------------------------------------------------------------------- build

def _record_path(cache: Path, input_digest: str) -> Path:
    return cache / "images" / f"{input_digest.split(':')[-1][:16]}.json"


def load_record(path: Path) -> ImageRecord:
    return ImageRecord(**json.loads(Path(path).read_text(encoding="utf-8")))


def list_records(cache: Path) -> list[ImageRecord]:
    """Every image built in this cache folder, newest first."""
    records = []
    for p in sorted((Path(cache) / "images").glob("*.json")):
        try:
            records.append(load_record(p))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(records, key=lambda r: r.created, reverse=True)


def built_before(cache: Path) -> bool:
    """Whether ``cache`` keeps an image of this evaluator version (its archive): :func:`build_image` then most likely
    reuses it rather than builds (the exact answer needs the build's inputs, whose wheelhouse step may download).
    The demo asks it before the zoo trains, beside a build or not."""
    version = evaluator_version()
    return any(r.evaluator_version == version and Path(r.archive).is_file() for r in list_records(cache))


def build_inputs(cache: Path, image_id: str | None) -> dict[str, Any] | None:
    """``{"source_date_epoch", "input_digest"}`` of the image built in ``cache`` with this Id, or None.

    A run on the Docker runner records them (settings ``image_build``) and its bundle signs them, so an
    auditor can rebuild the recorded Id with ``dynadesk image build --epoch N``: the epoch is baked into
    the image config, so the Id depends on it as much as on the inputs.
    """
    if not image_id:
        return None
    for record in list_records(cache):
        if record.image_id == image_id:
            return {"source_date_epoch": int(record.source_date_epoch), "input_digest": record.input_digest}
    return None


def build_image(cache: Path, *, epoch: int | None = None, force: bool = False, compile_bytecode: bool = True,
                tarball: Path | None = None, client: DockerClient | None = None,
                step: StepFn | None = None) -> ImageRecord:
    """Build (or reuse) the evaluator image for this checkout and load it into Docker.

    Needs root (debootstrap, chroot, bind mounts) and a Docker daemon. ``cache`` keeps
    the wheelhouse, the debootstrap tarball, archives and records; ``force`` rebuilds
    even when the inputs are unchanged.
    """
    step = step or (lambda s: None)
    if os.geteuid() != 0:
        raise ImageBuildError("building the evaluator image needs root (debootstrap, chroot and bind mounts); "
                              "run 'sudo dynadesk image build'")
    for tool in ("debootstrap", "chroot", "tar", "mount"):
        if shutil.which(tool) is None:
            raise ImageBuildError(f"'{tool}' is not installed (apt-get install debootstrap)")
    from dynadesk.orchestration.daemon import docker_client

    client = client or docker_client()
    cache = Path(cache).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    with _exclusive(cache / ".build.lock", step):
        return _build(cache, client, epoch, force, compile_bytecode, tarball, step)


@contextmanager
def _exclusive(path: Path, step: StepFn) -> Iterator[None]:
    """One build per cache folder at a time; a second builder waits, then finds the result cached."""
    import fcntl

    with open(path, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            step("waiting for another build in this folder")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _build(cache: Path, client: DockerClient, epoch: int | None, force: bool, compile_bytecode: bool,
           tarball: Path | None, step: StepFn) -> ImageRecord:
    started = time.monotonic()
    (cache / "images").mkdir(exist_ok=True)
    log = cache / "build.log"
    log.write_text("")
    epoch = source_date_epoch(epoch)
    mirror = debian_mirror()
    version = evaluator_version()
    tag = image_tag(version)
    pins = host_pins()
    step("wheelhouse")
    wheels = wheelhouse(cache, pins, log)
    wheel = evaluator_wheel(cache / "evaluator-wheel", pins)
    step("debootstrap tarball")
    tgz = debootstrap_tarball(cache, mirror, log, tarball)
    wheel_shas = {p.name: file_sha256(p) for p in sorted(wheels.glob("*.whl"))}
    inputs = {"recipe": RECIPE_VERSION, "suite": SUITE, "include": INCLUDE, "mirror": mirror, "epoch": epoch,
              "debootstrap_content_sha256": tarball_content_sha256(tgz), "wheels": wheel_shas,
              "evaluator_wheel": file_sha256(wheel), "compile": compile_bytecode}
    input_digest = "sha256:" + hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    record_path = _record_path(cache, input_digest)
    if record_path.exists() and not force:
        record = load_record(record_path)
        if _has_image(client, record.image_id):
            _tag(client, record.image_id, tag)
            record.cached = True
            return record
        if Path(record.archive).is_file():  # e.g. a fresh Docker: load the kept archive again
            step("docker load")
            _load(client, Path(record.archive), record.image_id, tag)
            record.cached = True
            return record

    work = cache / "build"
    work.mkdir(exist_ok=True)
    rootfs = work / "rootfs"
    dpkg, pip_list = build_rootfs(rootfs, RootfsInputs(tgz, mirror, wheels, wheel), compile_bytecode, epoch,
                                  log, step)
    step("layer tar")
    layer = work / "layer.tar"
    layer_tar(rootfs, layer, epoch, log)
    shutil.rmtree(rootfs)
    layer_hex = file_sha256(layer)
    labels = {"org.dynadesk.evaluator-version": version, "org.dynadesk.schema-version": str(SCHEMA_VERSION),
              "org.dynadesk.input-digest": input_digest, "org.dynadesk.recipe": str(RECIPE_VERSION)}
    config = image_config("sha256:" + layer_hex, epoch, labels)
    step("docker archive")
    archive = cache / "images" / f"{REPOSITORY}-{input_digest.split(':')[-1][:16]}.tar"
    image_id = save_archive(archive, layer, layer_hex, config, tag, epoch)
    layer.unlink()
    step("docker load")
    _load(client, archive, image_id, tag)
    record = ImageRecord(
        tag=tag, image_id=image_id, layer_digest="sha256:" + layer_hex, input_digest=input_digest,
        evaluator_version=version, schema_version=SCHEMA_VERSION, source_date_epoch=epoch,
        created=datetime.fromtimestamp(epoch, UTC).isoformat(), archive=str(archive),
        archive_sha256=file_sha256(archive), size_bytes=archive.stat().st_size, debootstrap_tarball=str(tgz),
        debootstrap_sha256=file_sha256(tgz), mirror=mirror, suite=SUITE, dpkg=dpkg,
        python_packages=pip_list, wheels=wheel_shas, build_seconds=round(time.monotonic() - started, 1))
    tmp = record_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record.to_dict(), indent=2, sort_keys=True))
    os.replace(tmp, record_path)
    prune_archives(archive.parent, keep=KEEP_ARCHIVES)
    return record


# image archives kept in the cache (the newest by time): each is ~1.3 GB and one is written per evaluator version,
# so a developer's cache filled a 250 GB disk in a day; an older version's record stays and rebuilds when asked
KEEP_ARCHIVES = 3


def prune_archives(folder: Path, keep: int = KEEP_ARCHIVES) -> list[Path]:
    """Delete all but the ``keep`` newest ``*.tar`` archives in ``folder``; the deleted paths."""
    archives = sorted(folder.glob(f"{REPOSITORY}-*.tar"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    gone = []
    for old in archives[keep:]:
        old.unlink(missing_ok=True)
        gone.append(old)
    return gone


def _has_image(client: DockerClient, image_id: str) -> bool:
    import docker

    try:
        return bool(client.images.get(image_id).id == image_id)
    except docker.errors.ImageNotFound:
        return False


def _tag(client: DockerClient, image_id: str, tag: str) -> None:
    repo, _, name = tag.partition(":")
    client.images.get(image_id).tag(repo, name)


def _load(client: DockerClient, archive: Path, image_id: str, tag: str) -> None:
    import docker

    try:
        with open(archive, "rb") as fh:
            client.images.load(fh)
    except docker.errors.DockerException as exc:
        raise ImageBuildError(f"docker load of {archive} failed: {exc}") from exc
    if not _has_image(client, image_id):
        raise ImageBuildError(f"docker load of {archive} did not produce image {image_id}")
    _tag(client, image_id, tag)
