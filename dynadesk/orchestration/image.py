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
Everything is cached by an input digest: a rebuild with unchanged inputs is a no-op.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.canonical import file_sha256
from dynadesk.errors import ImageBuildError
from dynadesk.evaluator.schema import SCHEMA_VERSION, evaluator_version

if TYPE_CHECKING:
    from dynadesk.orchestration.daemon import DockerClient

RECIPE_VERSION = 2
REPOSITORY = "dynadesk-evaluator"
SUITE = "bookworm"
INCLUDE = ("python3", "python3-venv")
TOP_REQUIREMENTS = ("torch", "transformers", "psutil", "nvidia-ml-py", "safetensors", "numpy")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
CHROOT_PATH = "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
IMAGE_ENV = [f"PATH={CHROOT_PATH}", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "HF_HUB_OFFLINE=1",
             "TRANSFORMERS_OFFLINE=1", "HOME=/tmp"]
STRIP = ("var/lib/apt/lists", "var/cache/apt", "var/cache/debconf/config.dat-old",
         "var/cache/debconf/templates.dat-old", "var/cache/ldconfig/aux-cache", "var/log", "var/tmp", "tmp", "root",
         "etc/machine-id", "var/lib/dbus/machine-id", "var/lib/dpkg/status-old", "var/lib/dpkg/available-old",
         "var/lib/dpkg/diversions-old", "etc/passwd-", "etc/group-", "etc/shadow-", "etc/gshadow-",
         "usr/share/doc", "usr/share/man", "usr/share/info", "wheelhouse")

StepFn = Callable[[str], None]


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


def debian_mirror() -> str:
    """The first Debian mirror configured for apt on this host (the only Debian we can reach)."""
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            text = path.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
            if line.startswith("deb ") and "security" not in line:
                parts = [p for p in line.split() if not p.startswith("[")]
                return parts[1]
    return DEFAULT_MIRROR


def host_pins() -> dict[str, str]:
    """name -> version of every distribution in this Python (constraints for the wheelhouse)."""
    from importlib.metadata import distributions

    pins = {}
    for dist in distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name and name not in ("dynadesk", "pip", "setuptools", "wheel"):
            pins[name] = dist.version
    missing = [r for r in TOP_REQUIREMENTS if r not in pins]
    if missing:
        raise ImageBuildError(f"the host Python lacks {', '.join(missing)}; install the evaluator extra first")
    return pins


def _run(cmd: list[str], log: Path, what: str, env: dict[str, str] | None = None, timeout: float = 1800,
         check: bool = True) -> str:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                  timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ImageBuildError(f"{what} failed: {exc} (log: {log})") from exc
        fh.write(proc.stdout)
    if proc.returncode != 0 and check:
        tail = "\n".join(proc.stdout.rstrip().splitlines()[-15:])
        raise ImageBuildError(f"{what} failed with exit code {proc.returncode} (log: {log}):\n{tail}")
    return proc.stdout




def wheelhouse(cache: Path, pins: dict[str, str], log: Path) -> Path:
    """Download the pinned worker dependencies once (host pip; TLS works here, not in containers)."""
    key = hashlib.sha256(json.dumps([[r, pins[r]] for r in TOP_REQUIREMENTS]).encode()).hexdigest()[:16]
    target = cache / f"wheelhouse-{key}"
    done = target / ".complete"
    if done.exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    constraints = target / "constraints.txt"
    constraints.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())))
    _run([sys.executable, "-m", "pip", "download", "--only-binary", ":all:", "--no-cache-dir", "-d", str(target),
          "-c", str(constraints), *(f"{r}=={pins[r]}" for r in TOP_REQUIREMENTS)], log, "pip download")
    constraints.unlink()
    done.write_text("ok\n")
    return target


def evaluator_wheel(target_dir: Path, pins: dict[str, str]) -> Path:
    """A deterministic wheel holding only ``dynadesk/__init__.py`` and ``dynadesk/evaluator``."""
    import dynadesk
    import dynadesk.evaluator as ev

    version = dynadesk.__version__
    files: dict[str, bytes] = {"dynadesk/__init__.py": Path(dynadesk.__file__).read_bytes()}
    root = Path(ev.__file__).resolve().parent
    for p in sorted(root.rglob("*.py")):
        if "__pycache__" not in p.parts:
            files[f"dynadesk/evaluator/{p.relative_to(root).as_posix()}"] = p.read_bytes()
    dist = f"dynadesk_evaluator-{version}"
    requires = "".join(f"Requires-Dist: {r}=={pins[r]}\n" for r in TOP_REQUIREMENTS)
    files[f"{dist}.dist-info/METADATA"] = (f"Metadata-Version: 2.1\nName: dynadesk-evaluator\nVersion: {version}\n"
                                           f"Summary: DynaDesk evaluation worker\n{requires}").encode()
    files[f"{dist}.dist-info/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: dynadesk\nRoot-Is-Purelib: true\n"
                                        b"Tag: py3-none-any\n")
    record = "".join(f"{name},sha256={_b64(hashlib.sha256(data).digest())},{len(data)}\n"
                     for name, data in sorted(files.items()))
    files[f"{dist}.dist-info/RECORD"] = (record + f"{dist}.dist-info/RECORD,,\n").encode()
    target_dir.mkdir(parents=True, exist_ok=True)
    path = target_dir / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name])
    return path


def _b64(raw: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def debootstrap_tarball(cache: Path, mirror: str, log: Path, tarball: Path | None = None) -> Path:
    """The .deb set debootstrap installs, kept so a later rebuild can be pinned to it."""
    if tarball is not None:
        if not Path(tarball).is_file():
            raise ImageBuildError(f"debootstrap tarball {tarball} does not exist")
        return Path(tarball)
    target = cache / f"debootstrap-{SUITE}-minbase-{'-'.join(INCLUDE)}.tgz"
    if target.is_file():
        return target
    work = cache / "debootstrap-work"
    shutil.rmtree(work, ignore_errors=True)
    _run(["debootstrap", "--variant=minbase", f"--include={','.join(INCLUDE)}", f"--make-tarball={target}.part",
          SUITE, str(work), mirror], log, "debootstrap --make-tarball")
    os.replace(f"{target}.part", target)
    shutil.rmtree(work, ignore_errors=True)
    return target


# ---------------------------------------------------------------------- rootfs

@contextmanager
def _bind_ro(source: Path, target: Path) -> Iterator[None]:
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(source), str(target)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], check=True)
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def _chroot(rootfs: Path, cmd: list[str], log: Path, what: str, epoch: int, check: bool = True) -> str:
    """A command in the chroot with a clean environment (no host PIP_* settings leak in)."""
    env = {"PATH": CHROOT_PATH, "LANG": "C.UTF-8", "HOME": "/root", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PIP_NO_CACHE_DIR": "1", "PYTHONDONTWRITEBYTECODE": "1", "SOURCE_DATE_EPOCH": str(epoch)}
    return _run(["chroot", str(rootfs), *cmd], log, what, env=env, check=check)


def _unmount_below(root: Path) -> None:
    """Lazily unmount what an interrupted build left mounted inside the rootfs (debootstrap's /proc, the wheelhouse
    bind), deepest first: rmtree cannot remove a mount point, so one killed build would fail every later one."""
    prefix = str(root.resolve()) + "/"
    with open("/proc/self/mounts", encoding="utf-8") as fh:
        points = [line.split()[1].replace("\\040", " ") for line in fh if len(line.split()) > 1]
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)


def build_rootfs(rootfs: Path, tarball: Path, mirror: str, wheels: Path, wheel: Path, compile_bytecode: bool,
                 epoch: int, log: Path, step: StepFn) -> tuple[list[str], list[str]]:
    """Debootstrap from the kept tarball, install the worker, strip; returns (dpkg list, pip list)."""
    if rootfs.exists():
        _unmount_below(rootfs)
        shutil.rmtree(rootfs)
    step("debootstrap")
    _run(["debootstrap", "--variant=minbase", f"--include={','.join(INCLUDE)}", f"--unpack-tarball={tarball}",
          SUITE, str(rootfs), mirror], log, "debootstrap")
    step("venv")
    _chroot(rootfs, ["python3", "-m", "venv", "/opt/venv"], log, "python3 -m venv", epoch)
    step("pip install")
    shutil.copy2(wheel, wheels / wheel.name)
    try:
        with _bind_ro(wheels, rootfs / "wheelhouse"):
            _chroot(rootfs, ["/opt/venv/bin/pip", "install", "--no-index", "--find-links", "/wheelhouse",
                             "--no-compile", "dynadesk-evaluator"], log, "pip install (in the chroot)", epoch)
    finally:
        (wheels / wheel.name).unlink(missing_ok=True)
    # Debian's py3compile ran during debootstrap in several processes, and marshal output depends on
    # each interpreter's state: those .pyc files differ from build to build. Drop every .pyc and
    # recompile in one process (-j 1), hash-based, which is byte-for-byte repeatable.
    for tree in ("opt/venv", "usr/lib/python3.11", "usr/lib/python3/dist-packages"):
        for cache_dir in list((rootfs / tree).rglob("__pycache__")):
            shutil.rmtree(cache_dir, ignore_errors=True)
    if compile_bytecode:
        step("compileall")
        compile_cmd = ["/opt/venv/bin/python", "-m", "compileall", "-q", "-j", "1", "--invalidation-mode",
                       "unchecked-hash", "-x", r"py31[2-9]_|lib2to3/tests/data|/test/bad"]
        # Debian's own Python files: a file that does not compile (test data) is skipped, the same every build.
        _chroot(rootfs, compile_cmd + ["/usr/lib/python3.11", "/usr/lib/python3/dist-packages"], log,
                "compileall (system Python)", epoch, check=False)
        _chroot(rootfs, compile_cmd + ["/opt/venv/lib"], log, "compileall", epoch)
    _chroot(rootfs, ["/opt/venv/bin/python", "-m", "dynadesk.evaluator", "version"], log, "worker smoke test", epoch)
    dpkg = _chroot(rootfs, ["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${Architecture}\n"], log,
                   "dpkg-query", epoch).splitlines()
    pip_list = _chroot(rootfs, ["/opt/venv/bin/python", "-m", "pip", "list", "--format=freeze"], log,
                       "pip list", epoch).splitlines()
    step("strip")
    for rel in STRIP:
        p = rootfs / rel
        if p.is_dir() and not p.is_symlink():
            for child in p.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            if rel == "wheelhouse":
                p.rmdir()
        elif p.exists() or p.is_symlink():
            p.unlink()
    for name in ("etc/resolv.conf", "etc/hostname"):  # docker bind-mounts its own; the host's must not leak in
        (rootfs / name).unlink(missing_ok=True)
        (rootfs / name).write_text("")
    _normalise_shadow(rootfs / "etc/shadow", epoch)
    return dpkg, pip_list


def _normalise_shadow(path: Path, epoch: int) -> None:
    """/etc/shadow records the build day (field 3); pin it to SOURCE_DATE_EPOCH's day."""
    if not path.exists():
        return
    day = str(epoch // 86400)
    lines = []
    for line in path.read_text().splitlines():
        parts = line.split(":")
        if len(parts) > 2 and parts[2]:
            parts[2] = day
        lines.append(":".join(parts))
    path.write_text("\n".join(lines) + "\n")


def layer_tar(rootfs: Path, target: Path, epoch: int, log: Path) -> None:
    _run(["tar", "--sort=name", f"--mtime=@{epoch}", "--clamp-mtime", "--owner=0", "--group=0", "--numeric-owner",
          "--format=posix", "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
          "--exclude=./proc/*", "--exclude=./sys/*", "--exclude=./dev/*", "-C", str(rootfs), "-cf", str(target), "."],
         log, "tar of the root filesystem")


# ---------------------------------------------------------------------- docker archive

def image_config(layer_digest: str, epoch: int, labels: dict[str, str]) -> bytes:
    created = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    config = {
        "architecture": "amd64" if platform.machine() in ("x86_64", "AMD64") else platform.machine(),
        "os": "linux",
        "created": created,
        "author": "dynadesk image build",
        "config": {"Env": IMAGE_ENV, "Cmd": ["python", "-m", "dynadesk.evaluator", "version"],
                   "WorkingDir": "/tmp", "User": "65534:65534", "Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        "history": [{"created": created, "created_by": "dynadesk image build: debootstrap --variant=minbase "
                                                      f"{SUITE} + /opt/venv (recipe {RECIPE_VERSION})"}],
    }
    return json.dumps(config, sort_keys=True, separators=(",", ":")).encode()


def save_archive(target: Path, layer: Path, layer_hex: str, config: bytes, tag: str, epoch: int) -> str:
    """Write a ``docker save``-format archive byte for byte the same for the same inputs."""
    config_hex = hashlib.sha256(config).hexdigest()
    manifest = json.dumps([{"Config": f"{config_hex}.json", "RepoTags": [tag], "Layers": [f"{layer_hex}/layer.tar"]}],
                          separators=(",", ":")).encode()

    def info(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> tarfile.TarInfo:
        ti = tarfile.TarInfo(name)
        ti.size, ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname, ti.type = size, epoch, 0, 0, "", "", kind
        ti.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
        return ti

    with tarfile.open(target, "w", format=tarfile.USTAR_FORMAT) as tf:
        tf.addfile(info(f"{config_hex}.json", len(config)), io.BytesIO(config))
        tf.addfile(info(f"{layer_hex}/", 0, tarfile.DIRTYPE))
        with open(layer, "rb") as fh:
            tf.addfile(info(f"{layer_hex}/layer.tar", layer.stat().st_size), fh)
        tf.addfile(info("manifest.json", len(manifest)), io.BytesIO(manifest))
    return "sha256:" + config_hex


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
              "debootstrap_sha256": file_sha256(tgz), "wheels": wheel_shas, "evaluator_wheel": file_sha256(wheel),
              "compile": compile_bytecode}
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
    dpkg, pip_list = build_rootfs(rootfs, tgz, mirror, wheels, wheel, compile_bytecode, epoch, log, step)
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
        debootstrap_sha256=str(inputs["debootstrap_sha256"]), mirror=mirror, suite=SUITE, dpkg=dpkg,
        python_packages=pip_list, wheels=wheel_shas, build_seconds=round(time.monotonic() - started, 1))
    tmp = record_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record.to_dict(), indent=2, sort_keys=True))
    os.replace(tmp, record_path)
    return record


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
