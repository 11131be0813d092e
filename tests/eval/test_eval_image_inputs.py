"""The debootstrap tarball enters the image's input digest by what it holds, not by its bytes: two downloads of the
same Debian packages differ in member times, owners, gzip header and debootstrap's log, and before this the input
digest (a label of the image, so part of its Id) differed with them. Four first runs of the demo on this machine
built four image Ids from one layer digest; an auditor's rebuild could never give a recorded Id.

The slow proof on real parts is ``test_eval_docker.py::test_image_rebuild_gives_the_same_image_id`` (a forced
rebuild from a rewritten tarball gives the recorded Id); these show the digest's rule on small tarballs."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from dynadesk.errors import ImageBuildError
from dynadesk.orchestration.image_rootfs import TARBALL_LOG, tarball_content_sha256


def _tarball(path: Path, files: dict[str, bytes], mtime: int, owner: str = "root", gzip_time: int = 0) -> Path:
    with gzip.GzipFile(path, "wb", mtime=gzip_time) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        folder = tarfile.TarInfo("var/cache/apt/archives")
        folder.type, folder.mtime = tarfile.DIRTYPE, mtime
        tar.addfile(folder)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.uname = len(data), mtime, owner
            tar.addfile(info, io.BytesIO(data))
    return path


DEBS = {"var/cache/apt/archives/python3_3.11.2-1+b1_amd64.deb": b"deb one",
        "var/cache/apt/archives/libc6_2.36-9_amd64.deb": b"deb two",
        "debootstrap/required": b"libc6 python3\n"}


def test_two_downloads_of_the_same_packages_have_one_content_digest(tmp_path):
    here = _tarball(tmp_path / "here.tgz", {**DEBS, TARBALL_LOG: b"I: Retrieving at 10:00\n"}, mtime=1_700_000_000)
    there = _tarball(tmp_path / "there.tgz", {**dict(reversed(DEBS.items())), TARBALL_LOG: b"I: at 23:59\n"},
                     mtime=1_800_000_000, owner="auditor", gzip_time=12345)
    assert here.read_bytes() != there.read_bytes()
    assert tarball_content_sha256(here) == tarball_content_sha256(there)


@pytest.mark.parametrize("change", ["a package's bytes", "a package's name", "a package more", "a package less",
                                    "a symlink more", "a file's mode"])
def test_any_change_to_what_is_unpacked_changes_the_digest(tmp_path, change):
    """A build is looked up in the cache by this digest: a tarball that unpacks to anything else must not find
    another tarball's image (a hand-made ``--tarball`` with one link or one setuid bit more, too)."""
    base = tarball_content_sha256(_tarball(tmp_path / "base.tgz", DEBS, mtime=1))
    other = dict(DEBS)
    first = next(iter(DEBS))
    if change == "a package's bytes":
        other[first] = b"deb one, rebuilt"
    elif change == "a package's name":
        other[first.replace("3.11.2-1+b1", "3.11.2-1+b2")] = other.pop(first)
    elif change == "a package more":
        other["var/cache/apt/archives/zlib1g_1.2.13_amd64.deb"] = b"deb three"
    elif change == "a package less":
        other.pop(first)
    path = _tarball(tmp_path / "other.tgz", other, mtime=1)
    if change in ("a symlink more", "a file's mode"):
        with tarfile.open(path, "r:gz") as src:
            members = [(m, src.extractfile(m).read() if m.isfile() else None) for m in src]
        with gzip.GzipFile(path, "wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
            for member, data in members:
                if change == "a file's mode" and member.name == first:
                    member.mode = 0o4755
                tar.addfile(member, io.BytesIO(data) if data is not None else None)
            if change == "a symlink more":
                link = tarfile.TarInfo("etc/ld.so.preload")
                link.type, link.linkname = tarfile.SYMTYPE, "/tmp/evil.so"
                tar.addfile(link)
    assert tarball_content_sha256(path) != base


def test_a_broken_tarball_is_one_clear_error_naming_it_and_the_next_step(tmp_path):
    broken = tmp_path / "debootstrap-bookworm.tgz"
    broken.write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(ImageBuildError) as err:
        tarball_content_sha256(broken)
    message = str(err.value)
    assert str(broken) in message and "--tarball" in message and "\n" not in message
