"""Server-rendered pages of the public board: a model page per row, the readable bundle, the readable log.

These pages are plain HTML built from the stored, signed bytes (nothing here scores or
re-derives a number), so a researcher can read what a row claims without parsing JSON, and
every page links its raw JSON one click away. Every value is escaped; no script runs on them.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from dynadesk.errors import NotFoundError
from dynadesk.sync.format.keys import fingerprint
from dynadesk.sync.server import rows as _rows
from dynadesk.sync.server.board_view import BoardView
from dynadesk.sync.server.facts import facts_of, payload_of
from dynadesk.sync.server.task_registry import describe

Html = str


def h(value: Any) -> Html:
    """``value`` as escaped text (None as a dash)."""
    return "–" if value is None else escape(str(value))


def layout(title: str, body: Html, crumbs: Html = "") -> Html:
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{h(title)} · DynaDesk leaderboard</title><link rel=\"stylesheet\" href=\"/static/board.css\">"
            f"</head><body class=\"page\"><nav class=\"crumbs\"><a href=\"/\">Leaderboard</a>{crumbs}"
            " · <a href=\"/log\">Transparency log</a> · <a href=\"/docs\">API</a></nav>"
            f"<main><h1>{h(title)}</h1>{body}</main></body></html>")


def error_page(status: int, detail: str) -> Html:
    return layout(f"Error {status}", f"<p class=\"error\" role=\"alert\">{h(detail)}</p>")


def kv(pairs: list[tuple[str, Any]], cls: str = "kv") -> Html:
    """A two-column table of already-escaped or plain values (plain ones are escaped; dicts become JSON)."""
    out = []
    for key, value in pairs:
        cell = value if isinstance(value, Markup) else _value(value)
        out.append(f"<tr><th scope=\"row\">{h(key)}</th><td>{cell}</td></tr>")
    return f"<table class=\"{cls}\"><tbody>{''.join(out)}</tbody></table>"


class Markup(str):
    """HTML built here (already escaped), as opposed to a value to escape."""


def _value(value: Any) -> Html:
    if isinstance(value, dict | list):
        return tree(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"<code>{h(value)}</code>" if isinstance(value, str) and value.startswith("sha256:") else h(value)


def tree(value: Any, depth: int = 0) -> Html:
    """Any JSON value as nested tables: every field of a signed document, readable."""
    if isinstance(value, dict):
        if not value:
            return "<em>none</em>"
        return kv([(k, Markup(tree(v, depth + 1))) for k, v in value.items()], "kv nested" if depth else "kv")
    if isinstance(value, list):
        if not value:
            return "<em>none</em>"
        return "<ol class=\"tree\">" + "".join(f"<li>{tree(v, depth + 1)}</li>" for v in value) + "</ol>"
    return _value(value)


def link(href: str, text: str) -> Markup:
    return Markup(f"<a href=\"{escape(href)}\">{h(text)}</a>")


def section(title: str, body: Html, anchor: str) -> Html:
    return f"<section id=\"{anchor}\"><h2>{h(title)}</h2>{body}</section>"


def folded(title: str, summary: str, body: Html, anchor: str) -> Html:
    """A long section (environment, settings) folded under a one-line summary: all of it one click away."""
    return (f"<section id=\"{anchor}\"><h2>{h(title)}</h2><details><summary>{h(summary)} (show all fields)</summary>"
            f"{body}</details></section>")


def metrics_table(payload: dict[str, Any]) -> Html:
    """Every metric of the bundle: one row per metric, one column per dataset ('whole run' for '')."""
    table: dict[str, dict[str, Any]] = {}
    info: dict[str, tuple[str, bool]] = {}
    for m in payload.get("metrics") or []:
        table.setdefault(m["metric"], {})[m["dataset"]] = m["value"]
        info[m["metric"]] = (m["unit"], m["deterministic"])
    datasets = sorted({d for by in table.values() for d in by})
    head = "".join(f"<th scope=\"col\">{h(d or 'whole run')}</th>" for d in datasets)
    body = []
    for name in sorted(table):
        unit, det = info[name]
        cells = "".join(f"<td>{_num(table[name].get(d))}</td>" for d in datasets)
        kind = "deterministic" if det else "measured"
        body.append(f"<tr><th scope=\"row\">{h(name)}</th><td class=\"unit\">{h(unit)}</td>"
                    f"<td class=\"{kind}\">{kind}</td>{cells}</tr>")
    return (f"<table class=\"metrics\" id=\"metrics\"><thead><tr><th scope=\"col\">metric</th><th scope=\"col\">unit"
            f"</th><th scope=\"col\">kind</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def _mapping(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _num(v: Any) -> Html:
    if not isinstance(v, int | float) or isinstance(v, bool):
        return h(v)
    return h(f"{v:.4g}" if abs(v) < 1000 else f"{v:.1f}")


def _attestations(atts: list[dict[str, Any]]) -> Html:
    if not atts:
        return "<p>Not audited: no auditor has re-run this bundle yet.</p>"
    rows = "".join(
        f"<tr><td>{h(a.get('auditor'))} <code>{h(str(a.get('auditor_fingerprint'))[:23])}</code></td>"
        f"<td class=\"verdict {h(a.get('verdict'))}\">{h(a.get('verdict'))}</td><td>{h(a.get('hardware_class'))}</td>"
        f"<td>{h(a.get('created_at'))}</td><td>{h(a.get('log_seq'))}</td>"
        f"<td>{tree(a.get('fields')) if a.get('fields') else '–'}</td>"
        f"<td>{link(str(a.get('url')), 'raw JSON')}</td></tr>"
        for a in atts)
    return ("<table class=\"atts\"><thead><tr><th>auditor</th><th>verdict</th><th>hardware class</th><th>signed</th>"
            f"<th>log entry</th><th>fields</th><th>document</th></tr></thead><tbody>{rows}</tbody></table>")


def _standing(view: BoardView, task: str, bundle_id: str, hw_class: str, hw_label: str) -> Html:
    standing = view.standing(task, bundle_id, hw_class)
    if standing is None:
        return ("<p class=\"warn\">This bundle is no longer on the board: a newer bundle of the same model from the"
                " same submitter replaced it.</p>")
    parts = " + ".join(f"{k} {v:.2f}" for k, v in standing["contributions"].items())
    return (f"<p class=\"standing\">Rank <strong>{standing['rank']}</strong> of {standing['total']} on the"
            f" <a href=\"/?task={escape(task)}\">{h(task)}</a> board of its hardware class ({h(hw_label)}) at the"
            f" default weights: Dynascore <strong>{standing['dynascore']:.2f}</strong> = {h(parts)}.</p>")


def model_page(view: BoardView, bundle_id: str) -> Html:
    """Everything one board row claims, from its signed bundle (raises NotFoundError for an unknown id)."""
    db = view.db
    raw = db.bundle_raw(bundle_id)
    doc = json.loads(raw)
    payload = payload_of(raw)
    task = str(payload.get("task"))
    model = payload.get("model") or {}
    facts = facts_of(payload)
    key_fp = (payload.get("submitter") or {}).get("key_fingerprint")
    try:
        submitter = db.get_key(str(key_fp)).name
    except NotFoundError:  # a key missing from this server only loses the name, never the page
        submitter = "unknown key"
    digests = {d["name"]: d["digest"] for d in payload.get("datasets") or []}
    versions = _rows.dataset_versions(digests, db.dataset_versions(task))
    ds_rows = "".join(
        f"<tr><td>{h(d['name'])}</td><td>{h(d.get('split'))}</td><td>{h(d.get('size'))}</td>"
        f"<td><code>{h(d['digest'])}</code></td><td>{h(versions[d['name']]['version'])}"
        f"{'' if versions[d['name']]['current'] else ' <span class=warn>(superseded)</span>'}</td></tr>"
        for d in payload.get("datasets") or [])
    entry = db.log_entry_of(bundle_id)
    log_html = kv([("sequence number", entry["seq"]), ("kind", entry["kind"]), ("received", entry["received_at"]),
                   ("bundle sha256", entry["bundle_sha256"]), ("previous entry hash", entry["prev_hash"]),
                   ("entry hash", entry["entry_hash"]),
                   ("in the log", link(f"/log?start={entry['seq']}#seq-{entry['seq']}", f"entry {entry['seq']}"))]
                  ) if entry else "<p>No log entry found.</p>"
    runner = f"{facts.runner}, " + ("sandboxed" if facts.sandboxed else "NOT sandboxed (a local run)")
    summary = kv([("model", model.get("name")), ("model digest", model.get("digest")), ("task", task),
                  ("task definition", describe(view.tasks[task]) if task in view.tasks else "not on this board"),
                  ("task digest (signed)", payload.get("task_digest") or "not recorded (an older bundle)"),
                  ("submitter", Markup(f"{h(submitter)} <code>{h(key_fp)}</code>")),
                  ("signed at", payload.get("created_at")), ("hardware class", facts.hardware_label),
                  ("hardware class (canonical)", facts.hardware_class), ("runner", runner),
                  ("timed measurements", "NOISY: " + "; ".join(facts.noisy) if facts.noisy else
                   "quiet (no noise flagged by the evaluator)"),
                  ("bundle id", bundle_id), ("signing key", fingerprint(bytes.fromhex(doc["signature"]["public_key"]))),
                  ("documents", Markup(f"{link(f'/bundles/{bundle_id}', 'readable bundle')} · "
                                       f"{link(f'/api/bundles/{bundle_id}', 'raw JSON')}"))]
                 + ([("lineage", model["lineage"])] if model.get("lineage") else []))
    attested = db.attestations(task).get(bundle_id, [])
    env = _mapping(payload.get("environment"))
    settings = _mapping(payload.get("settings"))
    body = "".join([
        _standing(view, task, bundle_id, facts.hardware_class, facts.hardware_label),
        section("Summary", summary, "summary"),
        section("Metrics per dataset", metrics_table(payload), "metrics-section"),
        section("Datasets", "<table class=\"datasets\"><thead><tr><th>name</th><th>split</th><th>examples</th>"
                f"<th>digest</th><th>board version</th></tr></thead><tbody>{ds_rows}</tbody></table>", "datasets"),
        section("Evaluator", tree(payload.get("evaluator") or {}), "evaluator"),
        folded("Environment", f"{facts.hardware_label}; python {env.get('python', '?')}, torch "
               f"{env.get('torch', (env.get('libraries') or {}).get('torch', '?'))}",
               tree(env), "environment"),
        section("Seeds", tree(payload.get("seeds") or {}), "seeds"),
        folded("Settings", ", ".join(f"{k} {v}" for k, v in settings.items() if not isinstance(v, dict | list))[:160],
               tree(settings), "settings"),
        section("Tolerances (measured metrics)", tree(payload.get("tolerances") or {}), "tolerances"),
        section("Predictions", tree(payload.get("predictions") or {}), "predictions"),
        section("Audit attestations", _attestations(attested), "audit"),
        section("Transparency log entry", log_html, "log-entry"),
    ])
    return layout(f"{model.get('name')} — {task}", body,
                  f" · <a href=\"/?task={escape(task)}\">{h(task)}</a>")


def bundle_page(view: BoardView, bundle_id: str) -> Html:
    """The signed bundle, every field as a readable table, and its signature."""
    raw = view.db.bundle_raw(bundle_id)
    doc = json.loads(raw)
    sig = doc.get("signature") or {}
    head = kv([("format", f"{doc.get('format')} version {doc.get('version')}"), ("bundle id", bundle_id),
               ("signature", f"{sig.get('algorithm')} by key "
                             f"{fingerprint(bytes.fromhex(sig.get('public_key', '')))}"),
               ("signature value", sig.get("value")), ("size", f"{len(raw)} bytes"),
               ("links", Markup(f"{link(f'/models/{bundle_id}', 'model page')} · "
                                f"{link(f'/api/bundles/{bundle_id}', 'raw JSON')}"))])
    body = head + section("Signed payload", tree(doc.get("payload") or {}), "payload")
    return layout(f"Bundle {bundle_id[:12]}…", body, f" · {link(f'/models/{bundle_id}', 'model page')}")


def log_page(view: BoardView, start: int, limit: int, head: dict[str, Any]) -> Html:
    """Transparency-log entries from ``start`` with the server-signed head."""
    entries = view.db.log_entries(start, limit)
    rows = []
    for e in entries:
        doc = (link(f"/models/{e['bundle_id']}", e["bundle_id"][:16] + "…") if e["kind"] == "bundle"
               else link(f"/api/attestations/{e['bundle_id']}", e["bundle_id"][:16] + "…"))
        rows.append(f"<tr id=\"seq-{e['seq']}\"><td>{e['seq']}</td><td>{h(e['kind'])}</td><td>{doc}</td>"
                    f"<td>{h(e['received_at'])}</td><td><code>{h(e['bundle_sha256'][:16])}…</code></td>"
                    f"<td><code title=\"{h(e['prev_hash'])}\">{h(e['prev_hash'][:16])}…</code></td>"
                    f"<td><code title=\"{h(e['entry_hash'])}\">{h(e['entry_hash'][:16])}…</code></td></tr>")
    nav = []
    if start > 1:
        nav.append(link(f"/log?start={max(1, start - limit)}&limit={limit}", "earlier entries"))
    if len(entries) == limit:
        nav.append(link(f"/log?start={start + limit}&limit={limit}", "later entries"))
    table = ("<table class=\"log\"><thead><tr><th>seq</th><th>kind</th><th>document</th><th>received</th>"
             "<th>document sha256</th><th>previous hash</th><th>entry hash</th></tr></thead>"
             f"<tbody>{''.join(rows) or '<tr><td colspan=7>no entries</td></tr>'}</tbody></table>")
    body = (section("Signed head", tree(head), "head")
            + section("Entries", table + f"<p>{' · '.join(nav)}</p>", "entries")
            + f"<p>{link(f'/api/log?start={start}&limit={limit}', 'raw JSON')}</p>")
    return layout("Transparency log", body)
