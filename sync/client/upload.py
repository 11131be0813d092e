"""The sync client: upload queued bundles with retries and back-off, idempotently.

Outcomes per bundle: the server accepted it (201), or already holds exactly
this bundle (409 ``replay`` naming the same id: also "sent" — uploading twice
is harmless), or refused it for a reason (4xx: "rejected", reason kept), or
could not be reached (connection error, timeout, 5xx after retries: the bundle
stays queued, nothing is lost, and the run stops so a down server is not
hammered with every bundle in turn).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import requests

from dynadesk.errors import ServerAnswerError, ServerUnavailable, SyncError, UploadRejected

if TYPE_CHECKING:
    from dynadesk.store import Store

RETRY_STATUS = {429, 500, 502, 503, 504}
SERVER_META_KEY = "sync.server_url"


def _describe(exc: requests.RequestException, timeout: float) -> str:
    """The useful part of a requests error ("[Errno 111] Connection refused"), not its whole repr chain."""
    if isinstance(exc, requests.Timeout):
        return f"no answer within {timeout:g} s"
    found = re.search(r"\[Errno -?\d+\] [^'\")]+", str(exc))
    return found.group(0) if found else f"{type(exc).__name__}: {str(exc)[:200]}"


MAX_RETRY_AFTER_S = 60.0
SNIPPET = 200  # characters of an unexpected body quoted in an error


def _snippet(resp: requests.Response) -> str:
    text = " ".join(resp.text[:SNIPPET].split())
    return text + ("…" if len(resp.text) > SNIPPET else "")


def answer_field(doc: Any, name: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``doc[name]`` (a dotted ``name`` walks nested objects) when it is a ``kind``; else a
    :class:`ServerAnswerError` naming ``where`` (the URL) and the field. ``bool`` never passes for ``int``."""
    value = doc
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            raise ServerAnswerError(f"{where}: the answer has no field '{name}'")
        value = value[part]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        shown = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ServerAnswerError(f"{where}: field '{name}' is {type(value).__name__}, not {shown}")
    return value


def _retry_after(header: str | None) -> float:
    """A 429/503's ``Retry-After`` seconds (capped), 0 when absent or not a number."""
    try:
        return min(max(float(header or 0), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:
        return 0.0


@dataclass
class SyncClient:
    base_url: str
    retries: int = 3
    backoff: float = 0.5  # seconds; doubles each retry
    timeout: float = 10.0
    sleep: Callable[[float], None] = time.sleep
    session: requests.Session = field(default_factory=requests.Session)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise SyncError(f"server URL must start with http:// or https://, got {self.base_url!r}")

    def _request(self, method: str, path: str, **kw: Any) -> requests.Response:
        url = f"{self.base_url}{path}"
        last, wait = "", 0.0
        for attempt in range(self.retries + 1):
            if attempt:
                self.sleep(max(self.backoff * 2 ** (attempt - 1), wait))
            try:
                resp = self.session.request(method, url, timeout=self.timeout, **kw)
            except requests.RequestException as exc:
                last = _describe(exc, self.timeout)
                continue
            if resp.status_code in RETRY_STATUS:
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                wait = _retry_after(resp.headers.get("Retry-After"))
                continue
            return resp
        raise ServerUnavailable(f"cannot reach {url} after {self.retries + 1} attempt(s): {last}")

    def _decode(self, resp: requests.Response, where: str) -> Any:
        """The JSON body, or a :class:`ServerAnswerError` naming ``where``, the status and the content type."""
        try:
            return resp.json()
        except ValueError:
            ctype = resp.headers.get("Content-Type") or "no Content-Type"
            raise ServerAnswerError(f"{where}: HTTP {resp.status_code}, the answer is not JSON ({ctype}): "
                                    f"{_snippet(resp)}", resp.status_code) from None

    def upload(self, bundle_id: str, raw: bytes, path: str = "/api/bundles") -> dict[str, Any]:
        """Send one bundle (or, with ``path="/api/attestations"``, one attestation); returns the server's
        answer, raises UploadRejected or ServerUnavailable."""
        resp = self._request("POST", path, data=raw, headers={"Content-Type": "application/json"})
        where = f"POST {self.base_url}{path}"
        if resp.status_code in (200, 201, 409):  # accepted, or a replay: the answer must say which
            body = self._decode(resp, where)
            if not isinstance(body, dict):
                raise ServerAnswerError(f"{where}: HTTP {resp.status_code}, the answer is not a JSON object: "
                                        f"{_snippet(resp)}", resp.status_code)
        else:
            try:
                body = resp.json()
            except ValueError:
                body = None
            if not isinstance(body, dict):
                body = {"error": "bad_response", "detail": resp.text[:500]}
        if resp.status_code in (200, 201):
            return dict(body)
        if resp.status_code == 409 and body.get("error") == "replay" and bundle_id in str(body.get("detail", "")):
            return {"status": "already_accepted", **body}
        raise UploadRejected(f"{body.get('error', 'rejected')}: {body.get('detail', resp.text[:500])}",
                             code=str(body.get("error", "rejected")), status=resp.status_code)

    def get_json(self, path: str, expect: type = object) -> Any:
        """The JSON answer to ``GET path``; anything but a 200 with JSON of type ``expect`` is a
        :class:`ServerAnswerError` naming the URL (:class:`ServerUnavailable` when it cannot be reached)."""
        resp = self.get_ok("GET", path)
        where = f"GET {self.base_url}{path}"
        body = self._decode(resp, where)
        if not isinstance(body, expect):
            raise ServerAnswerError(f"{where}: the answer is {type(body).__name__}, not "
                                    f"{'a JSON object' if expect is dict else expect.__name__}")
        return body

    def get_bytes(self, path: str) -> bytes:
        """The exact bytes of a 200 answer to ``GET path`` (e.g. a stored bundle), with the same errors."""
        return self.get_ok("GET", path).content

    def get_ok(self, method: str, path: str) -> requests.Response:
        resp = self._request(method, path)
        if resp.status_code != 200:
            raise ServerAnswerError(f"{method} {self.base_url}{path}: HTTP {resp.status_code}: {_snippet(resp)}",
                                    resp.status_code)
        return resp


@dataclass
class SyncReport:
    server: str
    sent: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    still_queued: list[str] = field(default_factory=list)
    error: str | None = None
    attestations_sent: list[str] = field(default_factory=list)
    attestations_rejected: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "ok": self.ok}


def resolve_server(store: Store, server: str | None) -> str:
    """``--server``, else ``$DYNADESK_SERVER``, else the last server used from this workspace."""
    url = server or os.environ.get("DYNADESK_SERVER") or store.get_meta(SERVER_META_KEY)
    if not url:
        raise SyncError("no leaderboard server given: use --server URL (it is remembered afterwards)")
    return url


def sync_queue(store: Store, server: str | None = None, client: SyncClient | None = None,
               progress: Callable[[str, str], None] | None = None) -> SyncReport:
    """Upload every queued bundle, oldest first; never loses one (see the module docstring)."""
    url = resolve_server(store, server)
    client = client or SyncClient(url)
    report = SyncReport(client.base_url)
    pending = store.bundles.pending()
    for i, row in enumerate(pending):
        try:
            answer = client.upload(row.id, store.bundles.raw(row.id))
        except (ServerUnavailable, ServerAnswerError) as exc:  # kept queued: sent again on the next sync
            store.bundles.mark_failed_attempt(row.id, client.base_url, str(exc))
            report.error = str(exc)
            report.still_queued = [r.id for r in pending[i:]]
            break
        except UploadRejected as exc:
            store.bundles.mark_rejected(row.id, client.base_url, str(exc), {"error": exc.code, "status": exc.status})
            report.rejected[row.id] = str(exc)
            outcome = "rejected"
        else:
            store.bundles.mark_sent(row.id, client.base_url, answer)
            already = answer.get("status") == "already_accepted"
            (report.already if already else report.sent).append(row.id)
            outcome = "already on server" if already else "sent"
        if progress:
            progress(row.id, outcome)
    if report.error is None:
        _sync_attestations(store, client, report, progress)
    store.set_meta(SERVER_META_KEY, client.base_url)
    return report


def _sync_attestations(store: Store, client: SyncClient, report: SyncReport,
                       progress: Callable[[str, str], None] | None) -> None:
    """Upload queued audit attestations after the bundles (same outcomes as for bundles)."""
    pending = store.bundles.attestations("queued", limit=1_000_000)
    for i, row in enumerate(pending):
        try:
            answer = client.upload(row.id, store.bundles.attestation_raw(row.id), "/api/attestations")
        except (ServerUnavailable, ServerAnswerError) as exc:
            store.bundles.mark_attestation(row.id, client.base_url, failed=str(exc))
            report.error = str(exc)
            report.still_queued += [r.id for r in pending[i:]]
            return
        except UploadRejected as exc:
            store.bundles.mark_attestation(row.id, client.base_url,
                                           rejected=(str(exc), {"error": exc.code, "status": exc.status}))
            report.attestations_rejected[row.id] = str(exc)
            outcome = "attestation rejected"
        else:
            store.bundles.mark_attestation(row.id, client.base_url, sent=answer)
            report.attestations_sent.append(row.id)
            outcome = "attestation sent"
        if progress:
            progress(row.id, outcome)


LOG_HEAD_META = "sync.log_head"  # JSON {"server", "public_key", "size", "hash"}: what this workspace saw last


def check_log(store: Store, server: str | None = None, client: SyncClient | None = None,
              page: int = 5000) -> dict[str, Any]:
    """Fetch the whole transparency log, verify the chain and signed head, and compare with the last check.

    The server key is pinned on first use; a later head must extend the earlier one (nothing removed or
    rewritten). Raises :class:`LogIntegrityError` (or :class:`SignatureError`) on any break.
    """
    import json

    from dynadesk.errors import LogIntegrityError
    from dynadesk.sync.format.translog import verify_log

    url = resolve_server(store, server)
    client = client or SyncClient(url)
    head, entries = _log_page(client, 1, page, with_head=True)
    while len(entries) < head["size"]:
        _, more = _log_page(client, len(entries) + 1, page)
        if not more:
            break
        entries.extend(more)
    entries = entries[:head["size"]]  # entries appended after the head was signed are checked next time
    seen_raw = store.get_meta(LOG_HEAD_META)
    seen = json.loads(seen_raw) if seen_raw else None
    if seen and seen["server"] != client.base_url:
        seen = None
    pinned = bytes.fromhex(seen["public_key"]) if seen else None
    if seen is not None and pinned is not None and head.get("public_key") != seen["public_key"]:
        raise LogIntegrityError(f"{client.base_url} now signs its log with a different key than on the last check")
    verify_log(entries, head, pinned, known_head=(seen["size"], seen["hash"]) if seen and seen["size"] else None)
    store.set_meta(LOG_HEAD_META, json.dumps({"server": client.base_url, "public_key": head["public_key"],
                                              "size": head["size"], "hash": head["hash"]}))
    return {"server": client.base_url, "size": head["size"], "head": head["hash"],
            "previous_size": seen["size"] if seen else None, "key_fingerprint": head.get("key_fingerprint")}


def _log_page(client: SyncClient, start: int, limit: int, with_head: bool = False
              ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One page of the log (its signed head, checked for the fields read here, when ``with_head``)."""
    path = f"/api/log?start={start}&limit={limit}"
    where = f"GET {client.base_url}{path}"
    doc = client.get_json(path, expect=dict)
    entries = answer_field(doc, "entries", list, where)
    head: dict[str, Any] = {}
    if with_head:
        head = answer_field(doc, "head", dict, where)
        answer_field(doc, "head.size", int, where)
        for name in ("head.hash", "head.public_key"):
            answer_field(doc, name, str, where)
    return head, entries


EVIDENCE_FORMAT = "dynadesk-snapshot-evidence"


def _snapshot_url(url: str) -> tuple[str, str]:
    """``(server base URL, snapshot id)`` of a ``…/snapshots/ID`` or ``…/api/snapshots/ID`` link."""
    found = re.match(r"^(https?://.+?)(?:/api)?/snapshots/([0-9a-f]{64})(?:/evidence)?/?$", url.strip())
    if not found:
        raise SyncError(f"{url!r:.120} is not a snapshot link (…/snapshots/<64 hex digits>)")
    return found.group(1), found.group(2)


def snapshot_evidence(source: str, client: SyncClient | None = None) -> dict[str, Any]:
    """The evidence a snapshot is checked with: fetched from its server (``/api/snapshots/ID/evidence``) for a
    link, else read from a file saved earlier (``verify-snapshot --save``)."""
    import json
    from pathlib import Path

    if source.startswith(("http://", "https://")):
        base, snapshot_id = _snapshot_url(source)
        return dict((client or SyncClient(base)).get_json(f"/api/snapshots/{snapshot_id}/evidence", expect=dict))
    path = Path(source)
    if not path.is_file():
        raise SyncError(f"{source}: neither a snapshot link nor a file")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SyncError(f"{source}: not a JSON file ({exc})") from None
    if isinstance(doc, dict) and doc.get("format") == "dynadesk-board-snapshot":
        raise SyncError(f"{source} is the snapshot alone; checking it needs the log entries and bundles it names:"
                        " save them with 'dynadesk sync verify-snapshot URL --save FILE' (or fetch"
                        " /api/snapshots/ID/evidence)")
    if not isinstance(doc, dict) or doc.get("format") != EVIDENCE_FORMAT:
        raise SyncError(f"{source}: not a snapshot evidence file (format {EVIDENCE_FORMAT})")
    return doc


def verify_snapshot(evidence: dict[str, Any], server_public_key: bytes | None) -> dict[str, Any]:
    """Check a snapshot offline from its evidence (:func:`~dynadesk.sync.rules.snapshot_check.check_snapshot`) against
    the server key the reader pinned or gave (None: refused, naming how to pin one)."""
    from dynadesk.errors import SnapshotError
    from dynadesk.sync.rules.snapshot_check import check_snapshot

    try:
        raw = str(evidence["snapshot"]).encode("utf-8")
        bundles = {str(k): str(v).encode("utf-8") for k, v in dict(evidence["bundles"]).items()}
        entries = [dict(e) for e in evidence["entries"]]
        atts = evidence.get("attestations")
        attestations = None if atts is None else {str(k): str(v).encode("utf-8") for k, v in dict(atts).items()}
        keys = evidence.get("keys")
        key_list = None if keys is None else {str(k): (None if v is None else str(v)) for k, v in dict(keys).items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotError(f"snapshot evidence is malformed: {exc}") from None
    return check_snapshot(raw, entries, bundles, server_public_key, attestations, key_list)


def snapshot_currency(base_url: str, result: dict[str, Any], client: SyncClient | None = None) -> str:
    """One line saying whether a verified snapshot is still current: the server's log head now and any newer
    snapshot of its task; or that this could not be checked (the server unreachable)."""
    from dynadesk.errors import DynaDeskError

    client = client or SyncClient(base_url)
    try:
        head = client.get_json("/api/log/head", expect=dict)
        snaps = client.get_json(f"/api/snapshots?task={result['task']}", expect=list)
        size = int(answer_field(head, "size", int, f"GET {base_url}/api/log/head"))
    except DynaDeskError as exc:
        return f"NOT CHECKED whether it is current: {base_url} could not be reached ({str(exc)[:120]})"
    seqs = {str(s.get("id")): int(s.get("seq") or 0) for s in snaps if isinstance(s, dict)}
    mine = seqs.get(str(result["snapshot"]), result.get("logged_at") or 0)
    newer = sorted((seq, sid) for sid, seq in seqs.items() if seq > mine)
    if newer:
        return (f"NOT CURRENT: {len(newer)} newer snapshot(s) of '{result['task']}' exist, the latest"
                f" {newer[-1][1][:16]} (log entry {newer[-1][0]}); the log head is now {size}")
    if size > max(int(result["log_size"]), mine):  # the snapshot's own entry moves the head by one
        return (f"NOT CURRENT: the board's log has moved from head {result['log_size']} to {size} since this"
                " snapshot (no newer snapshot of its task)")
    return f"current: no newer snapshot of '{result['task']}', log head still {size}"


def load_rate_edition(store: Store, board: str, task: str) -> tuple[Any, str]:
    """``dynadesk leaderboard --rates BOARD``: the board's signed rate edition of ``task`` and how it was checked.

    ``BOARD`` is a server URL (its current edition, ``/api/rates/TASK``) or a saved edition file. The edition must
    be signed by the board's server key: the key this workspace pinned for that server (``dynadesk sync
    check-log``), else, for a URL, the key the server states (``/api/server-key``). A file needs a pinned key.
    Anything else (a bad signature, another key, another task) is a :class:`SignatureError` or ``ValidationError``.
    """
    import json
    from pathlib import Path

    from dynadesk.errors import SignatureError, ValidationError
    from dynadesk.sync.format.rate_edition import parse_edition

    seen_raw = store.get_meta(LOG_HEAD_META)
    seen = json.loads(seen_raw) if seen_raw else None
    if board.startswith(("http://", "https://")):
        client = SyncClient(board)
        raw = client.get_bytes(f"/api/rates/{task}")
        edition = parse_edition(raw, f"GET {client.base_url}/api/rates/{task}")
        stated = client.get_json("/api/server-key", expect=dict)
        key_hex = str(answer_field(stated, "public_key", str, f"GET {client.base_url}/api/server-key"))
        if seen and seen["server"] == client.base_url:
            if seen["public_key"] != key_hex:
                raise SignatureError(f"{client.base_url} states a different server key than the one this workspace"
                                     " pinned (dynadesk sync check-log): the rates are not used")
            how = "its pinned server key"
        else:
            how = (f"the server key {client.base_url} states (not pinned: 'dynadesk sync check-log --server"
                   f" {client.base_url}' pins it)")
        source = client.base_url
    else:
        path = Path(board)
        if not path.is_file():
            raise ValidationError(f"--rates {board}: neither a server URL (http://...) nor a rate edition file")
        edition = parse_edition(path.read_bytes(), str(path))
        if not seen:
            raise SignatureError(f"--rates {board}: no server key is pinned in this workspace to check the edition's"
                                 " signature with; run 'dynadesk sync check-log --server URL' for its board first, or"
                                 " give the board's URL")
        key_hex, how, source = seen["public_key"], f"the server key pinned for {seen['server']}", str(path)
    edition.verify(bytes.fromhex(key_hex))
    if edition.task != task:
        raise ValidationError(f"--rates {board}: the edition is of task '{edition.task}', not '{task}'")
    return edition, f"{edition.describe()} from {source}, verified with {how}"
