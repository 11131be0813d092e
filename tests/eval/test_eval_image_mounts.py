"""An image build killed mid-debootstrap leaves /proc mounted inside its rootfs; the next build must still start.

Seen on this machine: a build interrupted while debootstrap had /proc mounted made every later build fail in
``shutil.rmtree`` ("Operation not permitted: 'stat'"), so every Docker test errored until the mount was removed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from dynadesk.orchestration.image import _unmount_below


def _mounted(path: Path) -> bool:
    with open("/proc/self/mounts", encoding="utf-8") as fh:
        return any(line.split()[1] == str(path) for line in fh)


def test_a_rootfs_with_mounts_left_by_a_killed_build_can_be_removed(tmp_path: Path):
    rootfs = tmp_path / "rootfs"
    (rootfs / "proc").mkdir(parents=True)
    (rootfs / "wheelhouse" / "inner").mkdir(parents=True)
    subprocess.run(["mount", "-t", "proc", "proc", str(rootfs / "proc")], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(rootfs / "wheelhouse")], check=True)
    (rootfs / "wheelhouse" / "x.whl").write_bytes(b"x")
    try:
        assert _mounted(rootfs / "proc") and _mounted(rootfs / "wheelhouse")
        _unmount_below(rootfs)
        assert not _mounted(rootfs / "proc") and not _mounted(rootfs / "wheelhouse")
        shutil.rmtree(rootfs)  # what build_rootfs does next
        assert not rootfs.exists()
    finally:
        for point in (rootfs / "wheelhouse", rootfs / "proc"):
            if _mounted(point):
                subprocess.run(["umount", "-l", str(point)], check=False)
