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
from dynadesk.scoring.answerability import per_dataset_text
from dynadesk.sync.format.keys import fingerprint
from dynadesk.sync.format.parts import Dataset, Interval, json_of
from dynadesk.sync.format.payload import Payload
from dynadesk.sync.rules.board_facts import facts_of, payload_of
from dynadesk.sync.server import rows as _rows
from dynadesk.sync.server.board_view import BoardView
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
            " · <a href=\"/log\">Transparency log</a> · <a href=\"/snapshots\">Snapshots</a>"
            " · <a href=\"/docs\">API</a></nav>"
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


def metrics_table(payload: Payload) -> Html:
    """Every metric of the bundle: one row per metric, one column per dataset ('whole run' for '')."""
    table: dict[str, dict[str, Any]] = {}
    info: dict[str, tuple[str, bool]] = {}
    for m in payload.metrics:
        table.setdefault(m.metric, {})[m.dataset] = m.value
        info[m.metric] = (m.unit, m.deterministic)
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


def _num(v: Any) -> Html:
    if not isinstance(v, int | float) or isinstance(v, bool):
        return h(v)
    return h(f"{v:.4g}" if abs(v) < 1000 else f"{v:.1f}")


def _field_verdicts(fields: Any) -> Html:
    """Each checked field and its verdict, one row each (the verdict follows from them)."""
    if not isinstance(fields, dict) or not fields:
        return "–"
    rows = "".join(f"<tr><td><code>{h(k)}</code></td><td class=\"field-verdict {h(str(v).replace(' ', '-'))}\">"
                   f"{h(v)}</td></tr>" for k, v in fields.items())
    return f"<table class=\"fields\"><tbody>{rows}</tbody></table>"


NOT_AUDITED_NOTE = "<p>Not audited: no auditor has re-run this exact claim (these values, environment and class).</p>"
ATTESTATIONS_NOTE = ("{n} attestation{s} speak{v} for this bundle, oldest first: a “reproduced” one re-ran this exact"
                     " claim (every signed value, the environment and hardware class, the model, data and predictions);"
                     " a “disputed” one disputed this model’s results (claims.py, docs/board.md “Badges”).")


def _of_bundle(a: dict[str, Any], bundle_id: str) -> str:
    """Where an attestation was made, when not on this bundle: the claim it re-ran or the results it disputed."""
    other = str(a.get("attested_bundle_id") or bundle_id)
    if other == bundle_id:
        return ""
    why = ("the identical claim, signed at another time" if a.get("verdict") == "reproduced"
           else "a dispute follows this model’s results")
    where = link("/models/" + other, other[:16] + "…")
    return f"<br><small class=\"attested-elsewhere\">made on bundle {where}: {why}</small>"


def _attestations(atts: list[dict[str, Any]], row_class: str, bundle_id: str = "") -> Html:
    """Every attestation that speaks for the bundle (claims.py): auditor key and organisation, verdict, times,
    per-field verdicts, and the bundle it was made on when that is another."""
    if not atts:
        return NOT_AUDITED_NOTE
    rows = []
    for a in atts:
        who = (f"{h(a.get('auditor') or 'unknown key')} <code>{h(str(a.get('auditor_fingerprint'))[:23])}</code>"
               f"<br><small>organisation: {h(a.get('organisation') or 'none (the key stands for itself)')}</small>"
               + (f"<br><small class=\"warn\">key revoked {h(a.get('revoked_at'))}: not counted</small>"
                  if a.get("revoked_at") else ""))
        same = a.get("hardware_class") == row_class
        mark = "the bundle’s own class: confirms it" if same else "another class"
        where = f"{h(a.get('hardware_class'))}<br><small>{mark}</small>"
        rows.append(f"<tr class=\"attestation\"><td>{who}</td><td class=\"verdict {h(a.get('verdict'))}\">"
                    f"{h(a.get('verdict'))}{_of_bundle(a, bundle_id)}</td><td>{where}</td><td>{h(a.get('runner'))}</td>"
                    f"<td>{h(a.get('created_at'))}</td><td>{h(a.get('received_at'))}</td><td>{h(a.get('log_seq'))}</td>"
                    f"<td>{_field_verdicts(a.get('fields'))}</td><td>{link(str(a.get('url')), 'raw JSON')}</td></tr>")
    n = len(atts)
    note = ATTESTATIONS_NOTE.format(n=n, s="s" if n != 1 else "", v="" if n != 1 else "s")
    return (f"<p>{h(note)}</p><table class=\"atts\" id=\"attestations\"><thead><tr>"
            "<th scope=\"col\">auditor (key, organisation)</th><th scope=\"col\">verdict</th>"
            "<th scope=\"col\">hardware class re-run on</th><th scope=\"col\">runner</th><th scope=\"col\">signed</th>"
            "<th scope=\"col\">received</th><th scope=\"col\">log entry</th><th scope=\"col\">per-field verdicts</th>"
            f"<th scope=\"col\">document</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _standing(task: str, standing: dict[str, Any] | None, hw_label: str) -> Html:
    if standing is None:
        return ("<p class=\"warn\">This bundle is no longer on the board: a newer bundle of the same model from the"
                " same submitter replaced it.</p>")
    if standing.get("baseline"):
        score = "" if standing["dynascore"] is None else (f" Dynascore at the board's rates:"
                                                          f" <strong>{standing['dynascore']:.2f}</strong>.")
        trivial = (f" Its {' and '.join(standing['baseline']['trivial'])} are trivial: a constant predictor never"
                   " changes its answer." if standing["baseline"]["trivial"] else "")
        return (f"<p class=\"standing baseline\">A <strong>baseline</strong> of the <a href=\"/?task={escape(task)}\">"
                f"{h(task)}</a> board ({h(standing['baseline']['reason'])}): shown unranked beside its"
                f" {standing['total']} ranked rows.{score}{trivial}</p>")
    parts = " + ".join(f"{k} {v:.2f}" for k, v in standing["contributions"].items())
    ri = standing.get("rank_interval")
    spread = (f" Rank 95% interval: <strong class=\"rank-interval\">{ri[0]}–{ri[1]}</strong> (resampling the"
              " test examples)." if ri else "")
    tied = (f" <span class=\"tied\">Tied with the next row, {h(standing['tied_with'])}</span>: no test set tells"
            " the two apart (paired bootstrap, 95%)." if standing.get("tied_with") else "")
    return (f"<p class=\"standing\">Rank <strong>{standing['rank']}</strong> of {standing['total']} on the"
            f" <a href=\"/?task={escape(task)}\">{h(task)}</a> board of its hardware class ({h(hw_label)},"
            f" {h(standing['hardware_status'])}) at the default weights: Dynascore"
            f" <strong>{standing['dynascore']:.2f}</strong> = {h(parts)}, scored with <span class=\"rate-source\">"
            f"{h(standing.get('rates_text', 'the board rates'))}</span>.{spread}{tied}</p>")



def intervals_table(payload: Payload) -> Html:
    """The bundle's signed 95% intervals of the task metric, one row per test set, each with a bar on 0-100."""
    ivs = payload.intervals or ()
    if not ivs:
        return "<p>This bundle carries no intervals (it was made before they existed).</p>"
    rows = "".join(
        f"<tr><th scope=\"row\">{h(iv.dataset)}</th><td>{h(iv.metric)}</td>"
        f"<td class=\"interval\">{_interval_bar(iv)}</td><td>{h(iv.resamples)}</td>"
        f"<td><code>{h(iv.seed)}</code></td><td>{h(iv.method)}</td></tr>" for iv in ivs)
    return ("<table class=\"intervals\" id=\"intervals\"><thead><tr><th>test set</th><th>metric</th>"
            "<th>95% interval</th><th>resamples</th><th>seed</th><th>method</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def _interval_bar(iv: Interval) -> Html:
    lo, hi = float(iv.low), float(iv.high)
    return (f"<span class=\"ivbar\" title=\"{lo:.2f}–{hi:.2f}\"><span style=\"left:{max(0.0, min(lo, 100.0)):.2f}%;"
            f"width:{max(0.5, min(hi, 100.0) - max(lo, 0.0)):.2f}%\"></span></span> {h(f'{lo:.2f}–{hi:.2f}')}")


def dataset_labels(d: Dataset) -> str:
    """A dataset entry's signed labels, shown beside its name: answerable-only, the robustness suite set."""
    out = " <span class=warn>(answerable-only: unanswerable questions left out)</span>" \
        if d.answerable_only else ""
    suites = d.robustness_suites
    if suites:
        out += f" <small>robustness suites: {h(', '.join(map(str, suites)))}</small>"
    return out


def model_page(view: BoardView, bundle_id: str) -> Html:
    """Everything one board row claims, from its signed bundle (raises NotFoundError for an unknown id)."""
    db = view.db
    raw = db.bundle_raw(bundle_id)
    doc = json.loads(raw)
    payload = payload_of(raw)
    task = payload.task
    model = payload.model
    facts = facts_of(payload)
    key_fp = payload.key_fingerprint
    try:
        submitter = db.get_key(str(key_fp)).name
    except NotFoundError:  # a key missing from this server only loses the name, never the page
        submitter = "unknown key"
    digests = {d.name: d.digest for d in payload.datasets}
    versions = _rows.dataset_versions(digests, db.dataset_versions(task))
    ds_rows = "".join(
        f"<tr><td>{h(d.name)}{dataset_labels(d)}</td><td>{h(d.split)}</td><td>{h(d.size)}</td>"
        f"<td><code>{h(d.digest)}</code></td><td>{h(versions[d.name]['version'])}"
        f"{'' if versions[d.name]['current'] else ' <span class=warn>(superseded)</span>'}</td></tr>"
        for d in payload.datasets)
    entry = db.log_entry_of(bundle_id)
    log_html = kv([("sequence number", entry["seq"]), ("kind", entry["kind"]), ("received", entry["received_at"]),
                   ("bundle sha256", entry["bundle_sha256"]), ("previous entry hash", entry["prev_hash"]),
                   ("entry hash", entry["entry_hash"]),
                   ("in the log", link(f"/log?start={entry['seq']}#seq-{entry['seq']}", f"entry {entry['seq']}"))]
                  ) if entry else "<p>No log entry found.</p>"
    runner = f"{facts.runner}, " + ("sandboxed" if facts.sandboxed else "NOT sandboxed (a local run)")
    summary = kv([("model", model.name), ("model digest", model.digest), ("task", task),
                  ("task definition", describe(view.tasks[task]) if task in view.tasks else "not on this board"),
                  ("task digest (signed)", payload.task_digest or "not recorded (an older bundle)"),
                  ("submitter", Markup(f"{h(submitter)} <code>{h(key_fp)}</code>")),
                  ("signed at", payload.created_at), ("hardware class", facts.hardware_label),
                  ("hardware class (canonical)", facts.hardware_class), ("runner", runner),
                  *([("SQuAD 2.0 (HasAns / NoAns)", squad)] if (squad := per_dataset_text(
                      [*map(dict, payload.metric_rows())])) else []),
                  ("robustness suites", ", ".join(facts.robustness_suites) or "not recorded"),
                  ("coverage", "; ".join(f"{k}: {n} source examples changed" + (" (low confidence)" if low else "")
                                         for k, n, low in facts.coverage) or "none"),
                  ("timed measurements", "NOISY: " + "; ".join(facts.noisy) if facts.noisy else
                   "quiet (no noise flagged by the evaluator)"),
                  ("bundle id", bundle_id), ("signing key", fingerprint(bytes.fromhex(doc["signature"]["public_key"]))),
                  ("documents", Markup(f"{link(f'/bundles/{bundle_id}', 'readable bundle')} · "
                                       f"{link(f'/api/bundles/{bundle_id}', 'raw JSON')}"))]
                 + ([("lineage", model.lineage.to_json())] if model.lineage else []))
    attested = db.attestations_of(bundle_id)
    standing = view.standing(task, bundle_id, facts.hardware_class)
    title = standing["label"] if standing else model.name
    env = dict(payload.environment)
    settings = dict(payload.settings) if payload.settings is not None else {  # version 1: one object
        **json_of(payload.worker_settings), **({"request": payload.request.to_json()} if payload.request else {})}
    body = "".join([
        _standing(task, standing, facts.hardware_label),
        section("Summary", summary, "summary"),
        section("Metrics per dataset", metrics_table(payload), "metrics-section"),
        section("Intervals (task metric, 95%, host bootstrap)", intervals_table(payload), "intervals-section"),
        section("Datasets", "<table class=\"datasets\"><thead><tr><th>name</th><th>split</th><th>examples</th>"
                f"<th>digest</th><th>board version</th></tr></thead><tbody>{ds_rows}</tbody></table>", "datasets"),
        section("Evaluator", tree(payload.evaluator.to_json()), "evaluator"),
        folded("Environment", f"{facts.hardware_label}; python {env.get('python', '?')}, torch "
               f"{env.get('torch', (env.get('libraries') or {}).get('torch', '?'))}",
               tree(env), "environment"),
        section("Seeds", tree(dict(payload.seeds)), "seeds"),
        folded("Settings", ", ".join(f"{k} {v}" for k, v in settings.items() if not isinstance(v, dict | list))[:160],
               tree(settings), "settings"),
        section("Tolerances (measured metrics)", tree(json_of(payload.tolerances or {})), "tolerances"),
        section("Predictions", tree(payload.predictions.to_json()), "predictions"),
        section("Audit attestations", _attestations(attested, facts.hardware_class, bundle_id), "audit"),
        section("Transparency log entry", log_html, "log-entry"),
    ])
    return layout(f"{title} — {task}", body,
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
               else link(f"/snapshots/{e['bundle_id']}", e["bundle_id"][:16] + "…") if e["kind"] == "snapshot"
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


def snapshots_index(view: BoardView, task: str | None = None) -> Html:
    """``/snapshots``: every signed board snapshot, newest first, grouped by task, each a citable link."""
    if task is not None:
        view.check_task(task)
    found = view.db.list_snapshots(task)
    if not found:
        which = f" of '{task}'" if task else ""
        return layout("Snapshots", f"<p class=\"empty\">No snapshot{h(which)} yet. An operator freezes the board"
                                   " with <code>dynadesk-server snapshot create</code>; each one is signed and"
                                   " citable.</p>")
    parts = ["<p class=\"about\">A snapshot is the board frozen and signed at one moment: cite it, and anyone can"
             " check it against the transparency log.</p>"]
    for name in sorted({s["task"] for s in found}):
        rows = "".join(f"<tr data-snapshot=\"{h(s['id'])}\"><td>{link('/snapshots/' + s['id'], s['title'] or s['id'])}"
                       f"</td><td>{h(str(s['created_at'])[:19].replace('T', ' '))}</td><td>{h(s['seq'])}</td>"
                       f"<td>{link('/api/snapshots/' + s['id'], 'signed JSON')}</td></tr>"
                       for s in sorted((s for s in found if s["task"] == name), key=lambda s: -int(s["seq"])))
        parts.append(f"<section class=\"snapshot-task\" aria-labelledby=\"snap-{h(name)}\">"
                     f"<h2 id=\"snap-{h(name)}\">{h(name)}</h2><div class=\"table-wrap\"><table class=\"snapshots\">"
                     "<thead><tr><th scope=\"col\">Snapshot</th><th scope=\"col\">Taken (UTC)</th>"
                     "<th scope=\"col\">Log position</th><th scope=\"col\">Raw</th></tr></thead>"
                     f"<tbody>{rows}</tbody></table></div></section>")
    return layout("Snapshots", "".join(parts))
