"""Offline check of a signed board snapshot against the transparency log's entries and bundles.

Given the snapshot's bytes, the log entries up to (and, where available, including) its own entry, and the
stored bytes of every bundle the log holds up to the snapshot's head, :func:`check_snapshot` shows that:

1. the server's Ed25519 signature holds over the payload (and, given, the key is the one you pinned);
2. the log's entries 1..size recompute, entry by entry, to the head the snapshot names; its own entry (when
   given) names its id and its bytes' sha256;
3. every bundle hashes to its log entry and carries its submitter's valid signature;
4. the board at that head (per task, model and key: the bundle created latest, as the server's board table is
   derived, ``truth.derive_board``) is accounted for: each row is in the snapshot's rows, left off, or
   excluded with a reason (another hardware class, runner or sandbox flag: checked from the bundle; a
   revoked key or an audit filter: stated by the server), and nothing else is;
5. re-scoring those bundles' metrics with the stated weights and the stated rates (a rate edition's or provisional
   ones), else the stated reference rows
   (:func:`dynadesk.sync.board.compute_board`, the server's own code) gives every row's rank, Dynascore and
   values, and their intervals, paired tests, "tied with" marks and rank intervals
   (:class:`dynadesk.sync.board.BoardIntervals` over the bundles' signed outcomes) exactly as stated.

Any break raises :class:`SnapshotError` naming the row, field and both values. No network, no database.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from dynadesk.errors import DynaDeskError, SnapshotError
from dynadesk.scoring.board import MAX_PAGE_ROWS
from dynadesk.scoring.bootstrap import resampled_rows
from dynadesk.sync import board as _board
from dynadesk.sync.format.envelope import parse_bundle, verify_bundle
from dynadesk.sync.format.snapshot import Snapshot, parse_snapshot
from dynadesk.sync.format.timestamps import epoch_us
from dynadesk.sync.format.translog import GENESIS, entry_hash

COMPARED = ("rank", "dynascore", "values", "intervals", "paired_next", "tied_with", "rank_interval")


def row_id(model: str, key_fingerprint: str) -> str:
    """The board's row id (``sync/server/rows.row_id``): a model of one submitter key."""
    return f"{model}@{key_fingerprint}"


def _chain(entries: Mapping[int, dict[str, Any]], size: int, head: str) -> None:
    prev = GENESIS
    for seq in range(1, size + 1):
        e = entries.get(seq)
        if e is None:
            raise SnapshotError(f"log entry {seq} is missing from the evidence (the snapshot's head is at {size})")
        if e.get("prev_hash") != prev:
            raise SnapshotError(f"log entry {seq}: prev_hash does not match entry {seq - 1}'s hash")
        h = entry_hash(seq, str(e["bundle_id"]), str(e["bundle_sha256"]), str(e["received_at"]), prev)
        if h != e.get("entry_hash"):
            raise SnapshotError(f"log entry {seq}: entry_hash does not match its content (rewritten)")
        prev = h
    if prev != head:
        raise SnapshotError(f"the log's entries 1..{size} end in hash {prev[:16]}…, not the snapshot's log head"
                            f" {str(head)[:16]}…")


def latest_bundles(entries: Mapping[int, dict[str, Any]], size: int, bundles: Mapping[str, bytes],
                   task: str) -> dict[tuple[str, str], tuple[Any, int]]:
    """Per (model, key) of ``task``: the bundle created latest among the log's bundles 1..size (a later arrival
    wins a tie), each checked against its entry and its signature; values ``(Bundle, log seq)``."""
    out: dict[tuple[str, str], tuple[Any, int, int]] = {}
    for seq in range(1, size + 1):
        e = entries[seq]
        if e.get("kind", "bundle") != "bundle":
            continue
        raw = bundles.get(str(e["bundle_id"]))
        if raw is None:
            raise SnapshotError(f"log entry {seq}: the evidence lacks bundle {str(e['bundle_id'])[:16]}…")
        if hashlib.sha256(raw).hexdigest() != e["bundle_sha256"]:
            raise SnapshotError(f"log entry {seq}: bundle {str(e['bundle_id'])[:16]}… does not hash to the entry")
        try:
            b = parse_bundle(raw, f"bundle of log entry {seq}")
            verify_bundle(b)
        except DynaDeskError as exc:
            raise SnapshotError(f"log entry {seq}: {exc}") from exc
        if b.id != e["bundle_id"]:
            raise SnapshotError(f"log entry {seq}: the bundle's id is {b.id[:16]}…, not the entry's")
        if b.task != task:
            continue
        created = epoch_us(b.payload["created_at"], f"bundle {b.id[:12]} created_at")
        key = (b.model_name, b.key_fingerprint)
        if key not in out or created >= out[key][2]:
            out[key] = (b, seq, created)
    return {k: (v[0], v[1]) for k, v in out.items()}


def _filter_reason_holds(why: str, bundle: Any, query: Mapping[str, Any]) -> bool:
    """Whether an exclusion the verifier can check is true of the bundle (stated ones pass: see the docstring)."""
    from dynadesk.sync.board_facts import facts_of

    facts = facts_of(bundle.payload)
    if why.startswith("hardware class"):
        return facts.hardware_class != query.get("hardware_class")
    if why.startswith("runner"):
        return facts.runner != query.get("runner")
    if why.startswith("sandboxed"):
        return facts.sandboxed != query.get("sandboxed")
    return why.startswith(("key revoked", "key not registered", "audit"))


def _account(p: dict[str, Any], latest: dict[tuple[str, str], tuple[Any, int]]) -> dict[str, tuple[Any, int]]:
    """Every board row at the head is a snapshot row, left off or excluded (checkably); the scored bundles."""
    by_bundle = {b.id: (b, seq) for b, seq in latest.values()}
    places: dict[str, str] = {}
    for where, items in (("rows", p["rows"]), ("left_off", p["left_off"]), ("excluded", p["excluded"])):
        for item in items:
            bid = str(item.get("bundle_id"))
            if bid in places:
                raise SnapshotError(f"bundle {bid[:16]}… is listed twice ({places[bid]} and {where})")
            places[bid] = where
            if bid not in by_bundle:
                raise SnapshotError(f"{where}: bundle {bid[:16]}… ({item.get('row_id') or item.get('label')}) is not"
                                    " the latest bundle of its model and key in the log at the snapshot's head")
            b, seq = by_bundle[bid]
            if where == "excluded" and not _filter_reason_holds(str(item.get("why", "")), b, p["query"]):
                raise SnapshotError(f"excluded: bundle {bid[:16]}… is excluded as {item.get('why')!r:.80}, which"
                                    " its signed bundle contradicts")
            if where != "excluded" and item.get("row_id") != row_id(b.model_name, b.key_fingerprint):
                raise SnapshotError(f"{where}: row {item.get('row_id')!r:.80} is bundle {bid[:16]}… of"
                                    f" {row_id(b.model_name, b.key_fingerprint)!r:.80}")
    missing = sorted(set(by_bundle) - set(places))
    if missing:
        b, seq = by_bundle[missing[0]]
        raise SnapshotError(f"bundle {missing[0][:16]}… ({b.model_name}, log entry {seq}) is on the board at the"
                            f" snapshot's head but neither a row, left off nor excluded ({len(missing)} such)")
    return {bid: by_bundle[bid] for bid, where in places.items() if where != "excluded"}


def _rescore(p: dict[str, Any], scored: dict[str, tuple[Any, int]]) -> None:
    from dynadesk.sync.board_facts import facts_of, spreads_of
    from dynadesk.sync.board_stats import bundle_stats

    stated = {str(r["bundle_id"]): r for r in [*p["rows"], *p["left_off"]]}
    rows, intervals, resampled, facts = [], {}, {}, {}
    for bid, (b, seq) in scored.items():
        rid = row_id(b.model_name, b.key_fingerprint)
        facts[rid] = facts_of(b.payload)
        rows.append({"model": rid, "model_name": b.model_name, "submitter": stated[bid].get("submitter", ""),
                     "key_fingerprint": b.key_fingerprint, "bundle_id": bid, "created_at": b.payload["created_at"],
                     "model_digest": b.payload["model"]["digest"],
                     "metrics": _board.board_metrics(b.payload["metrics"])})
        stats = bundle_stats(b.payload) or {"intervals": {}, "outcomes": {}}
        intervals[rid] = stats["intervals"]
        resampled[rid] = resampled_rows(stats["outcomes"])
        if bid in {r["bundle_id"] for r in p["rows"]}:
            want = stated[bid]
            if want.get("log_seq") != seq or want.get("bundle_sha256") != hashlib.sha256(b.raw).hexdigest():
                raise SnapshotError(f"row {rid!r:.80}: log_seq/bundle_sha256 are not its bundle's log entry {seq}")
    q = p["query"]
    prep = _board.prepare(rows, spreads_of(facts))
    bi = _board.BoardIntervals(intervals, resampled)
    got: dict[str, dict[str, Any]] = {}
    left: dict[str, str] = {}
    offset = 0
    while True:
        answer = _board.compute_board(p["task"], prep, p["datasets"], dict(q["weights"]), dict(q["dataset_weights"]),
                                      MAX_PAGE_ROWS, offset, float(q["memory_budget"]), False,
                                      list(p["reference"]["rows"]), bi,
                                      rates=(p["reference"].get("rates") or {}).get("amrs"))
        got.update({r["model"]: r for r in answer["rows"]})
        left = answer["left_off"]
        offset += MAX_PAGE_ROWS
        if offset >= answer["total"]:
            break
    if sorted(left) != sorted(str(x["row_id"]) for x in p["left_off"]):
        raise SnapshotError(f"left_off: the bundles give {sorted(left)}, the snapshot says"
                            f" {sorted(str(x['row_id']) for x in p['left_off'])}")
    for row in p["rows"]:
        rid = str(row["row_id"])
        mine = got.get(rid)
        if mine is None:
            raise SnapshotError(f"row {rid!r:.80}: the bundles at that head do not rank it")
        # labels here are row ids (prepare() labels rows by their id), as the snapshot names neighbours

        for name in COMPARED:
            if _norm(mine.get(name)) != _norm(row.get(name)):
                raise SnapshotError(f"row {rid!r:.80}: {name} is {_show(row.get(name))} in the snapshot, but the log's"
                                    f" bundles with the stated weights give {_show(mine.get(name))}")


def _norm(v: Any) -> Any:
    """A value as the snapshot's canonical JSON holds it (a float 90.0 reads back as 90)."""
    return json.loads(json.dumps(v, sort_keys=True))


def _show(v: Any) -> str:
    return json.dumps(v, sort_keys=True)[:200]


def check_snapshot(raw: bytes, entries: list[dict[str, Any]], bundles: Mapping[str, bytes],
                   server_public_key: bytes | None = None) -> dict[str, Any]:
    """Every check of the module docstring; a summary when they all pass (raises :class:`SnapshotError`)."""
    snap: Snapshot = parse_snapshot(raw)
    snap.verify(server_public_key)
    p = snap.payload
    size, head = int(p["log"]["size"]), str(p["log"]["hash"])
    by_seq = {int(e["seq"]): e for e in entries}
    _chain(by_seq, size, head)
    own = next((e for e in entries if e.get("bundle_id") == snap.id), None)
    if own is not None and (own.get("kind") != "snapshot" or own.get("bundle_sha256") != hashlib.sha256(raw).hexdigest()
                            or int(own["seq"]) <= size):
        raise SnapshotError(f"log entry {own.get('seq')}: names this snapshot but not its kind, bytes or place")
    latest = latest_bundles(by_seq, size, bundles, str(p["task"]))
    _rescore(p, _account(p, latest))
    return {"snapshot": snap.id, "title": p["title"], "task": p["task"], "log_size": size, "log_head": head,
            "rows": len(p["rows"]), "left_off": len(p["left_off"]), "excluded": len(p["excluded"]),
            "logged_at": int(own["seq"]) if own else None, "server_key": p["server"]["key_fingerprint"]}
