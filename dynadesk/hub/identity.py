"""Hub identities: one-time invite codes, session tokens, CSRF tokens, and the role rules.

A code is shown once (``dynadesk hub invite``) and stored hashed; signing in with it spends it and opens a
session whose random token lives in an HttpOnly cookie (stored hashed). The CSRF token is derived from the
session token (HMAC), so nothing more is stored and a page that can read it is one the cookie signs in.
Hub roles map onto the annotation store's: ``owner`` is an owner there (one vote settles an example, and
only the lead grants it, with an invite); ``annotator`` and ``validator`` are annotators there, and a
validator judges examples without writing any.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from dynadesk.annotation.annotators import check_name
from dynadesk.errors import HubAuthError, HubForbiddenError, NotFoundError, ValidationError
from dynadesk.store.hub import HUB_ROLES, HubPerson, HubSession

if TYPE_CHECKING:
    from dynadesk.store import Store

DEFAULT_INVITE_HOURS = 24.0
DEFAULT_SESSION_HOURS = 12.0
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or typed on a phone
CODE_CHARS = 12  # 60 bits; sign-in is rate limited per address
CREATES = ("annotator", "owner")  # hub roles that write examples


def now_utc() -> datetime:
    return datetime.now(UTC)


def iso(t: datetime) -> str:
    """The store's timestamp form (``now_iso``), so stored times compare as text."""
    return t.astimezone(UTC).isoformat(timespec="milliseconds")


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def normalise_code(code: str) -> str:
    """Upper case without spaces or dashes: ``abcd-efgh-jkmn`` is the code printed as ``ABCD-EFGH-JKMN``."""
    return "".join(c for c in code.upper() if c.isalnum())


def store_role(hub_role: str) -> str:
    return "owner" if hub_role == "owner" else "annotator"


@dataclass(frozen=True)
class Invite:
    name: str
    role: str
    code: str  # shown once, never stored
    expires_at: str


def invite(store: Store, name: str, role: str, hours: float = DEFAULT_INVITE_HOURS) -> Invite:
    """A one-time code for ``name`` (an annotator record is created when missing). Inviting again replaces
    an unused code and reinstates a revoked person; a person's role must match their annotator record."""
    from dynadesk.annotation import add_annotator

    check_name(name)
    if role not in HUB_ROLES:
        raise ValidationError(f"hub role '{role}' is not one of {', '.join(HUB_ROLES)}")
    if not 0 < hours <= 24 * 30:
        raise ValidationError(f"an invite is valid for more than 0 and at most 720 hours, not {hours}")
    try:
        existing = store.annotation.get_annotator(name)
    except NotFoundError:
        add_annotator(store, name, store_role(role))
    else:
        if existing.role != store_role(role):
            raise ValidationError(
                f"'{name}' is an {existing.role} in this workspace; invite them with --role "
                + ("owner" if existing.role == "owner" else "annotator or validator")
                + " (a hub role never changes a local one)")
    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_CHARS))
    now = now_utc()
    expires = iso(now + timedelta(hours=hours))
    store.hub.invite(name, role, digest(code), iso(now), expires)
    return Invite(name, role, "-".join(code[i:i + 4] for i in range(0, CODE_CHARS, 4)), expires)


@dataclass(frozen=True)
class SignIn:
    token: str  # the cookie's value, shown to nobody
    session: HubSession


def sign_in(store: Store, code: str, client: str = "", hours: float = DEFAULT_SESSION_HOURS) -> SignIn:
    """Spend an invite code and open a session (valid ``hours``); :class:`HubAuthError` when the code is not
    one that works now (unknown, used, expired, or its person revoked: the message does not say which)."""
    clean = normalise_code(code if isinstance(code, str) else "")
    if len(clean) != CODE_CHARS:
        raise HubAuthError(f"an invite code has {CODE_CHARS} letters and digits (as printed by 'dynadesk hub invite')")
    token = secrets.token_urlsafe(32)
    now = now_utc()
    sid = store.hub.redeem(digest(clean), iso(now), digest(token), iso(now + timedelta(hours=hours)), client[:200])
    if sid is None:
        raise HubAuthError("this invite code does not work: it is unknown, already used, expired or revoked;"
                           " ask the lead for a new one")
    session = store.hub.session_by_token(digest(token))
    assert session is not None and session.id == sid
    return SignIn(token, session)


def session_for(store: Store, token: str | None) -> HubSession:
    """The live session a cookie's token names; :class:`HubAuthError` saying why not."""
    if not token:
        raise HubAuthError("not signed in: sign in with your invite code")
    session = store.hub.session_by_token(digest(token))
    if session is None:
        raise HubAuthError("this session is unknown: sign in with your invite code")
    if session.revoked_at is not None:
        raise HubAuthError("this session was revoked by the lead (or signed out): ask for a new invite code")
    if session.expires_at <= iso(now_utc()):
        raise HubAuthError("this session has expired: ask the lead for a new invite code")
    return session


def csrf_token(token: str) -> str:
    """The CSRF token of a session: HMAC of its own token, so it is never stored."""
    return hmac.new(token.encode(), b"dynadesk-hub csrf v1", hashlib.sha256).hexdigest()


def check_csrf(token: str, presented: str | None) -> None:
    if not presented or not hmac.compare_digest(csrf_token(token), presented):
        raise HubForbiddenError("missing or wrong CSRF token (X-CSRF-Token): reload the page")


def require_creator(session: HubSession) -> None:
    if session.role not in CREATES:
        raise HubForbiddenError(f"'{session.name}' is a {session.role} on this hub: validators judge examples,"
                                " they do not write them")


def revoke(store: Store, name: str) -> int:
    """End every session of ``name`` and spend their unused codes; how many live sessions ended."""
    return store.hub.revoke(name, iso(now_utc()))


def people(store: Store) -> list[HubPerson]:
    return store.hub.people()
