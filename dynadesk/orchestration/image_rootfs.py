"""Steps 1-4 of the evaluator image's recipe (see :mod:`dynadesk.orchestration.image`): the host's wheelhouse and the
evaluator's own deterministic wheel, the kept debootstrap tarball, the chroot with the worker installed and every
.pyc recompiled repeatably, stripped; then its deterministic layer tar. No Docker here: only files and processes."""


from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dynadesk.errors import ImageBuildError

RECIPE_VERSION = 2  # bump when a step below changes what the same inputs build
SUITE = "bookworm"
INCLUDE = ("python3", "python3-venv")
# onnxruntime: ONNX models run in the sandbox like every other kind (issue 46: register -> Docker -> bundle -> audit);
# onnx: torch.onnx.export needs it to write the graph of the onnxruntime backend (evaluator/backends.py, issue 50)
TOP_REQUIREMENTS = ("torch", "transformers", "psutil", "nvidia-ml-py", "safetensors", "numpy", "onnxruntime", "onnx")
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



@dataclass(frozen=True)
class RootfsInputs:
    """What a root filesystem is built from: the debootstrap tarball and mirror, the wheelhouse, the evaluator's
    wheel (all pinned by the build's input digest)."""

    tarball: Path
    mirror: str
    wheels: Path
    wheel: Path


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


# debootstrap's own log in its tarball: timestamps of the download, nothing the image is built from
TARBALL_LOG = "debootstrap/debootstrap.log"


def tarball_content_sha256(tgz: Path) -> str:
    """What a debootstrap tarball holds, as one digest: each member's name, type, mode and link target and each
    regular file's sha256, in name order, its log left out. Not the tarball's own bytes: two downloads of the same
    package set (another machine, another cache) differ in their members' times and owners, the gzip header and the
    log, and the image built from either is the same layer; the input digest, and with it the image's label and Id,
    must then be the same too, or an auditor's rebuild at the recorded epoch never gives the recorded Id. Every
    member that could change what is unpacked stays in (a build is looked up in the cache by this digest)."""
    import tarfile

    members = []
    try:
        with tarfile.open(tgz, "r:gz") as tar:
            for member in tar:
                if member.name == TARBALL_LOG:
                    continue
                digest = ""
                if member.isfile():
                    stream = tar.extractfile(member)
                    assert stream is not None  # a regular file always has one
                    sha = hashlib.sha256()
                    while chunk := stream.read(1 << 20):
                        sha.update(chunk)
                    digest = sha.hexdigest()
                members.append((member.name, member.type.decode(), member.mode, member.linkname, digest))
    except (OSError, tarfile.TarError) as exc:
        raise ImageBuildError(f"debootstrap tarball {tgz} cannot be read ({exc}); delete it to download it "
                              "again, or pass another with --tarball") from exc
    return hashlib.sha256(json.dumps(sorted(members)).encode()).hexdigest()


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


def build_rootfs(rootfs: Path, inputs: RootfsInputs, compile_bytecode: bool, epoch: int, log: Path,
                 step: StepFn) -> tuple[list[str], list[str]]:
    """Debootstrap from the kept tarball, install the worker, strip; returns (dpkg list, pip list)."""
    tarball, mirror, wheels, wheel = inputs.tarball, inputs.mirror, inputs.wheels, inputs.wheel
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

