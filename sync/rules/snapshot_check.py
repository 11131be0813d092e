"""Offline check of a signed board snapshot against the transparency log's entries and bundles.

Given the snapshot's bytes, the log entries up to (and, where available, including) its own entry, and the
stored bytes of every bundle the log holds up to the snapshot's head, :func:`check_snapshot` shows that:

1. the server's Ed25519 signature holds over the payload, made by the server key you pinned or gave (a check with
   no key is refused: anyone can sign a file with a key of their own);
2. the log's entries 1..size recompute, entry by entry, to the head the snapshot names; its own entry (when
   given) names its id and its bytes' sha256;
3. every bundle hashes to its log entry and carries its submitter's valid signature;
4. the board at that head (per task, model and key: the bundle created latest, as the server's board table is
   derived, ``truth.derive_board``) is accounted for: each row is in the snapshot's rows, left off, or
   excluded with a reason that the evidence shows (another hardware class, runner or sandbox flag: from the
   bundle; "audit": from the log's attestations, by the badge rule of :mod:`dynadesk.sync.rules.claims`; a revoked or
   unregistered key: from the server's key list in the evidence, revoked before the snapshot was taken), and
   nothing else is; with ``audit=reproduced`` every ranked row is reproduced by the log's attestations;
4b. the reference rows are the ones the stated rule gives from the log (reproduced rows by the log's
   attestations, or each key's latest row), never a list the snapshot merely states; rows pinned by the operator
   (not in the log) are reported as such;
5. re-scoring those bundles' metrics with the stated weights and the stated rates (a rate edition's or provisional
   ones), else the stated reference rows
   (:func:`dynadesk.sync.rules.board.compute_board`, the server's own code) gives every row's rank, Dynascore and
   values, and their intervals, paired tests, "tied with" marks and rank intervals
   (:class:`dynadesk.sync.rules.board.BoardIntervals` over the bundles' signed outcomes) exactly as stated.

Any break raises :class:`SnapshotError` naming the row, field and both values. No network, no database.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from dynadesk.errors import DynaDeskError, SnapshotError
from dynadesk.scoring.board import MAX_PAGE_ROWS, Weighting
from dynadesk.scoring.bootstrap import resampled_rows
from dynadesk.sync.format.attestation import parse_attestation
from dynadesk.sync.format.envelope import parse_bundle, verify_bundle
from dynadesk.sync.format.snapshot import Snapshot, parse_snapshot
from dynadesk.sync.format.timestamps import epoch_us
from dynadesk.sync.format.translog import GENESIS, entry_hash
from dynadesk.sync.rules import board as _board
from dynadesk.sync.rules.claims import ClaimFacts, attach, claim_key, is_reproduced

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
        created = epoch_us(b.payload.created_at, f"bundle {b.id[:12]} created_at")
        key = (b.model_name, b.key_fingerprint)
        if key not in out or created >= out[key][2]:
            out[key] = (b, seq, created)
    return {k: (v[0], v[1]) for k, v in out.items()}


NO_KEY = ("no server key to check the signature against (anyone can sign a file with a key of their own): pin the"
          " server's key with 'dynadesk sync check-log --server URL' (verify-snapshot then uses it for that server's"
          " links and the files saved from them), or give it with --server-key HEX (GET URL/api/server-key)")


class Evidence:
    """What the log and the evidence show beyond the bundles: each bundle's badge (the log's attestations, by
    :mod:`dynadesk.sync.rules.claims`' rule; the server's organisations are not in the log, so a dispute follows the
    same key here) and the server's keys (registered, revoked when)."""

    def __init__(self, entries: Mapping[int, dict[str, Any]], size: int, bundles: Mapping[str, bytes],
                 attestations: Mapping[str, bytes] | None, keys: Mapping[str, str | None] | None, taken_us: int):
        self.entries, self.size, self.bundles = entries, size, bundles
        self.attestations, self.keys, self.taken_us = attestations, keys, taken_us
        self._found: list[tuple[ClaimFacts, dict[str, Any]]] | None = None

    def key_state(self, fingerprint: str) -> str:
        """"registered", "revoked" (before the snapshot was taken) or "unknown" (not registered)."""
        if self.keys is None:
            raise SnapshotError("the evidence holds no list of the server's keys (saved by an older version), so an"
                                " exclusion for a key cannot be checked: fetch the evidence again")
        if fingerprint not in self.keys:
            return "unknown"
        at = self.keys[fingerprint]
        return "revoked" if at is not None and epoch_us(at, "key revoked_at") <= self.taken_us else "registered"

    def reproduced(self, bundle: Any) -> bool:
        """Whether the log's attestations (of keys not revoked) reproduce this bundle's exact claim, undisputed."""
        targets = [_claim_facts(bundle)]
        live = [(f, a) for f, a in self._attested()
                if self.keys is None or self.key_state(a["auditor_fingerprint"]) == "registered"]
        return is_reproduced({"attestations": attach(targets, live).get(bundle.id, [])})

    def _attested(self) -> list[tuple[ClaimFacts, dict[str, Any]]]:
        if self._found is not None:
            return self._found
        found = []
        for seq in range(1, self.size + 1):
            e = self.entries[seq]
            if e.get("kind") != "attestation":
                continue
            if self.attestations is None:
                raise SnapshotError("the evidence holds no attestations (saved by an older version), so the badges"
                                    " cannot be derived from the log: fetch the evidence again")
            raw = self.attestations.get(str(e["bundle_id"]))
            if raw is None or hashlib.sha256(raw).hexdigest() != e["bundle_sha256"]:
                raise SnapshotError(f"log entry {seq}: the evidence lacks attestation {str(e['bundle_id'])[:16]}… or"
                                    " its bytes do not hash to the entry")
            try:
                att = parse_attestation(raw, f"attestation of log entry {seq}")
                att.verify()
                attested = parse_bundle(self.bundles[att.bundle_id], f"bundle {att.bundle_id[:12]}")
            except (DynaDeskError, KeyError) as exc:
                raise SnapshotError(f"log entry {seq}: {exc}") from None
            found.append((_claim_facts(attested), {"verdict": att.verdict, "auditor_fingerprint": att.key_fingerprint,
                                                   "log_seq": seq}))
        self._found = found
        return found


def _claim_facts(bundle: Any) -> ClaimFacts:
    p = bundle.payload
    return ClaimFacts.of(bundle.id, bundle.key_fingerprint, None, bundle.model_name, p.model.digest,
                         p.predictions.digest, claim_key(p))


def _filter_reason_holds(why: str, bundle: Any, query: Mapping[str, Any], ev: Evidence) -> bool:
    """Whether an exclusion is true of the bundle, as its bytes, the log and the server's key list show."""
    from dynadesk.sync.rules.board_facts import facts_of

    facts = facts_of(bundle.payload)
    if why.startswith("hardware class"):
        return facts.hardware_class != query.get("hardware_class")
    if why.startswith("runner"):
        return facts.runner != query.get("runner")
    if why.startswith("sandboxed"):
        return facts.sandboxed != query.get("sandboxed")
    if why.startswith("key revoked"):
        return ev.key_state(bundle.key_fingerprint) == "revoked"
    if why.startswith("key not registered"):
        return ev.key_state(bundle.key_fingerprint) == "unknown"
    if why.startswith("audit"):
        return query.get("audit") == "reproduced" and not ev.reproduced(bundle)
    if why.startswith("baseline"):  # a constant predictor: from its signed outcomes; a task file's mark: stated
        from dynadesk.scoring.baselines import CONSTANT

        return facts.constant if CONSTANT in why else True
    return False


def _account(p: dict[str, Any], latest: dict[tuple[str, str], tuple[Any, int]], ev: Evidence
             ) -> dict[str, tuple[Any, int]]:
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
            if where == "excluded" and not _filter_reason_holds(str(item.get("why", "")), b, p["query"], ev):
                raise SnapshotError(f"excluded: bundle {bid[:16]}… is excluded as {item.get('why')!r:.80}, which"
                                    " its signed bundle, the log or the server's key list contradicts")
            if where != "excluded" and item.get("row_id") != row_id(b.model_name, b.key_fingerprint):
                raise SnapshotError(f"{where}: row {item.get('row_id')!r:.80} is bundle {bid[:16]}… of"
                                    f" {row_id(b.model_name, b.key_fingerprint)!r:.80}")
            if where != "excluded" and p["query"].get("audit") == "reproduced" and not ev.reproduced(b):
                raise SnapshotError(f"{where}: row {item.get('row_id')!r:.80} is ranked with audit=reproduced, but no"
                                    " attestation in the log reproduces its exact claim undisputed")
            if where != "excluded" and ev.keys is not None and ev.key_state(b.key_fingerprint) != "registered":
                raise SnapshotError(f"{where}: row {item.get('row_id')!r:.80} is ranked, but its key is"
                                    f" {ev.key_state(b.key_fingerprint)} on the server")
    missing = sorted(set(by_bundle) - set(places))
    if missing:
        b, seq = by_bundle[missing[0]]
        raise SnapshotError(f"bundle {missing[0][:16]}… ({b.model_name}, log entry {seq}) is on the board at the"
                            f" snapshot's head but neither a row, left off nor excluded ({len(missing)} such)")
    return {bid: by_bundle[bid] for bid, where in places.items() if where != "excluded"}


RULE_REPRODUCED, RULE_PER_KEY = "reproduced", "one row per submitter key"
RATE_STATUSES = ("edition", "provisional", "none", "dynaboard")  # issue 44: sync/server/rate_editions.py
RULES_WITH_PINS = ("pinned by the operator", "reproduced or pinned by the operator")


def _check_rates(rates: dict[str, Any], stated: list[str], ranked: dict[str, Any],
                 latest: dict[tuple[str, str], tuple[Any, int]], ev: Evidence) -> list[str]:
    """The rates a snapshot states it scored with (issue 44): Dynaboard's rule over exactly the rows ranked; a rate
    edition that is a ``rates`` entry of the log at or before the snapshot's head (its bytes are the server's, at
    ``/api/rates/TASK/N``); or provisional rates that the robust rule gives from the stated reference rows, which
    must be board rows at the head (rows the log's attestations do not reproduce are the operator's pins, which are
    not in the log: they are returned, as the server's word)."""
    status = rates.get("status")
    if status == "dynaboard":
        if sorted(stated) != sorted(ranked):
            raise SnapshotError("reference: under Dynaboard's rule the rates come from the rows ranked, but the"
                                f" snapshot states {sorted(stated)[:5]}")
        return []
    if status == "edition":
        logged = {str(ev.entries[s]["bundle_id"]) for s in range(1, ev.size + 1)
                  if ev.entries[s].get("kind") == "rates"}
        if str(rates.get("id")) not in logged:
            raise SnapshotError(f"reference: rate edition {str(rates.get('id'))[:16]}… is not in the log at the"
                                " snapshot's head")
        return []
    at_head = {row_id(b.model_name, b.key_fingerprint): b for b, _seq in latest.values()}
    missing = sorted(set(stated) - set(at_head))
    if missing:
        raise SnapshotError(f"reference: row {missing[0]!r:.80} is not a board row at the snapshot's head")
    from dynadesk.scoring.rates import rates_from_tables

    derived = {k: r.rate for k, r in rates_from_tables(
        {rid: {m: slot["values"] for m, slot in _board.board_metrics(at_head[rid].payload.metric_rows()).items()}
         for rid in stated}).items()}
    if _norm(derived) != _norm(rates.get("amrs")):
        raise SnapshotError(f"reference: the stated rates {_show(rates.get('amrs'))} are not what the robust rule"
                            f" gives from the stated reference rows ({_show(derived)})")
    return sorted(rid for rid in stated if not ev.reproduced(at_head[rid]))  # the operator's pins: not in the log


def _check_reference(p: dict[str, Any], scored: dict[str, tuple[Any, int]], ev: Evidence,
                     latest: dict[tuple[str, str], tuple[Any, int]]) -> list[str]:
    """The stated reference rows are the ones the stated rule gives from the log (sync/server/reference.py);
    returns the rows only the operator's pins (not in the log) account for."""
    rule, stated = str(p["reference"]["rule"]), [str(x) for x in p["reference"]["rows"]]
    ranked = {row_id(b.model_name, b.key_fingerprint): b for b, _seq in scored.values()}
    rates = p["reference"].get("rates")
    if isinstance(rates, dict) and rule in RATE_STATUSES:  # issue 44: scored with the task's rates
        if rates.get("status") != rule:
            raise SnapshotError(f"reference: rule {rule!r:.40} is not the stated rates' {rates.get('status')!r:.40}")
        return _check_rates(rates, stated, ranked, latest, ev)
    repro = sorted(rid for rid, b in ranked.items() if ev.reproduced(b))
    unknown = sorted(set(stated) - set(ranked))
    if unknown:
        raise SnapshotError(f"reference: row {unknown[0]!r:.80} is not a row this snapshot ranks")
    if rule == RULE_REPRODUCED:
        if sorted(stated) != repro or len(repro) < 2:
            raise SnapshotError(f"reference: the snapshot states rows {sorted(stated)} as reproduced, but the log's"
                                f" attestations reproduce {repro}")
        return []
    if rule == RULE_PER_KEY:
        per_key: dict[str, tuple[str, str]] = {}
        for rid, b in ranked.items():
            mine = (b.payload.created_at, rid)
            per_key[b.key_fingerprint] = max(per_key.get(b.key_fingerprint, mine), mine)
        want = sorted(v[1] for v in per_key.values())
        if len(repro) >= 2 or sorted(stated) != want:
            raise SnapshotError(f"reference: rule {rule!r} gives {want} from the log ({len(repro)} reproduced rows),"
                                f" but the snapshot states {sorted(stated)}")
        return []
    if rule in RULES_WITH_PINS:
        if not set(repro) <= set(stated):
            raise SnapshotError(f"reference: reproduced rows {sorted(set(repro) - set(stated))} are missing from the"
                                f" stated rows under rule {rule!r}")
        return sorted(set(stated) - set(repro))
    raise SnapshotError(f"reference: rule {rule!r:.80} is not one this verifier can derive from the log")


def _rescore(p: dict[str, Any], scored: dict[str, tuple[Any, int]]) -> None:
    from dynadesk.sync.rules.board_facts import facts_of, spreads_of
    from dynadesk.sync.rules.board_stats import bundle_stats

    stated = {str(r["bundle_id"]): r for r in [*p["rows"], *p["left_off"]]}
    rows, intervals, resampled, facts = [], {}, {}, {}
    for bid, (b, seq) in scored.items():
        rid = row_id(b.model_name, b.key_fingerprint)
        facts[rid] = facts_of(b.payload)
        rows.append({"model": rid, "model_name": b.model_name, "submitter": stated[bid].get("submitter", ""),
                     "key_fingerprint": b.key_fingerprint, "bundle_id": bid, "created_at": b.payload.created_at,
                     "model_digest": b.payload.model.digest,
                     "metrics": _board.board_metrics(b.payload.metric_rows())})
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
        weighting = Weighting(dict(q["weights"]), dict(q["dataset_weights"]), float(q["memory_budget"]),
                              rates=(p["reference"].get("rates") or {}).get("amrs"))
        answer = _board.compute_board(p["task"], prep, p["datasets"], weighting,
                                      _board.BoardView(MAX_PAGE_ROWS, offset, False, list(p["reference"]["rows"])),
                                      bi)
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
                   server_public_key: bytes | None, attestations: Mapping[str, bytes] | None = None,
                   keys: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """Every check of the module docstring; a summary when they all pass (raises :class:`SnapshotError`).
    ``attestations``: id -> bytes of the log's attestations; ``keys``: the server's keys, fingerprint -> revoked_at
    (None while registered)."""
    if server_public_key is None:
        raise SnapshotError(NO_KEY)
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
    ev = Evidence(by_seq, size, bundles, attestations, keys, epoch_us(str(p["created_at"]), "snapshot created_at"))
    scored = _account(p, latest, ev)
    pinned = _check_reference(p, scored, ev, latest)
    _rescore(p, scored)
    return {"snapshot": snap.id, "title": p["title"], "task": p["task"], "log_size": size, "log_head": head,
            "rows": len(p["rows"]), "left_off": len(p["left_off"]), "excluded": len(p["excluded"]),
            "logged_at": int(own["seq"]) if own else None, "server_key": p["server"]["key_fingerprint"],
            "pinned_reference_rows": pinned}
