"""Per-address and per-key upload rate limits (token buckets, in memory, per server process).

A bucket holds ``burst`` tokens and refills at ``rate`` per second; an upload takes one. Each
request is charged to exactly one bucket, decided after the body is read (at most
``MAX_BUNDLE_BYTES``) and its frame, key and signature are checked (a regex and one Ed25519
verification, :func:`~dynadesk.sync.server.ingest.verified_signer`):

- signed by a registered, unrevoked key: that key's bucket only, so nobody can spend another
  submitter's allowance by naming their key, and no anonymous traffic from the same address,
  NAT or ``--trusted-proxy`` can exhaust it;
- anything else (anonymous, an unknown key, a bad signature): its address's bucket (the peer, or
  the client a trusted proxy names in ``X-Forwarded-For``).

An anonymous client past its allowance still costs the server reading its body and that frame
check, no more: it never reaches the JSON, schema or canonical-form work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dynadesk.errors import ConfigError
from dynadesk.ratelimit import Limiter, Rate

__all__ = ["DEFAULT_LIMITS", "Limiter", "Rate", "UploadLimits", "client_address", "parse_limits", "parse_rate"]


@dataclass(frozen=True)
class UploadLimits:
    per_address: Rate
    per_key: Rate

    def text(self) -> str:
        """``"ADDRESS,KEY"`` in the form :func:`parse_limits` reads."""
        return f"{self.per_address.text()},{self.per_key.text()}"


DEFAULT_LIMITS = UploadLimits(Rate(5.0, 60), Rate(2.0, 30))


def parse_rate(text: str, what: str) -> Rate:
    """``"5/60"`` -> 5 per second, bursts of 60."""
    per_s, _, burst = text.partition("/")
    try:
        rate = Rate(float(per_s), int(burst))
    except ValueError:
        raise ConfigError(f"{what} must look like PER_SECOND/BURST (e.g. 5/60), got {text!r}") from None
    if not (math.isfinite(rate.per_second) and rate.per_second > 0 and rate.burst >= 1):
        raise ConfigError(f"{what} needs a rate above 0 and a burst of at least 1, got {text!r}")
    return rate


def client_address(peer: str, forwarded_for: str | None, trusted_proxies: frozenset[str]) -> str:
    """Who the address limit charges: the connection's peer, unless that peer is a ``--trusted-proxy``; then the
    nearest address in ``X-Forwarded-For`` that is not itself a trusted proxy. From anyone else the header is
    ignored (a client choosing it per request would otherwise get a fresh bucket each time)."""
    if peer not in trusted_proxies or not forwarded_for:
        return peer
    for hop in reversed([h.strip() for h in forwarded_for.split(",")]):
        if hop and hop not in trusted_proxies:
            return hop[:64]
    return peer


def parse_limits(address: str, key: str) -> UploadLimits:
    return UploadLimits(parse_rate(address, "--address-rate"), parse_rate(key, "--key-rate"))
