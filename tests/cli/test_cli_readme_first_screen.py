"""The README's opening screen (issue 47): what DynaDesk is, the two set-up commands, one picture of the product,
and no timing table before it (the timing history lives in docs/performance-history.md, linked)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_opening_screen_shows_the_commands_and_a_picture_before_any_table():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    picture = re.search(r"!\[[^\]]*\]\((docs/screenshots/[^)]+\.png)\)", text)
    assert picture and (REPO / picture.group(1)).is_file()
    head = text[:picture.start()]
    assert len(head.splitlines()) <= 40, "the picture must be on the first screen"
    assert "make demo" in head and "make test" in head and "offline-first evaluation appliance" in head
    assert "|---" not in head  # no table (the timing history) before the picture
    assert "(docs/performance-history.md)" in text
    history = (REPO / "docs" / "performance-history.md").read_text(encoding="utf-8")
    for fact in ("21:16", "474.2", "856.9", "15,734", "1,008 s wall", "bench/bench_firstrun.py"):
        assert fact in history, fact
