"""Local annotator profiles (several per machine) and the active one.

Every example and validation records its annotator's name, so names are the
identity that travels in pack files; roles decide vote weight (an owner's
single vote settles an example).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dynadesk.errors import AnnotationError, NotFoundError, ValidationError
from dynadesk.names import check_name as check_any_name
from dynadesk.store.annotation import ROLES, Annotator

if TYPE_CHECKING:
    from dynadesk.store import Store

ACTIVE_KEY = "annotation.active_annotator"
MAX_ANNOTATOR_CHARS = 64


def check_name(name: str, where: str = "annotator name") -> str:
    """The shared name rule (:func:`dynadesk.names.check_name`), at most 64 characters."""
    return check_any_name(name, where, MAX_ANNOTATOR_CHARS)


def add_annotator(store: Store, name: str, role: str = "annotator") -> Annotator:
    """Create a profile; the first one created becomes the active annotator."""
    from dynadesk.annotation.pack_identity import check_local_name

    check_name(name)
    check_local_name(name)
    if role not in ROLES:
        raise ValidationError(f"role '{role}' is not one of {', '.join(ROLES)}")
    ann = store.annotation.add_annotator(name, role)
    store.annotation.meta_get_or_create(ACTIVE_KEY, name)
    return ann


def list_annotators(store: Store) -> list[Annotator]:
    """The people of this machine (pack identities, ``name@pack:<key>``, are not people one can act as)."""
    from dynadesk.annotation.pack_identity import is_pack_identity

    return [a for a in store.annotation.list_annotators() if not is_pack_identity(a.name)]


def use_annotator(store: Store, name: str) -> Annotator:
    """Make ``name`` the active annotator (the default for create/validate)."""
    ann = resolve_annotator(store, name)
    store.set_meta(ACTIVE_KEY, name)
    return ann


def active_annotator(store: Store) -> Annotator | None:
    name = store.get_meta(ACTIVE_KEY)
    if not name:
        return None
    try:
        return store.annotation.get_annotator(name)
    except NotFoundError:  # a stale pointer means "none active"
        return None


def resolve_annotator(store: Store, name: str | None) -> Annotator:
    """The named annotator, or the active one when ``name`` is None; never a pack identity (acting as one here
    would use up the votes of a person on another machine)."""
    from dynadesk.annotation.pack_identity import is_pack_identity

    if name:
        if is_pack_identity(name):
            raise AnnotationError(f"'{name}' is a pack identity (votes merged from another machine's pack): nobody"
                                  " creates or validates as it here; pick a person of this machine")
        return store.annotation.get_annotator(name)
    ann = active_annotator(store)
    if ann is None:
        raise AnnotationError("no annotator given and none is active: add one with 'dynadesk annotators add NAME'"
                              " or pick one with 'dynadesk annotators use NAME'")
    return ann
