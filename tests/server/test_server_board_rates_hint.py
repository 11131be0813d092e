"""The board page's words on who sets the exchange rates are true of the answer shown (issue 44, item 8), in headless
Chromium against a real server: under Dynaboard's rule the rows in view set them (they change with the rows shown);
with no reference rows none does; with an edition of one organisation's rows (frozen by the operator's word) that
organisation does. Seen failing first: every answer said "Set by N reference rows (...), not by the rows on this page,
so no submitter's rows move them", the Dynaboard view (its rows in view) and the empty set ("Set by 0 reference
rows") included."""

from __future__ import annotations

import pytest
from support.board import serve_board
from support.sync import admin

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    root = tmp_path_factory.mktemp("rates-hint")
    served, stop = serve_board(root)
    yield served, root
    stop()


def hint(browser, url: str) -> str:
    page = browser.new_page()
    try:
        page.goto(url)
        page.wait_for_selector("#task-sentiment[data-loaded] #board-sentiment tbody tr")
        return page.inner_text("#task-sentiment .reference-box .hint")
    finally:
        page.close()


def test_the_reference_hint_says_what_sets_the_rates(board, browser):
    board, root = board
    view = hint(browser, f"{board.url}/?rates=dynaboard&audit=all")
    assert "in view (Dynaboard's rule): they change with the rows shown" in view, view
    assert "not by the rows on this page" not in view
    empty = hint(browser, f"{board.url}/?audit=all")
    assert empty.startswith("No reference rows"), empty
    for key in ("alice/fast-small", "alice/slow-accurate", "alice/middle"):
        admin(root / "board.db", "reference", "pin", board.bundles[key])
    admin(root / "board.db", "rates", "freeze", "--task", "sentiment", "--key", str(root / "server.key"),
          "--single-organisation", "alice's rows only")
    one_org = hint(browser, f"{board.url}/?audit=all")
    assert "3 reference rows of 1 organisation, by the operator's word" in one_org, one_org
    assert "no submitter's rows move them" not in one_org
