"""Files travel by content digest through the broker: put once under their sha256, fetched, verified, cached.

The coordinator puts every model file and dataset of a job (and a worker every result file)
into Redis as ``dynadesk:blob:<sha256>`` in 8 MiB chunks; a worker fetches only the blobs
missing from its cache folder, checks each one's sha256 before using it, and rebuilds the
model folder from its file list, whose :func:`~dynadesk.models.registry.tree_digest` must
equal the registered digest. It needs nothing but the broker (works offline, one port).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from dynadesk.canonical import file_sha256
from dynadesk.errors import TransferError
from dynadesk.queue.broker import RedisClient, key

CHUNK = 8 << 20
BLOB_TTL_S = 14 * 86400  # blobs outlive any job that names them; an unused one expires by itself


def put_file(client: RedisClient, path: Path) -> str:
    """Store ``path`` as a blob (skipped when the broker already has it); returns its sha256 hex."""
    hexd = file_sha256(path)
    meta = key("blob", hexd)
    if client.exists(meta):
        client.expire(meta, BLOB_TTL_S)
        return hexd
    size = path.stat().st_size
    chunks = 0
    with open(path, "rb") as fh:
        for i, block in enumerate(iter(lambda: fh.read(CHUNK), b"")):
            client.set(key("blob", hexd, str(i)), block, ex=BLOB_TTL_S)
            chunks = i + 1
    client.hset(meta, mapping={"size": size, "chunks": chunks})
    client.expire(meta, BLOB_TTL_S)
    return hexd


def put_tree(client: RedisClient, files: list[tuple[str, Path]]) -> list[list[str]]:
    """Store each (relative path, file) and return the ``[[path, sha256], ...]`` list a job carries."""
    return [[rel, put_file(client, path)] for rel, path in files]


class BlobCache:
    """A worker's cache folder: ``blobs/<sha256>`` (verified files) and ``models/<digest>/`` (rebuilt folders)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        (self.root / "blobs").mkdir(parents=True, exist_ok=True)
        (self.root / "models").mkdir(parents=True, exist_ok=True)

    def blob(self, client: RedisClient, hexd: str) -> Path:
        """The cached blob ``hexd``, fetched from the broker and verified when not cached yet."""
        if len(hexd) != 64 or any(c not in "0123456789abcdef" for c in hexd):
            raise TransferError(f"'{hexd}' is not a sha256 digest")
        target = self.root / "blobs" / hexd
        if target.is_file() and not target.is_symlink():
            return target
        meta = client.hgetall(key("blob", hexd))
        if not meta:
            raise TransferError(f"blob sha256:{hexd[:12]}... is not on the broker (expired, or the coordinator "
                                "never put it); enqueue the job again")
        chunks = int(meta[b"chunks"])
        h = hashlib.sha256()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as fh:
                for i in range(chunks):
                    block = client.get(key("blob", hexd, str(i)))
                    if block is None:
                        raise TransferError(f"blob sha256:{hexd[:12]}... lacks chunk {i} on the broker")
                    h.update(block)
                    fh.write(block)
            if h.hexdigest() != hexd:
                raise TransferError(f"blob sha256:{hexd[:12]}... fetched from the broker has digest "
                                    f"{h.hexdigest()[:12]}...: corrupted in transit or on the broker")
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return target

    def model(self, client: RedisClient, files: list[list[str]], digest: str) -> Path:
        """The model folder with these files, rebuilt in the cache; its tree digest must be ``digest``."""
        from dynadesk.errors import ModelError
        from dynadesk.models.registry import tree_digest
        from dynadesk.sync.format.schema import DIGEST

        if not DIGEST.match(digest):
            raise TransferError(f"model digest {digest[:80]!r} is not sha256:<64 hex digits>")
        folder = self.root / "models" / digest.removeprefix("sha256:")
        if folder.is_dir() and not folder.is_symlink():
            try:  # re-verified before every use: a cached folder is not trusted because it is here
                if tree_digest(folder) == digest:
                    return folder
            except ModelError:
                pass
            shutil.rmtree(folder)
        elif folder.is_symlink() or folder.exists():
            folder.unlink()
        stage = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".part-"))
        try:
            for rel, hexd in files:
                dest = (stage / rel).resolve()
                if stage.resolve() not in dest.parents:
                    raise TransferError(f"model file path '{rel}' leaves the model folder")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(self.blob(client, hexd), dest)
                os.chmod(dest, 0o644)
            for sub, _dirs, _files in os.walk(stage):
                os.chmod(sub, 0o755)
            try:
                got = tree_digest(stage)
            except ModelError as exc:
                raise TransferError(f"the fetched model folder is unusable: {exc}") from None
            if got != digest:
                raise TransferError(f"the fetched model folder has digest {got[:19]}..., the job names "
                                    f"{digest[:19]}...")
            os.replace(stage, folder)
        finally:
            if stage.exists():
                shutil.rmtree(stage)
        return folder
