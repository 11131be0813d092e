"""The operator's key changes (issue 45, item 4): moving a key into an organisation, the operator's word that an
auditor key may attest a submitter key its name matches, and the record of each (``key_events``).

An auditor never attests its own organisation's results (ingest.py). A key registered without ``--org`` stands
for itself, so a lab's second key registered as an auditor without one could attest the lab's rows. Now the
operator can move it (``dynadesk-server keys set-org KEY ORG``), and until then such a key cannot attest the rows
of a key whose name or organisation matches its own name (:func:`names_match`) unless the operator gave their word
for that pair (``dynadesk-server keys allow-attest AUDITOR SUBMITTER``). SQL on the server's tables, as db.py's.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from dynadesk.errors import NotFoundError
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.server.backend import Tx
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.records import KeyRow

MIN_PREFIX = 3  # a shorter name matches only when equal ("AI" is no prefix of every "Air ..." lab)


def _skeleton(name: str) -> str:
    """Letters and digits only, case-folded, compatibility-normalised: "Lab-A (2nd key)" -> "laba2ndkey"."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", name).casefold() if ch.isalnum())


def names_match(auditor_name: str, other: str | None) -> bool:
    """Whether an auditor key's name and another key's name or organisation look like the same lab: equal, or one
    starts with the other (at least :data:`MIN_PREFIX` letters), ignoring case, spaces and punctuation."""
    if not other:
        return False
    a, b = _skeleton(auditor_name), _skeleton(other)
    if not a or not b:
        return False
    short, long_ = sorted((a, b), key=len)
    return a == b or (len(short) >= MIN_PREFIX and long_.startswith(short))


def needs_operator_word(auditor: KeyRow, submitter: KeyRow) -> bool:
    """An auditor key with no organisation whose name matches the submitter key's name or organisation."""
    return auditor.organisation is None and (names_match(auditor.name, submitter.name)
                                             or names_match(auditor.name, submitter.organisation))


def _event(c: Tx, fingerprint: str, event: str, detail: str) -> None:
    seq = int(c.execute("SELECT COALESCE(MAX(seq), 0) FROM key_events").fetchone()[0]) + 1
    c.execute("INSERT INTO key_events(seq, at, fingerprint, event, detail) VALUES (?,?,?,?,?)",
              [seq, utc_now_text(), fingerprint, event, detail])


def _known(c: Tx, fingerprint: str) -> tuple[str, str | None]:
    row = c.execute("SELECT name, organisation FROM keys WHERE fingerprint = ?", [fingerprint]).fetchone()
    if row is None:
        raise NotFoundError(f"no key with fingerprint {fingerprint} is registered (dynadesk-server keys list)")
    return str(row[0]), row[1]


def set_org(db: ServerDB, fingerprint: str, organisation: str) -> KeyRow:
    """Move a registered key into a registered organisation; recorded as a ``set-org`` key event."""
    with db.tx() as c:
        _name, old = _known(c, fingerprint)
        if c.execute("SELECT 1 FROM organisations WHERE name = ?", [organisation]).fetchone() is None:
            raise NotFoundError(f"organisation {organisation!r} is not registered"
                                f" (dynadesk-server orgs add {organisation!r})")
        c.execute("UPDATE keys SET organisation = ? WHERE fingerprint = ?", [organisation, fingerprint])
        _event(c, fingerprint, "set-org", f"organisation {old or '(none)'} -> {organisation}")
    db.forget_config()
    return db.get_key(fingerprint)


def allow_attest(db: ServerDB, auditor: str, submitter: str) -> None:
    """Record the operator's word that ``auditor`` may attest ``submitter``'s rows despite matching names."""
    with db.tx() as c:
        _known(c, submitter)
        name, _org = _known(c, auditor)
        c.execute("INSERT INTO attest_allowances(auditor_fingerprint, submitter_fingerprint, allowed_at)"
                  " VALUES (?,?,?) ON CONFLICT(auditor_fingerprint, submitter_fingerprint) DO NOTHING",
                  [auditor, submitter, utc_now_text()])
        _event(c, auditor, "allow-attest", f"may attest the rows of key {submitter} (operator's word)")


def attest_allowed(db: ServerDB, auditor: str, submitter: str) -> bool:
    with db.lock:
        return db.conn.execute("SELECT 1 FROM attest_allowances WHERE auditor_fingerprint = ?"
                               " AND submitter_fingerprint = ?", [auditor, submitter]).fetchone() is not None


def record(db: ServerDB, fingerprint: str, event: str, detail: str) -> None:
    """Record a key change made elsewhere (``keys add``, ``keys revoke``)."""
    with db.tx() as c:
        _event(c, fingerprint, event, detail)


def events(db: ServerDB) -> list[dict[str, Any]]:
    cols = ("seq", "at", "fingerprint", "event", "detail")
    with db.lock:
        rows = db.conn.execute(f"SELECT {', '.join(cols)} FROM key_events ORDER BY seq").fetchall()
    return [dict(zip(cols, r)) for r in rows]
