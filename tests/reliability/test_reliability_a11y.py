"""Accessibility of the public board page (issue 38): axe-core in headless chromium, and the keyboard.

axe-core (the engine browsers' own accessibility tools use; bundled by ``axe-playwright-python``, no
download) runs on the board page, on the page after a slider moved and a tab changed (the re-rendered
table), and on a model page: no violation of impact "serious" or "critical" may remain. The keyboard walk
then presses Tab through the page and checks that every weight slider, every link in the table and
every filter control receives focus, each with an accessible name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from support.board import serve_board

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

BLOCKING = ("serious", "critical")


@pytest.fixture(scope="module")
def board(tmp_path_factory) -> Iterator[Any]:
    served, stop = serve_board(tmp_path_factory.mktemp("a11y"))
    yield served
    stop()


def _axe(page: Any) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it is now (WCAG 2.x A/AA and best practice rules)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, options={"resultTypes": ["violations"],
                                       "runOnly": {"type": "tag",
                                                   "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa",
                                                              "best-practice"]}})
    return list(results.response["violations"])


def _blocking(violations: list[dict[str, Any]]) -> list[str]:
    return [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
            for v in violations if v.get("impact") in BLOCKING]


def test_board_page_has_no_serious_or_critical_axe_violations(board, browser, tmp_path) -> None:
    page = browser.new_page()
    page.goto(board.url + "/")
    page.wait_for_selector("table tbody tr")
    first = _axe(page)
    report = {"page": "/", "violations": first}
    slider = page.locator("input[type=range], input[data-kind=metric]").first
    slider.fill("3")
    page.wait_for_timeout(300)
    after_slider = _axe(page)
    model_link = page.locator("table tbody tr td a[href^='/models/']").first.get_attribute("href")
    page.goto(board.url + model_link)
    page.wait_for_load_state("networkidle")
    model_page = _axe(page)
    (tmp_path / "axe-report.json").write_text(json.dumps(
        {"board": first, "after_slider": after_slider, "model_page": model_page}, indent=1), encoding="utf-8")
    print("axe violations by impact:", {name: sorted({v["impact"] for v in vs}) for name, vs in
                                        (("board", first), ("after_slider", after_slider),
                                         ("model_page", model_page))})
    assert _blocking(first) == [], report
    assert _blocking(after_slider) == []
    assert _blocking(model_page) == []
    page.close()


def test_every_control_and_link_is_reachable_by_keyboard_with_a_name(board, browser) -> None:
    page = browser.new_page()
    page.goto(board.url + "/")
    page.wait_for_selector("table tbody tr")
    wanted = page.evaluate(
        """() => Array.from(document.querySelectorAll('input, select, button, table a[href]'))
                 .filter(e => e.offsetParent !== null && !e.disabled)
                 .map(e => e.id || e.getAttribute('data-name') || e.getAttribute('href')
                           || e.outerHTML.slice(0, 80))""")
    assert wanted, "the page has no controls"
    reached: list[dict[str, str]] = []
    for _ in range(len(wanted) * 3 + 20):
        page.keyboard.press("Tab")
        info = page.evaluate(
            """() => { const e = document.activeElement; if (!e || e === document.body) return null;
                 const label = e.labels && e.labels.length ? e.labels[0].innerText : '';
                 return {key: e.id || e.getAttribute('data-name') || e.getAttribute('href') || e.outerHTML.slice(0, 80),
                         name: (e.getAttribute('aria-label') || label || e.innerText || e.title || '').trim()}; }""")
        if info is not None:
            reached.append(info)
    keys = {r["key"] for r in reached}
    unreached = [w for w in wanted if w not in keys]
    assert unreached == [], f"not reachable with Tab: {unreached[:10]}"
    nameless = sorted({r["key"] for r in reached if not r["name"]})
    assert nameless == [], f"focusable without an accessible name: {nameless[:10]}"
    page.close()
