"""The optional ``guidelines`` of a task file: what annotators read before writing (issue 47).

::

    guidelines:
      text: "Write one short statement a reader would label without doubt ..."
      good: [{text: "the food was cold but the staff apologised twice", label: neutral, why: "..."}]
      bad: [{text: "bad", why: "one word: no model learns from it"}]

Kept apart from the task's definition: guidelines never change a task's digest (two labs with different
advice still score the same task), so :meth:`dynadesk.tasks.Task.to_dict` leaves them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dynadesk.errors import ConfigError

MAX_EXAMPLES = 20


@dataclass(frozen=True)
class GuideExample:
    text: str
    why: str = ""
    label: str = ""


@dataclass(frozen=True)
class Guidelines:
    text: str = ""
    good: tuple[GuideExample, ...] = ()
    bad: tuple[GuideExample, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "good": [e.__dict__ for e in self.good], "bad": [e.__dict__ for e in self.bad]}


def _examples(raw: Any, where: str) -> tuple[GuideExample, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > MAX_EXAMPLES:
        raise ConfigError(f"{where} must be a list of at most {MAX_EXAMPLES} mappings {{text, why, label}}")
    out = []
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or set(e) - {"text", "why", "label"} or not isinstance(e.get("text"), str) \
                or not all(isinstance(e.get(k, ""), str) for k in ("why", "label")):
            raise ConfigError(f"{where}[{i}] must be a mapping with 'text' (and optional 'why', 'label'), all text")
        out.append(GuideExample(e["text"].strip(), e.get("why", "").strip(), e.get("label", "").strip()))
    return tuple(out)


def parse_guidelines(raw: Any, source: str) -> Guidelines | None:
    """The task file's ``guidelines`` mapping, checked; None when the file has none."""
    if raw is None:
        return None
    where = f"{source}: guidelines"
    if not isinstance(raw, dict) or set(raw) - {"text", "good", "bad"}:
        raise ConfigError(f"{where} must be a mapping with 'text', 'good' and 'bad' (lists of examples)")
    text = raw.get("text", "")
    if not isinstance(text, str):
        raise ConfigError(f"{where}.text must be text")
    return Guidelines(text.strip(), _examples(raw.get("good"), f"{where}.good"), _examples(raw.get("bad"),
                                                                                           f"{where}.bad"))
