"""Signed board snapshots on the server: ``dynadesk-server snapshot create``, ``/snapshots/{id}``,
``/api/snapshots/{id}`` and the evidence a reader checks it with (``dynadesk sync verify-snapshot``).

A snapshot freezes one task's board as :class:`~dynadesk.sync.server.board_view.BoardView` ranks it for the
given weights and filters: every row (rank, Dynascore, values, intervals, "tied with", rank interval, its
bundle and log entry), the rows left off, every other board row excluded with the reason, the reference rows
that set the exchange rates, and the log's head the rows were taken at. It is signed with the server's log key
(:mod:`dynadesk.sync.format.snapshot`) and appended to the transparency log in the same transaction, only if
the log has not moved since (else it is taken again). It never changes afterwards, whatever the board does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from html import escape
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.errors import NotFoundError, SnapshotError, ValidationError
from dynadesk.sync.format import keys as _keys
from dynadesk.sync.format.snapshot import Snapshot, parse_snapshot, sign_snapshot
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.format.translog import entry_hash
from dynadesk.sync.rules import board as _sboard
from dynadesk.sync.rules.board_facts import ALL_CLASSES, facts_of, payload_of
from dynadesk.sync.server import rows as _rows
from dynadesk.sync.server.board_view import BoardView
from dynadesk.task_extras import board_weights

MAX_TITLE = 300
ATTEMPTS = 5
ROW_FIELDS = ("rank", "row_id", "label", "model", "submitter", "key_fingerprint", "bundle_id", "dynascore", "values",
              "intervals", "rank_interval", "hardware_class")


def _row(r: dict[str, Any], entry: dict[str, Any], after: str | None) -> dict[str, Any]:
    """A snapshot row; neighbours are named by row id (``after``: the next row's), not by label."""
    out = {k: r.get(k) for k in ROW_FIELDS}
    out.update({"bundle_sha256": entry["bundle_sha256"], "log_seq": entry["seq"], "audit": r["audit"]["state"],
                "per_dataset": {"perf": (r.get("per_dataset") or {}).get("perf", {})},
                "tied_with": after if r.get("tied_with") else None,
                "paired_next": {d: {**{k: t[k] for k in _sboard.PAIR_FIELDS}, "with": after}
                                for d, t in (r.get("paired_next") or {}).items()}})
    return out


def _excluded(view: BoardView, task: str, query: Mapping[str, Any], taken: set[str],
              baselines: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every board row at this head (derived from the stored bundles) that is neither ranked nor left off, with why;
    ``baselines``: bundle id -> why the view shows it as an unranked baseline (scoring.baselines)."""
    from dynadesk.sync.server.truth import derive_board

    keys = view.db.upload_config().keys
    out = []
    for (t, model, fp), row in sorted(derive_board(view.db).items()):
        bundle_id = str(row[0])
        if t != task or bundle_id in taken:
            continue
        key = keys.get(fp)
        facts = facts_of(payload_of(view.db.bundle_raw(bundle_id)))
        if key is None:
            why = "key not registered on this server"
        elif key.revoked_at:
            why = f"key revoked at {key.revoked_at}"
        elif query["hardware_class"] != ALL_CLASSES and facts.hardware_class != query["hardware_class"]:
            why = f"hardware class {facts.hardware_label}"
        elif query["runner"] is not None and facts.runner != query["runner"]:
            why = f"runner {facts.runner}"
        elif query["sandboxed"] is not None and facts.sandboxed != query["sandboxed"]:
            why = f"sandboxed {'yes' if facts.sandboxed else 'no'}"
        elif bundle_id in (baselines or {}):
            why = f"baseline: {(baselines or {})[bundle_id]}"
        else:
            why = "audit: not reproduced by an auditor (audit=reproduced)"
        out.append({"bundle_id": bundle_id, "row_id": _rows.row_id(model, fp), "why": why})
    return out


def _payload(view: BoardView, task: str, title: str, params: Mapping[str, str], now: datetime,
             key: Ed25519PrivateKey) -> tuple[dict[str, Any], tuple[int, str]]:
    head = view.db.log_head()
    rows, offset = [], 0
    while True:
        answer = view.answer(task, {**params, "limit": "1000", "offset": str(offset)}, wait_ranks=True)
        rows += answer["rows"]
        offset += 1000
        if offset >= answer["total"]:
            break
    mw, dw = _sboard.parse_weights(params)
    mw = board_weights(view.check_task(task), mw)  # as the board answered: the task's defaults under the query's
    query = {"weights": mw, "dataset_weights": dw, "memory_budget": _sboard.parse_budget(params),
             "hardware_class": answer["hardware_class"], "runner": answer["filters"]["runner"],
             "sandboxed": answer["filters"]["sandboxed"], "audit": answer["filters"]["audit"]}
    entries = {e["bundle_id"]: e for e in _entries(view, [r["bundle_id"] for r in rows])}
    left = [{"row_id": x["row_id"], "label": x["label"], "bundle_id": x["bundle_id"], "why": x["why"]}
            for x in answer["left_off_rows"]]
    taken = {r["bundle_id"] for r in rows} | {x["bundle_id"] for x in left}
    payload = {"title": title, "task": task, "created_at": utc_now_text(now),
               "server": {"key_fingerprint": _keys.fingerprint(_keys.public_raw(key))},
               "log": {"size": head[0], "hash": head[1]}, "query": query,
               "datasets": [{"name": d["name"], "split": d["split"], "digest": d["digest"]}
                            for d in answer["datasets"]],
               "reference": {"rule": answer["reference"]["rule"],
                             "rows": [x["row_id"] for x in answer["reference"]["rows"]],
                             "rates": {k: answer["rates"][k] for k in ("status", "edition", "amrs")}
                             | ({"id": answer["rates"]["id"]} if answer["rates"].get("id") else {})},
               "rows": [_row(r, entries[r["bundle_id"]], rows[i + 1]["row_id"] if i + 1 < len(rows) else None)
                        for i, r in enumerate(rows)], "left_off": left,
               "excluded": _excluded(view, task, query, taken,
                                     {b["bundle_id"]: b["baseline"]["reason"] for b in answer["baselines"]}),
               "notes": answer["notes"],
               "intervals": answer.get("intervals") or {}}
    return payload, head


def _entries(view: BoardView, bundle_ids: list[str]) -> list[dict[str, Any]]:
    out = []
    for bid in bundle_ids:
        e = view.db.log_entry_of(bid)
        if e is None:
            raise SnapshotError(f"bundle {bid[:16]}… of the board has no log entry (run 'dynadesk-server log verify')")
        out.append(e)
    return out


def create_snapshot(view: BoardView, key: Ed25519PrivateKey, task: str, title: str, params: Mapping[str, str],
                    now: datetime) -> tuple[Snapshot, dict[str, Any]]:
    """Freeze ``task``'s board for ``params`` (the board API's query parameters), sign it, append it to the log."""
    view.check_task(task)
    if not title.strip() or len(title) > MAX_TITLE:
        raise ValidationError(f"a snapshot title must have 1 to {MAX_TITLE} characters")
    for _ in range(ATTEMPTS):
        payload, head = _payload(view, task, title.strip(), params, now, key)
        snap = sign_snapshot(payload, key)
        try:
            entry = view.db.add_snapshot(snap.id, snap.raw, task, payload["title"], payload["created_at"], head,
                                         entry_hash)
        except SnapshotError:
            continue  # an upload landed while the rows were taken: take them again at the new head
        return snap, entry
    raise SnapshotError(f"the log kept moving: no snapshot of '{task}' after {ATTEMPTS} attempts (try again)")


def evidence(view: BoardView, snapshot_id: str) -> dict[str, Any]:
    """What :func:`dynadesk.sync.rules.snapshot_check.check_snapshot` needs, in one JSON document: the snapshot's bytes,
    the log entries up to its own, every bundle and attestation the log holds up to its head (all tasks: a
    bundle's task is known only from its bytes), and the server's keys with their revocation times (revocations
    are not in the log: this list is the server's word, which a reader can compare with /api/keys elsewhere)."""
    raw, seq = view.db.snapshot_raw(snapshot_id)
    entries: list[dict[str, Any]] = []
    while len(entries) < seq and (page := view.db.log_entries(len(entries) + 1, min(10_000, seq - len(entries)))):
        entries.extend(page)
    size = int(parse_snapshot(raw).payload["log"]["size"])
    bundles = {e["bundle_id"]: view.db.bundle_raw(e["bundle_id"]).decode("utf-8")
               for e in entries if e["seq"] <= size and e["kind"] == "bundle"}
    attestations = {e["bundle_id"]: view.db.attestation_raw(e["bundle_id"]).decode("utf-8")
                    for e in entries if e["seq"] <= size and e["kind"] == "attestation"}
    keys = {k.fingerprint: k.revoked_at for k in view.db.list_keys()}  # the verifier checks "key revoked" with it
    return {"format": "dynadesk-snapshot-evidence", "snapshot": raw.decode("utf-8"), "entries": entries,
            "bundles": bundles, "attestations": attestations, "keys": keys}


# ---------------------------------------------------------------------- the page
def bibtex(p: dict[str, Any], snapshot_id: str, url: str, seq: int) -> str:
    """A citation of the snapshot: title, server, date, the log entry and head it is fixed by."""
    year, month = p["created_at"][:4], int(p["created_at"][5:7])
    months = "jan feb mar apr may jun jul aug sep oct nov dec".split()
    title = p["title"].replace("{", "(").replace("}", ")")
    return (f"@misc{{dynadesk-snapshot-{snapshot_id[:12]},\n"
            f"  title = {{{title}}},\n"
            f"  howpublished = {{DynaDesk leaderboard snapshot, task {p['task']}}},\n"
            f"  year = {{{year}}},\n  month = {months[month - 1]},\n"
            f"  url = {{{url}}},\n"
            f"  note = {{Snapshot {snapshot_id}; transparency log entry {seq}, head {p['log']['size']}:"
            f"{p['log']['hash']}; signed by server key {p['server']['key_fingerprint']}."
            f" Verify: dynadesk sync verify-snapshot {url}}}\n}}")


def _bar(iv: dict[str, Any] | None) -> str:
    """An interval as a small inline bar on 0-100 (the page has no script)."""
    if not iv:
        return "–"
    lo, hi = float(iv["low"]), float(iv["high"])
    return (f"<span class=\"ivbar\" data-low=\"{lo}\" data-high=\"{hi}\" title=\"95% interval {lo:.2f}–{hi:.2f}\">"
            f"<span style=\"left:{max(0.0, lo):.2f}%;width:{max(0.5, hi - lo):.2f}%\"></span></span>"
            f" {lo:.1f}–{hi:.1f}")


def _rates_line(reference: dict[str, Any]) -> str:
    """Which rates the snapshot's rows were scored with: the rate edition (number and id), provisional rates, or
    Dynaboard's rule over the rows shown (older snapshots name only the rule)."""
    rates = reference.get("rates") or {}
    if rates.get("status") == "edition":
        return f"rate edition {rates.get('edition')} ({str(rates.get('id'))[:16]}…): {json.dumps(rates.get('amrs'))}"
    return f"{reference['rule']}: {len(reference['rows'])} rows" + (f"; rates {json.dumps(rates.get('amrs'))}"
                                                                    if rates.get("amrs") else "")


def snapshot_page(view: BoardView, snapshot_id: str, base_url: str) -> str:
    """``/snapshots/{id}``: the frozen board, how to check it, and how to cite it."""
    from dynadesk.sync.server.pages import h, kv, layout, link, section

    raw, seq = view.db.snapshot_raw(snapshot_id)
    p = parse_snapshot(raw).payload
    url = f"{base_url.rstrip('/')}/snapshots/{snapshot_id}"
    label = {r["row_id"]: r["label"] for r in p["rows"]}
    datasets = sorted({d for r in p["rows"] for d in r.get("intervals") or {}})
    head = "".join(f"<th scope=\"col\">{h(d)} 95% interval</th>" for d in datasets)
    body = []
    for r in p["rows"]:
        ri = r.get("rank_interval")
        tied = r.get("tied_with")
        cells = "".join(f"<td class=\"interval\">{_bar((r.get('intervals') or {}).get(d))}</td>" for d in datasets)
        bid = r["bundle_id"]
        body.append(f"<tr data-row=\"{h(r['row_id'])}\"><td>{h(r['rank'])}</td>"
                    f"<td>{link('/models/' + bid, r['label'])}</td>"
                    f"<td class=\"num\">{float(r['dynascore']):.2f}</td>"
                    f"<td class=\"rank-interval\">{h(f'{ri[0]}–{ri[1]}' if ri else None)}</td>"
                    f"<td class=\"tied\">{h('≈ ' + label.get(tied, tied) if tied else '')}</td>{cells}"
                    f"<td>{h(r['submitter'])}</td><td>{link('/api/bundles/' + bid, 'bundle')} · "
                    f"log {h(r['log_seq'])}</td></tr>")
    table = ("<table class=\"board snapshot\" id=\"snapshot-rows\"><thead><tr><th>Rank</th><th>Model</th>"
             "<th>Dynascore</th>"
             f"<th>Rank 95%</th><th>Tied with next</th>{head}<th>Submitter</th><th>Documents</th></tr></thead>"
             f"<tbody>{''.join(body)}</tbody></table>")
    q = p["query"]
    about = kv([("task", p["task"]), ("taken at", p["created_at"]),
                ("transparency log", link(f"/log?start={seq}#seq-{seq}", f"entry {seq}; rows taken at head"
                                          f" {p['log']['size']} ({p['log']['hash'][:16]}…)")),
                ("weights", json.dumps(q["weights"]) if q["weights"] else "the defaults (perf 4, others 1)"),
                ("dataset weights", json.dumps(q["dataset_weights"]) if q["dataset_weights"] else "1 each"),
                ("memory budget (GiB)", q["memory_budget"]), ("hardware class", q["hardware_class"]),
                ("runner / sandboxed / audit", f"{q['runner'] or 'any'} / {q['sandboxed']} / {q['audit']}"),
                ("exchange rates from", _rates_line(p["reference"])),
                ("signed by", f"server key {p['server']['key_fingerprint']}"),
                ("documents", link(f"/api/snapshots/{snapshot_id}", "signed JSON"))])
    left = "".join(f"<li>{h(x['label'])}: {h(x['why'])}</li>" for x in p["left_off"])
    excluded = "".join(f"<li>{h(x['row_id'])}: {h(x['why'])}</li>" for x in p["excluded"])
    check = (f"<pre><code>dynadesk sync verify-snapshot {escape(url)}</code></pre><p>checks, offline, the server's"
             " signature, that the log's entries recompute to the head above, and that every row follows from the"
             " log's bundles at that head with the stated weights (docs/board.md).</p>")
    page = "".join([
        section("Snapshot", about, "about"),
        section("Rows", table + (f"<p>Left off:</p><ul>{left}</ul>" if left else "")
                + (f"<details><summary>{len(p['excluded'])} other board rows not ranked here</summary><ul>{excluded}"
                   "</ul></details>" if excluded else "")
                + f"<p class=\"notes\">{h(' · '.join(p['notes']))}</p>", "rows"),
        section("Check it", check, "check"),
        section("Cite it", f"<pre id=\"bibtex\"><code>{h(bibtex(p, snapshot_id, url, seq))}</code></pre>", "cite")])
    return layout(p["title"], page, f" · <a href=\"/?task={escape(p['task'])}\">{h(p['task'])}</a>")


def snapshot_json(view: BoardView, snapshot_id: str) -> bytes:
    raw, _seq = view.db.snapshot_raw(snapshot_id)
    return raw


def check_id(snapshot_id: str) -> str:
    if len(snapshot_id) != 64 or any(c not in "0123456789abcdef" for c in snapshot_id):
        raise NotFoundError(f"no snapshot with id {snapshot_id[:80]!r} (an id is 64 lowercase hex digits)")
    return snapshot_id
