"""Signed rate editions: a task's exchange rates frozen by the board's operator, signed by the server's log key.

The document is an envelope like a snapshot's (``{"format": "dynadesk-rate-edition", "payload", "signature",
"version"}``, RFC 8785 bytes). Its payload holds the task, the edition number (1, 2, ... per task) and the previous
edition's id, each metric's rate (``amrs``, None where no rate could be published) with the reference rows it rests on
and the rows left out of it, the estimator and the bound it was made with. Its id is the sha256 of the payload bytes;
the server appends it to the transparency log as a ``rates`` entry. A workspace verifies it before scoring its own
runs with it (``dynadesk leaderboard --rates BOARD``). How the rates are estimated is
:mod:`dynadesk.scoring.rates`; this module signs and parses.
"""

from __future__ import annotations

import math
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.errors import SignatureError, ValidationError
from dynadesk.sync.format.server_signed import (
    ServerDocKind,
    ServerSigned,
    parse_server_document,
    sign_server_document,
)


class RateEdition(ServerSigned):
    """A structurally valid rate edition; :meth:`verify` checks the server's signature (and, given, that it is the
    key expected)."""

    KIND = ServerDocKind(
        format="dynadesk-rate-edition", noun="rate edition", max_bytes=4 << 20,
        payload_keys=frozenset({"task", "edition", "previous", "created_at", "server", "perf_metric", "amrs", "rates",
                                "reference", "estimator", "factor", "min_rows", "note"}),
        error=ValidationError, signature_error=SignatureError, format_hint=" (is this a rate edition?)")

    @property
    def task(self) -> str:
        return str(self.payload["task"])

    @property
    def number(self) -> int:
        return int(self.payload["edition"])

    @property
    def amrs(self) -> dict[str, float | None]:
        return {str(k): (None if v is None else float(v)) for k, v in self.payload["amrs"].items()}

    def describe(self) -> str:
        """One line naming the edition: what a board, a snapshot and the local board print."""
        return f"rate edition {self.number} of '{self.task}' ({self.id[:12]}, signed by {self.key_fingerprint})"

    def notes(self) -> list[str]:
        """What every board scored with this edition says of it (the public board, ``dynadesk leaderboard --rates``,
        the app), each when, and only when, the edition shows it: a metric without a rate; rates made with no bound
        (``factor`` null: Dynaboard's rule, ``rates freeze --rule dynaboard``); reference rows not of distinct
        organisations (``rates freeze --single-organisation``)."""
        p = self.payload
        rates = p["rates"] if isinstance(p["rates"], dict) else {}
        notes = [f"metric '{k}' has no exchange rate in this edition ({(rates.get(k) or {}).get('why')}): it"
                 " converts to 0" for k, v in self.amrs.items() if v is None]
        notes += [f"metric '{k}' has exchange rate 0 in this edition (its reference rows do not differ in it): it"
                  " converts to 0 for every row" for k, v in self.amrs.items() if v == 0]
        ref = [r for r in p["reference"] if isinstance(r, dict)] if isinstance(p["reference"], list) else []
        if p["factor"] is None:
            notes.append(f"rate edition {self.number} follows Dynaboard's rule over its {len(ref)} reference rows, by"
                         " the operator's choice: no bound, so any one of those rows can move its rates")
        orgs = sorted({str(r["organisation"]) for r in ref if r.get("organisation") is not None})
        if orgs and len(orgs) < len(ref):
            word = next((str(r["operator_word"]) for r in ref if r.get("operator_word")), "")
            notes.append(f"rate edition {self.number}: its {len(ref)} reference rows are of {len(orgs)}"
                         f" organisation{'s' if len(orgs) != 1 else ''} ({', '.join(orgs)}), not distinct ones, by"
                         f" the operator's word{': ' + repr(word) if word else ''}; those organisations set these"
                         " rates")
        return notes

    def to_summary(self) -> dict[str, Any]:
        """What a board answer says of the edition it scored with."""
        return {"edition": self.number, "id": self.id, "created_at": self.payload["created_at"],
                "key_fingerprint": self.key_fingerprint, "url": f"/api/rates/{self.task}/{self.number}"}


def sign_edition(payload: dict[str, Any], key: Ed25519PrivateKey) -> RateEdition:
    """Sign an edition payload with the server key; the result is re-parsed and verified."""
    return sign_server_document(RateEdition, payload, key)


def _check_rates(amrs: Any, where: str) -> None:
    if not isinstance(amrs, dict) or not amrs:
        raise ValidationError(f"{where}: payload.amrs must map metric names to rates")
    for name, v in amrs.items():
        ok = v is None or (type(v) in (int, float) and math.isfinite(v) and v >= 0)
        if not ok:
            raise ValidationError(f"{where}: payload.amrs.{name} must be a number >= 0 or null, got {v!r:.40}")


def _check_payload(payload: dict[str, Any], where: str) -> None:
    """An edition's own fields: the task, the edition number, the rates."""
    if not isinstance(payload["task"], str) or type(payload["edition"]) is not int or payload["edition"] < 1:
        raise ValidationError(f"{where}: payload.task must be a name and payload.edition a number from 1")
    _check_rates(payload["amrs"], where)


def parse_edition(raw: bytes, where: str = "rate edition") -> RateEdition:
    """Structure only (envelope, canonical form, payload fields); a :class:`ValidationError` naming the problem."""
    return parse_server_document(RateEdition, raw, where, _check_payload)
