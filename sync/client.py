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
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import requests

from dynadesk.errors import ServerUnavailable, SyncError, UploadRejected

RETRY_STATUS = {429, 500, 502, 503, 504}
SERVER_META_KEY = "sync.server_url"


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
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                resp = self.session.request(method, url, timeout=self.timeout, **kw)
            except requests.RequestException as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if resp.status_code in RETRY_STATUS:
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                continue
            return resp
        raise ServerUnavailable(f"cannot reach {url} after {self.retries + 1} attempt(s): {last}")

    def upload(self, bundle_id: str, raw: bytes) -> dict[str, Any]:
        """Send one bundle; returns the server's answer, raises UploadRejected or ServerUnavailable."""
        resp = self._request("POST", "/api/bundles", data=raw, headers={"Content-Type": "application/json"})
        try:
            body = resp.json()
        except ValueError:
            body = {"error": "bad_response", "detail": resp.text[:500]}
        if resp.status_code in (200, 201):
            return body
        if resp.status_code == 409 and body.get("error") == "replay" and bundle_id in body.get("detail", ""):
            return {"status": "already_accepted", **body}
        raise UploadRejected(f"{body.get('error', 'rejected')}: {body.get('detail', resp.text[:500])}",
                             code=str(body.get("error", "rejected")), status=resp.status_code)

    def get_json(self, path: str) -> Any:
        resp = self._request("GET", path)
        if resp.status_code != 200:
            raise SyncError(f"GET {path}: HTTP {resp.status_code}: {resp.text[:300]}")
        return resp.json()


@dataclass
class SyncReport:
    server: str
    sent: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    still_queued: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "ok": self.ok}


def resolve_server(store, server: str | None) -> str:
    """``--server``, else ``$DYNADESK_SERVER``, else the last server used from this workspace."""
    url = server or os.environ.get("DYNADESK_SERVER") or store.get_meta(SERVER_META_KEY)
    if not url:
        raise SyncError("no leaderboard server given: use --server URL (it is remembered afterwards)")
    return url


def sync_queue(store, server: str | None = None, client: SyncClient | None = None,
               progress: Callable[[str, str], None] | None = None) -> SyncReport:
    """Upload every queued bundle, oldest first; never loses one (see the module docstring)."""
    url = resolve_server(store, server)
    client = client or SyncClient(url)
    report = SyncReport(client.base_url)
    pending = store.bundles.pending()
    for i, row in enumerate(pending):
        try:
            answer = client.upload(row.id, store.bundles.raw(row.id))
        except ServerUnavailable as exc:
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
    store.set_meta(SERVER_META_KEY, client.base_url)
    return report
