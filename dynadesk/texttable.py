"""Plain aligned text tables, as lines: what the desktop CLI and the server's admin CLI both print.

Kept apart from ``dynadesk.cli`` (and from click) so the leaderboard server can print a table without importing
the desktop CLI and, through it, the workspace store."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["table_lines"]


def table_lines(headers: Sequence[object], rows: Sequence[Sequence[object]]) -> list[str]:
    """The header, a rule and one line a row; the first column and text left-aligned, numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    out = []
    for j, r in enumerate(cells):
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) if _numeric(c) else c.ljust(w)
                             for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _numeric(s: str) -> bool:
    try:
        float(s.rstrip("%"))
        return True
    except ValueError:
        return False
