"""One registry shape for every extension point: runners, metrics, data formats, task kinds and model kinds
(lm-evaluation-harness's ``Registry``). Standard library only: the evaluator's registries live inside the image too.

A :class:`Registry` maps a name to an entry. An entry is registered as the object itself or lazily as
``"module:attr"`` (imported when first read, so listing names loads nothing heavy). Third parties add entries with
Python entry points in the registry's group (``dynadesk.runners``, ``dynadesk.metrics``, ``dynadesk.formats``,
``dynadesk.task_kinds``, ``dynadesk.model_kinds``), no edit of DynaDesk's code::

    [project.entry-points."dynadesk.formats"]
    toy = "toy_plugin:TOY_FORMAT"

The installed entry points are read once, the first time the registry is read (:meth:`Registry.discover` reads
them again). A built-in entry of the same name wins over a plugin's; an entry is checked by the registry's
``check`` when it is added or first loaded, and an entry that cannot be imported or fails its check is refused
with a :class:`RegistryError` naming the entry, where it came from and what is wrong.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["ENTRY_POINT_GROUPS", "Registry", "RegistryError", "registries"]

T = TypeVar("T")

# The registry of each extension point -> its entry-point group.
ENTRY_POINT_GROUPS = {"runners": "dynadesk.runners", "metrics": "dynadesk.metrics", "formats": "dynadesk.formats",
                      "task_kinds": "dynadesk.task_kinds", "model_kinds": "dynadesk.model_kinds"}


class RegistryError(LookupError):
    """An unknown name, or an entry that cannot be loaded or is not what the registry holds."""


@dataclass(frozen=True)
class _Lazy:
    """A ``"module:attr"`` entry not imported yet, and where it came from (built in, or a distribution's name)."""

    target: str
    origin: str

    def load(self) -> object:
        module, _, attr = self.target.partition(":")
        value: object = importlib.import_module(module)
        for part in attr.split(".") if attr else ():
            value = getattr(value, part)
        return value


_ALL: dict[str, Registry[object]] = {}
_SCANNED: dict[str, list[importlib.metadata.EntryPoint]] = {}  # group -> its installed entry points, read once


def _entry_points(group: str, rescan: bool) -> list[importlib.metadata.EntryPoint]:
    """The installed entry points of ``group``: one scan of the installed distributions serves every registry's
    first read; ``rescan`` reads them again. ``importlib.metadata.entry_points()`` keeps the first distribution of
    a name on sys.path (as import finds it) by the folder's name and reads only entry_points.txt: reading each
    distribution's METADATA for its name cost 141 ms of the app's GUI thread when the Evaluate page first asked
    for the runners (tests/gui/test_gui_stall.py)."""
    if rescan or not _SCANNED:
        _SCANNED.clear()
        installed = importlib.metadata.entry_points()  # SelectableGroups on 3.11, EntryPoints on 3.12: both have
        for name in installed.groups:  # .groups and .select
            if name.startswith("dynadesk."):
                _SCANNED[name] = list(installed.select(group=name))
    return _SCANNED.get(group, [])


def registries() -> dict[str, Registry[object]]:
    """Every registry created so far, by its name (a test walks them all)."""
    return dict(_ALL)


class Registry(MutableMapping[str, T], Generic[T]):
    """Name -> entry, read as a mapping (``registry[name]``, ``name in registry``, ``registry.values()``).

    ``kind`` is the type every entry must have; ``check(name, entry)`` returns a problem (or None) and runs once per
    entry; ``group`` is the entry-point group third parties register into."""

    def __init__(self, name: str, what: str, kind: type, *, group: str | None = None,
                 check: Callable[[str, T], str | None] | None = None) -> None:
        self.name, self.what, self.kind, self.check = name, what, kind, check
        self.group = group if group is not None else ENTRY_POINT_GROUPS.get(name)
        self._entries: dict[str, T | _Lazy] = {}
        self._origins: dict[str, str] = {}
        self._discovered = self.group is None
        _ALL[name] = self  # type: ignore[assignment]

    # -- adding ----------------------------------------------------------------------------------------------
    def add(self, name: str, entry: T | str, *, origin: str = "built in") -> None:
        """Register ``entry`` (the object, or ``"module:attr"`` to import on first read) under ``name``."""
        self._origins[name] = origin
        if isinstance(entry, str):
            if ":" not in entry:
                raise RegistryError(f"{self.what} '{name}': a lazy entry is 'module:attr', got {entry!r}")
            self._entries[name] = _Lazy(entry, origin)
        else:
            self._entries[name] = self._checked(name, entry, origin)

    def __setitem__(self, name: str, entry: T) -> None:
        self.add(name, entry)

    def __delitem__(self, name: str) -> None:
        del self._entries[name]
        self._origins.pop(name, None)

    def discover(self, rescan: bool = True) -> list[str]:
        """Read the installed entry points of this registry's group (again, unless ``rescan`` is False: then the
        process's one scan); the names added. A name already registered keeps its entry."""
        self._discovered = True
        if self.group is None:
            return []
        added = []
        for ep in _entry_points(self.group, rescan):
            if ep.name not in self._entries:
                dist = ep.dist.name if ep.dist else "an unknown distribution"
                self._entries[ep.name] = _Lazy(ep.value, f"entry point {ep.name} = {ep.value} of {dist}")
                self._origins[ep.name] = f"entry point {ep.name} = {ep.value} of {dist}"
                added.append(ep.name)
        return added

    # -- reading ---------------------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> T:
        entries = self._all()
        if name not in entries:
            raise KeyError(name)
        entry = entries[name]
        if isinstance(entry, _Lazy):
            try:
                loaded = entry.load()
            except (ImportError, AttributeError) as exc:
                raise RegistryError(f"{self.what} '{name}' ({entry.origin}): cannot import {entry.target}: {exc}"
                                    ) from exc
            entry = self._entries[name] = self._checked(name, loaded, entry.origin)
        return entry

    def get_or_fail(self, name: str) -> T:
        """``registry[name]``, or a :class:`RegistryError` naming the known ones."""
        if name not in self:
            raise RegistryError(f"unknown {self.what} '{name}' (known: {', '.join(self) or 'none'})")
        return self[name]

    def origin(self, name: str) -> str:
        """Where an entry came from: ``built in`` or the entry point and its distribution."""
        self._all()
        return self._origins.get(name, "built in")

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._all()))

    def __len__(self) -> int:
        return len(self._all())

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def __repr__(self) -> str:
        return f"Registry({self.name!r}, {list(self._entries)})"

    def _all(self) -> dict[str, T | _Lazy]:
        if not self._discovered:
            self.discover(rescan=False)
        return self._entries

    def _checked(self, name: str, entry: object, origin: str) -> T:
        if not isinstance(entry, self.kind):
            raise RegistryError(f"{self.what} '{name}' ({origin}) is a {type(entry).__name__}, not a"
                                f" {self.kind.__name__}")
        problem = self.check(name, entry) if self.check is not None else None  # type: ignore[arg-type]
        if problem:
            raise RegistryError(f"{self.what} '{name}' ({origin}): {problem}")
        return entry  # type: ignore[return-value]
