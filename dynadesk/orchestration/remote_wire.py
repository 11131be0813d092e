"""The remote runner's wire: framed JSON messages and folder archives over one stream socket.

Both ends (:mod:`.remote_runner` on the host, :mod:`.remote_agent` on the other machine) speak it. A frame is
one type byte, a 4-byte big-endian length and that many bytes: ``J`` a JSON object, ``B`` a chunk of a tar
archive, ``E`` the archive's end. Folders travel as an uncompressed tar of regular files and folders only, and
are unpacked by :func:`unpack` under a byte cap with every member checked (no links, devices, absolute paths or
``..``): neither end trusts the other's archive to stay inside the folder it is unpacked into.
"""

from __future__ import annotations

import io
import json
import os
import socket
import struct
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import IO, cast

from dynadesk.errors import EvaluationError

__all__ = ["MAX_JSON", "WireError", "pack", "recv_archive", "recv_json", "send_archive", "send_json", "unpack"]

MAX_JSON = 32 << 20  # a message: the outcome carries the worker's log (1 MiB kept) and the observation
CHUNK = 1 << 20
_HEAD = struct.Struct(">cI")


class WireError(EvaluationError):
    """The other end broke the protocol, or the connection ended mid-message."""


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        got = sock.recv(min(n - len(buf), CHUNK))
        if not got:
            raise WireError("the connection closed in the middle of a message")
        buf += got
    return bytes(buf)


def _recv_frame(sock: socket.socket) -> tuple[bytes, bytes]:
    kind, size = _HEAD.unpack(_recv_exact(sock, _HEAD.size))
    if size > max(MAX_JSON, CHUNK):
        raise WireError(f"a {size}-byte frame is past the {max(MAX_JSON, CHUNK)}-byte limit")
    return kind, _recv_exact(sock, size)


def send_json(sock: socket.socket, message: dict[str, object]) -> None:
    data = json.dumps(message, ensure_ascii=False).encode("utf-8")
    if len(data) > MAX_JSON:
        raise WireError(f"a {len(data)}-byte message is past the {MAX_JSON}-byte limit")
    sock.sendall(_HEAD.pack(b"J", len(data)) + data)


def recv_json(sock: socket.socket) -> dict[str, object]:
    """The next message, which must be a JSON object."""
    kind, data = _recv_frame(sock)
    if kind != b"J":
        raise WireError(f"expected a message, got a frame of type {kind!r}")
    try:
        message = json.loads(data)
    except ValueError as exc:
        raise WireError(f"a message is not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise WireError(f"a message must be a JSON object, got {type(message).__name__}")
    return message


def pack(folders: Iterable[tuple[str, Path]], out: IO[bytes]) -> None:
    """An uncompressed tar of each ``(name, folder)``'s regular files and folders under ``name/``; links and
    other special files are left out (a run folder never holds one: :meth:`RunFolder.strays`)."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, folder in folders:
            tar.add(str(folder), arcname=name, recursive=False)
            for root, dirs, files in os.walk(folder):
                dirs.sort()
                for entry in sorted(dirs) + sorted(files):
                    path = Path(root) / entry
                    if path.is_symlink() or not (path.is_file() or path.is_dir()):
                        continue
                    tar.add(str(path), arcname=f"{name}/{path.relative_to(folder).as_posix()}", recursive=False)


def send_archive(sock: socket.socket, folders: Iterable[tuple[str, Path]]) -> None:
    """:func:`pack` the folders (through a temporary file: a model may be large) and send them as ``B`` frames."""
    with tempfile.TemporaryFile() as spool:
        pack(folders, cast(IO[bytes], spool))
        spool.seek(0)
        while chunk := spool.read(CHUNK):
            sock.sendall(_HEAD.pack(b"B", len(chunk)) + chunk)
    sock.sendall(_HEAD.pack(b"E", 0))


def recv_archive(sock: socket.socket, into: Path, names: set[str], limit: int) -> None:
    """Receive an archive and :func:`unpack` it into ``into``."""
    with tempfile.TemporaryFile() as spool:
        total = 0
        while True:
            kind, data = _recv_frame(sock)
            if kind == b"E":
                break
            if kind != b"B":
                raise WireError(f"expected an archive chunk, got a frame of type {kind!r}")
            total += len(data)
            if total > limit:
                raise WireError(f"the archive is past its {limit}-byte limit")
            spool.write(data)
        spool.seek(0)
        unpack(cast(IO[bytes], spool), into, names, limit)


def unpack(archive: IO[bytes], into: Path, names: set[str], limit: int) -> None:
    """Unpack a :func:`pack` archive into ``into``: only members under the top-level ``names``, only regular
    files and folders, relative paths without ``..``, at most ``limit`` bytes; anything else is a
    :class:`WireError` naming the member, and nothing is written."""
    try:
        with tarfile.open(fileobj=archive, mode="r:") as tar:
            members = tar.getmembers()
            size = 0
            for m in members:
                parts = PurePosixPath(m.name).parts
                if PurePosixPath(m.name).is_absolute() or ".." in parts or not parts or parts[0] not in names:
                    raise WireError(f"archive member {m.name!r} is outside the folders {sorted(names)}")
                if not (m.isfile() or m.isdir()):
                    raise WireError(f"archive member {m.name!r} is not a regular file or folder (a link or device)")
                size += m.size
            if size > limit:
                raise WireError(f"the archive unpacks to {size} bytes, past its {limit}-byte limit")
            for m in members:
                target = into.joinpath(*PurePosixPath(m.name).parts)
                if m.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(m)
                assert source is not None  # a regular file
                with open(target, "xb") as fh:
                    while chunk := source.read(CHUNK):
                        fh.write(chunk)
                os.chmod(target, 0o644)
    except (tarfile.TarError, OSError) as exc:
        raise WireError(f"cannot unpack the archive into {into}: {exc}") from None


def archive_bytes(folders: Iterable[tuple[str, Path]]) -> bytes:
    """:func:`pack` into memory (small folders: tests, the out folder of a tiny run)."""
    buf = io.BytesIO()
    pack(folders, buf)
    return buf.getvalue()
