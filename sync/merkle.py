"""Merkle tree over per-example predictions (RFC 9162 / Certificate Transparency shape).

Each line of ``predictions.jsonl`` is one leaf: ``H(0x00 || JCS(record))``;
inner nodes are ``H(0x01 || left || right)``. The domain separation stops a
leaf from posing as an inner node. A bundle records only the root, so one
prediction can later be proven (record + audit path) without handing over the
test set or the other predictions. ``prove``/``verify_proof`` are the API the
audit commands build on.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynadesk.canonical import canonical_bytes
from dynadesk.errors import DigestMismatch, MerkleProofError

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def record_leaf(record: Any) -> bytes:
    """The leaf hash of one prediction record (its RFC 8785 bytes, so key order never matters)."""
    return leaf_hash(canonical_bytes(record))


def root(leaves: list[bytes]) -> bytes:
    """Root hash over leaf hashes; an unpaired node moves up unchanged (same tree as RFC 9162)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    level = list(leaves)
    while len(level) > 1:
        nxt = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def audit_path(leaves: list[bytes], index: int) -> list[bytes]:
    """Sibling hashes from leaf ``index`` up to the root."""
    if not 0 <= index < len(leaves):
        raise MerkleProofError(f"leaf index {index} is outside a tree of {len(leaves)} leaves")
    path, level, i = [], list(leaves), index
    while len(level) > 1:
        sib = i ^ 1
        if sib < len(level):
            path.append(level[sib])
        nxt = [node_hash(level[j], level[j + 1]) for j in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level, i = nxt, i >> 1
    return path


def verify_inclusion(leaf: bytes, index: int, size: int, path: list[bytes], expected_root: bytes) -> None:
    """RFC 9162 section 2.1.3.2; raises :class:`MerkleProofError`, never returns False."""
    if not 0 <= index < size:
        raise MerkleProofError(f"leaf index {index} is outside a tree of {size} leaves")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise MerkleProofError("the audit path is longer than the tree allows")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise MerkleProofError("the audit path is shorter than the tree needs")
    if r != expected_root:
        raise MerkleProofError("the audit path does not lead to the Merkle root")


@dataclass(frozen=True)
class PredictionsTree:
    root_hex: str
    count: int
    leaves: list[bytes]
    records: list[Any]


def read_predictions(path: str | Path) -> PredictionsTree:
    """Parse ``predictions.jsonl`` (one JSON value per non-empty line) into a tree."""
    records, leaves = [], []
    try:
        with open(path, "rb") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as exc:
                    raise DigestMismatch(f"{path}:{lineno}: not a JSON prediction record ({exc})") from exc
                records.append(rec)
                leaves.append(record_leaf(rec))
    except OSError as exc:
        raise DigestMismatch(f"cannot read predictions file {path}: {exc}") from exc
    return PredictionsTree(root(leaves).hex(), len(leaves), leaves, records)


@dataclass(frozen=True)
class InclusionProof:
    """One prediction plus the audit path that ties it to a bundle's ``merkle_root``."""

    record: Any
    index: int
    tree_size: int
    path: tuple[str, ...]
    root: str

    def to_dict(self) -> dict[str, Any]:
        return {"version": 1, "record": self.record, "index": self.index, "tree_size": self.tree_size,
                "path": list(self.path), "root": self.root}

    @classmethod
    def from_dict(cls, d: Any) -> InclusionProof:
        """Parse first: a malformed proof never becomes an object."""
        if not isinstance(d, dict) or set(d) != {"version", "record", "index", "tree_size", "path", "root"}:
            raise MerkleProofError("a proof must be an object with version, record, index, tree_size, path, root")
        if d["version"] != 1:
            raise MerkleProofError(f"unsupported proof version {d['version']!r}")
        for k in ("index", "tree_size"):
            if not isinstance(d[k], int) or isinstance(d[k], bool) or d[k] < 0:
                raise MerkleProofError(f"proof field '{k}' must be a non-negative integer")
        if not isinstance(d["path"], list) or not all(isinstance(p, str) and _HEX64.match(p) for p in d["path"]):
            raise MerkleProofError("proof field 'path' must be a list of 64-digit lowercase hex hashes")
        if not isinstance(d["root"], str) or not _HEX64.match(d["root"]):
            raise MerkleProofError("proof field 'root' must be a 64-digit lowercase hex hash")
        return cls(d["record"], d["index"], d["tree_size"], tuple(d["path"]), d["root"])


def prove(tree: PredictionsTree, index: int) -> InclusionProof:
    path = audit_path(tree.leaves, index)
    return InclusionProof(tree.records[index], index, tree.count, tuple(p.hex() for p in path), tree.root_hex)


def find_index(tree: PredictionsTree, match: Iterable[tuple[str, Any]]) -> int:
    """Index of the first record whose fields equal ``match`` (e.g. dataset + example id)."""
    want = list(match)
    for i, rec in enumerate(tree.records):
        if isinstance(rec, dict) and all(rec.get(k) == v for k, v in want):
            return i
    raise MerkleProofError(f"no prediction record with {', '.join(f'{k}={v!r}' for k, v in want)}")


def verify_proof(proof: InclusionProof, expected_root: str) -> None:
    """Check ``proof`` against a bundle's root (hex); raises :class:`MerkleProofError`."""
    if proof.root != expected_root:
        raise MerkleProofError(f"the proof is for root {proof.root}, the bundle records {expected_root}")
    verify_inclusion(record_leaf(proof.record), proof.index, proof.tree_size,
                     [bytes.fromhex(p) for p in proof.path], bytes.fromhex(expected_root))
