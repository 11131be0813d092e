"""Is a bundle in a leaderboard server's transparency log, and is that log intact?

Reads ``GET /api/log`` (every page), recomputes the hash chain and checks the
server-signed head with :func:`dynadesk.sync.format.translog.verify_log`, then looks
for the bundle's entry and compares the bytes the server hands out.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from dynadesk.audit.report import DIFFERS, IDENTICAL, INTEGRITY, NOT_COMPARABLE, Check
from dynadesk.errors import BundleError, ServerAnswerError, ServerUnavailable, SyncError

if TYPE_CHECKING:
    from dynadesk.sync.client.upload import SyncClient
    from dynadesk.sync.format.envelope import Bundle

PAGE = 10000


def fetch_log(client: SyncClient) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """All log entries and the signed head of the last page (entries beyond the head are dropped)."""
    from dynadesk.sync.client.upload import answer_field

    entries: list[dict[str, Any]] = []
    head: dict[str, Any] = {}
    while True:
        path = f"/api/log?start={len(entries) + 1}&limit={PAGE}"
        page = client.get_json(path, expect=dict)
        entries += answer_field(page, "entries", list, f"GET {client.base_url}{path}")
        head = page.get("head") or {}
        size: int = head["size"] if isinstance(head.get("size"), int) else 0
        if len(page["entries"]) < PAGE or len(entries) >= size:
            return entries[:size], head


def check_transparency(bundle: Bundle, server_url: str, server_key: bytes | None = None,
                       client: SyncClient | None = None) -> list[Check]:
    """Checks ``transparency.log``, ``transparency.entry`` and ``transparency.server_copy``."""
    from dynadesk.sync.client.upload import SyncClient
    from dynadesk.sync.format.translog import verify_log

    client = client or SyncClient(server_url, retries=1)
    try:
        entries, head = fetch_log(client)
        if server_key is None:
            key = client.get_json("/api/server-key", expect=dict)
            server_key_note = f"server key {key.get('fingerprint')} as the server states it (pin it with --server-key)"
        else:
            server_key_note = "server key pinned by the auditor"
    except SyncError as exc:
        return [Check("transparency.log", INTEGRITY, NOT_COMPARABLE, None, None, f"{server_url}: {exc}")]
    try:
        verify_log(entries, head, server_key)
    except BundleError as exc:
        return [Check("transparency.log", INTEGRITY, DIFFERS, None, head.get("hash"), f"{server_url}: {exc}")]
    checks = [Check("transparency.log", INTEGRITY, IDENTICAL, None, head["hash"],
                    f"{len(entries)} entries; hash chain and signed head verify; {server_key_note}")]
    sha = hashlib.sha256(bundle.raw).hexdigest()
    entry = next((e for e in entries if e.get("bundle_id") == bundle.id), None)
    if entry is None:
        checks.append(Check("transparency.entry", INTEGRITY, DIFFERS, bundle.id, None,
                            f"{server_url}'s log ({len(entries)} entries) has no entry for this bundle"))
        return checks
    checks.append(Check("transparency.entry", INTEGRITY, IDENTICAL if entry["bundle_sha256"] == sha else DIFFERS,
                        sha, entry["bundle_sha256"], f"log entry #{entry['seq']}, received {entry['received_at']}"))
    try:
        served = client.get_bytes(f"/api/bundles/{bundle.id}")
    except ServerUnavailable as exc:
        checks.append(Check("transparency.server_copy", INTEGRITY, NOT_COMPARABLE, sha, None, str(exc)[:300]))
        return checks
    except ServerAnswerError as exc:  # it answered, but not with the bundle
        checks.append(Check("transparency.server_copy", INTEGRITY, DIFFERS, sha, None, str(exc)[:300]))
        return checks
    served_sha = hashlib.sha256(served).hexdigest()
    checks.append(Check("transparency.server_copy", INTEGRITY, IDENTICAL if served_sha == sha else DIFFERS, sha,
                        served_sha, "GET /api/bundles/{id} returns these exact bytes" if served_sha == sha else
                        "the server hands out other bytes for this bundle id"))
    return checks
