"""Step 5 of the evaluator image's recipe: a hand-written ``docker save`` archive whose config's ``created`` is
fixed from SOURCE_DATE_EPOCH, so equal inputs give an equal image Id (the config's sha256)."""


from __future__ import annotations

import hashlib
import io
import json
import platform
import tarfile
from datetime import UTC, datetime
from pathlib import Path

from dynadesk.orchestration.image_rootfs import CHROOT_PATH, RECIPE_VERSION, SUITE

IMAGE_ENV = [f"PATH={CHROOT_PATH}", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "HF_HUB_OFFLINE=1",
             "TRANSFORMERS_OFFLINE=1", "HOME=/tmp"]


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


