"""Anonymous traffic cannot exhaust a registered key's uploads (issue 32, item 6), on a real server.

The upload limit used to be charged per address before anything was read, so an anonymous flood from
one address (a lab's NAT, or every lab behind the documented load balancer) emptied the bucket every
registered key behind that address shared: seen failing first, Lab A's signed upload after the flood
was answered 429. Now a request signed by a registered key is charged to that key's own bucket only,
and everything else to its address's; a body that only names a registered key is anonymous.
"""

from __future__ import annotations

import json

import requests
from support.sync import stop_server
from test_server_adversarial import Board

from dynadesk.sync.format import keys as K
from dynadesk.sync.format.envelope import envelope_bytes

LIMITS = ("--address-rate", "0.01/3", "--key-rate", "0.01/4")


def _post(b: Board, raw: bytes, client: str | None = None) -> int:
    """POST an upload; ``client``: the address the trusted proxy (loopback) names in X-Forwarded-For."""
    headers = {"Content-Type": "application/json", **({"X-Forwarded-For": client} if client else {})}
    return requests.post(f"{b.url}/api/bundles", data=raw, headers=headers, timeout=30).status_code


def _flood(b: Board, n: int, client: str | None = None) -> list[int]:
    return [_post(b, b"{}", client) for _ in range(n)]


def _named_not_signed(b: Board) -> bytes:
    """A body naming Lab A's key, signed by Lab B's: anonymous, whoever it names."""
    body = json.dumps(b.payload("Lab A", "forged"), separators=(",", ":"), sort_keys=True).encode()
    return envelope_bytes(body, K.public_raw(b.keys["Lab A"]), b.keys["Lab B"].sign(body))


def test_an_anonymous_flood_from_the_same_address_does_not_block_a_registered_key(tmp_path):
    b = Board(tmp_path, limits=LIMITS)
    try:
        codes = _flood(b, 10)
        assert codes[:3] == [400] * 3 and set(codes[3:]) == {429}, codes
        assert b.post(_named_not_signed(b)).status_code == 429  # naming a key is not being it
        accepted = [b.post(b.bundle("Lab A", f"m{i}").raw).status_code for i in range(4)]
        assert accepted == [201] * 4, accepted  # Lab A's own four, from the flooded address
        r = b.post(b.bundle("Lab A", "m5").raw)
        assert r.status_code == 429 and "key" in r.json()["detail"]  # the key's own bucket still limits it
        assert b.post(b.bundle("Lab C", "c1").raw).status_code == 201  # and only it
        assert _flood(b, 2) == [429, 429]  # the anonymous bucket is still empty
    finally:
        stop_server(b.proc)


def test_an_anonymous_flood_behind_the_trusted_proxy_does_not_block_a_registered_key(tmp_path):
    b = Board(tmp_path, limits=(*LIMITS, "--trusted-proxy", "127.0.0.1"))
    try:
        codes = _flood(b, 8, "203.0.113.9")
        assert codes[:3] == [400] * 3 and set(codes[3:]) == {429}, codes
        assert _post(b, b.bundle("Lab A", "behind-proxy").raw, "203.0.113.9") == 201
        assert _flood(b, 1, "198.51.100.4") == [400]  # another client behind the proxy has its own bucket
        assert _flood(b, 1, "203.0.113.9") == [429]
    finally:
        stop_server(b.proc)
