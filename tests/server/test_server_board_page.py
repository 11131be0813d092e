"""The public board page in headless Chromium (Debian chromium via Playwright) against a real server.

Two submitters, two hardware classes, a local (not sandboxed) run and Docker runs: sorting by
click and by keyboard, the URL round trip (a URL's weights give the JSON API's ranking), the
hardware-class and runner filters, the model page, and the empty tasks collapsed after the board.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from support.board import BIG, SMALL, UNUSED_SET, serve_board

from dynadesk.evaluator.environment import hardware_class_of

pytestmark = pytest.mark.browser
SMALL_CLASS = hardware_class_of({"hardware": SMALL})
BIG_CLASS = hardware_class_of({"hardware": BIG})


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    served, stop = serve_board(tmp_path_factory.mktemp("board"))
    yield served
    stop()


@pytest.fixture
def page(browser):
    p = browser.new_page(viewport={"width": 1500, "height": 1000})
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    yield p
    p.close()
    assert not errors, f"page script errors: {errors}"


def load(page, url: str) -> None:
    """Open ``url`` and wait until the board shows an answer."""
    page.goto(url)
    page.wait_for_selector("#task-sentiment[data-loaded] #board-sentiment tbody tr")


def wait_reloaded(page, before: str) -> None:
    page.wait_for_function(f"() => document.querySelector('#task-sentiment').dataset.loaded !== '{before}'")


def loaded(page) -> str:
    return page.get_attribute("#task-sentiment", "data-loaded")


def models(page) -> list[str]:
    return page.locator("#board-sentiment tbody tr[data-model]").evaluate_all("rows => rows.map(r => r.dataset.model)")


def column(page, key: str) -> list[str]:
    """The texts of one column, found by its header's data-key."""
    return page.evaluate("""key => {
        const heads = [...document.querySelectorAll('#board-sentiment thead th')];
        const i = heads.findIndex(th => th.dataset.key === key);
        const rows = document.querySelectorAll('#board-sentiment tbody tr[data-model]');
        return [...rows].map(r => r.children[i].textContent);
    }""", key)


def detail(page, key: str) -> list[str]:
    """The texts of one field of the opened row details, in row order."""
    return page.locator(f"#board-sentiment tr.row-details dd[data-key={key}]").all_inner_texts()


def query(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}


def api_order(url: str, params: dict[str, str]) -> list[str]:
    answer = requests.get(f"{url}/api/leaderboard/sentiment", params=params, timeout=10)
    assert answer.status_code == 200, answer.text
    return [r["model"] for r in answer.json()["rows"]]


def test_default_view_is_one_hardware_class_and_marks_runner_and_sandbox(page, board):
    load(page, board.url + "/")
    assert sorted(models(page)) == ["bob-local", "fast-small", "middle", "slow-accurate"]  # not the big box
    # the default class is not written into the URL: a shared link keeps following the operator's default
    assert "hardware_class" not in query(page) and page.input_value("#hardware_class") == ""
    assert page.inner_text("#hardware_class option[value='']").startswith("Default: Test CPU 2000")
    assert models(page) == api_order(board.url, {"hardware_class": SMALL_CLASS})
    page.click("#board-sentiment button.details-all")
    runner = dict(zip(models(page), detail(page, "runner")))
    sandboxed = dict(zip(models(page), column(page, "sandboxed")))
    assert runner["bob-local"] == "local" and sandboxed["bob-local"] == "NO"
    assert runner["middle"] == "docker" and sandboxed["middle"] == "yes"
    assert set(column(page, "hardware")) == {"Test CPU 2000, 2 cores, 4 GiB, no GPU, cpu declared"}  # no audit
    assert all(len(d) == 10 and d.startswith("20") for d in detail(page, "date"))
    perf_head = page.inner_text("#board-sentiment thead th[data-key=perf]")
    assert "macro_f1" in perf_head and "score" in perf_head
    assert "examples/s" in page.inner_text("#board-sentiment thead th[data-key=throughput]")
    # per-dataset columns: perf is expanded by default, throughput (one whole-run value) has none
    assert page.locator("#board-sentiment thead th.per-dataset").count() == 2
    assert page.locator("th[data-key=throughput] button.expand").count() == 0


def test_sort_by_clicking_headers(page, board):
    load(page, board.url + f"/?hardware_class={SMALL_CLASS}")
    page.click("button.sort[data-sort=throughput]")
    values = [float(v) for v in column(page, "throughput")]
    assert values == sorted(values, reverse=True) and values[0] == 3000.0
    assert page.get_attribute("th[data-key=throughput]", "aria-sort") == "descending"
    assert query(page)["sort"] == "throughput:desc"
    page.click("button.sort[data-sort=throughput]")
    assert [float(v) for v in column(page, "throughput")] == sorted(values)
    # a per-dataset column sorts too, and the rank column still shows the server's ranks
    page.click("button.sort[data-sort='perf@vader-tweets-test']")
    tweets = [float(v) for v in column(page, "perf@vader-tweets-test")]
    assert tweets == sorted(tweets, reverse=True)
    ranks = sorted(int(r) for r in column(page, "rank"))
    assert ranks == list(range(1, 5))


def test_sort_with_the_keyboard(page, board):
    load(page, board.url + f"/?hardware_class={SMALL_CLASS}")
    page.focus("button.sort[data-sort=model]")
    page.keyboard.press("Enter")
    assert models(page) == sorted(models(page))
    assert page.evaluate("() => document.activeElement.dataset.sort") == "model"  # focus stays on the header
    page.keyboard.press("Space")
    assert models(page) == sorted(models(page), reverse=True)
    assert page.get_attribute("th[data-key=model]", "aria-sort") == "descending"
    page.keyboard.press("Tab")  # the next header is reachable from the keyboard
    assert page.evaluate("() => document.activeElement.dataset.sort") == "dynascore"
    page.focus("button.expand[data-expand=robustness]")
    page.keyboard.press("Enter")
    assert page.locator("th.per-dataset").count() == 4 and "robustness" in query(page)["expand"]


def test_url_with_weights_gives_the_apis_ranking(page, board, browser):
    # Dynaboard's rule (rates from the rows in view): this board's task rates leave throughput without a rate
    params = {"weight.perf": "0.5", "weight.throughput": "5", "weight.memory": "0", "dataset.vader-tweets-test": "0",
              "hardware_class": "all", "rates": "dynaboard"}
    default = api_order(board.url, {"hardware_class": "all", "rates": "dynaboard"})
    weighted = api_order(board.url, params)
    assert weighted != default  # the weights matter, so the round trip below can fail
    load(page, board.url + "/?task=sentiment&" + "&".join(f"{k}={v}" for k, v in params.items()))
    assert models(page) == weighted
    assert page.input_value("input[data-kind=metric][data-name=throughput]") == "5"
    assert page.input_value("input[data-kind=dataset][data-name=vader-tweets-test]") == "0"
    # a slider move goes into the URL; that URL, opened afresh, shows the same ranking
    before = loaded(page)
    page.fill("input[data-kind=metric][data-name=perf]", "5")
    wait_reloaded(page, before)
    shown = models(page)
    assert query(page)["weight.perf"] == "5"
    assert shown == api_order(board.url, {**params, "weight.perf": "5"}) and shown != weighted
    other = browser.new_page()
    load(other, page.url)
    assert models(other) == shown
    other.close()


def test_filters_hardware_class_and_runner(page, board):
    load(page, board.url + "/")
    options = page.locator("#hardware_class option").all_inner_texts()
    assert any("Test CPU 9000" in o for o in options) and any("NOT comparable" in o for o in options)
    assert page.locator(".comparability").is_hidden()
    before = loaded(page)
    page.select_option("#hardware_class", BIG_CLASS)
    wait_reloaded(page, before)
    assert models(page) == ["bob-bigbox"] and query(page)["hardware_class"] == BIG_CLASS
    before = loaded(page)
    page.select_option("#hardware_class", "all")
    wait_reloaded(page, before)
    assert len(models(page)) == 5
    warning = page.inner_text(".comparability")
    assert page.locator(".comparability").is_visible() and "not comparable" in warning
    assert "not comparable" in page.inner_text("th[data-key=throughput]")
    assert "not comparable" not in page.inner_text("th[data-key=perf]")
    before = loaded(page)
    page.select_option("#runner", "local")
    wait_reloaded(page, before)
    assert models(page) == ["bob-local"] and query(page)["runner"] == "local"
    before = loaded(page)
    page.select_option("#runner", "")
    wait_reloaded(page, before)
    page.select_option("#sandboxed", "yes")
    page.wait_for_function("() => document.querySelectorAll('#board-sentiment tbody tr').length === 4")
    assert "bob-local" not in models(page) and set(column(page, "sandboxed")) == {"yes"}


def test_charts_show_the_servers_numbers(page, board):
    load(page, board.url + f"/?hardware_class={SMALL_CLASS}")
    answer = requests.get(f"{board.url}/api/leaderboard/sentiment",
                          params={"hardware_class": SMALL_CLASS, "stability": "yes"}, timeout=10).json()
    page.click("#board-sentiment button.details-all")  # the score breakdown is in each row's details
    bars = page.locator("#board-sentiment svg.breakdown")
    assert bars.count() == 4
    first = answer["rows"][0]
    label = page.locator(f"#board-sentiment tr[data-details-for='{first['row_id']}'] svg.breakdown").get_attribute(
        "aria-label")
    assert label.startswith(f"Dynascore {first['dynascore']:.2f}")
    ref = answer["breakdown_reference"]  # issue 44: the parts are drawn against the named reference row
    assert label.startswith(f"Dynascore {first['dynascore']:.2f}; against {ref['label']} ({ref['kind']}):")
    for metric, part in first["relative_contributions"].items():
        assert f"{metric} {'+' if part >= 0 else ''}{part:.2f}" in label
    segments = page.locator(f"#board-sentiment tr[data-details-for='{first['row_id']}'] svg.breakdown rect")
    assert segments.count() == sum(1 for v in first["relative_contributions"].values() if v)
    ranges = page.locator("svg.stability g").evaluate_all(
        "gs => gs.map(g => [g.dataset.model, +g.dataset.min, +g.dataset.max])")
    expected = [[r["model"], r["stability"]["min_rank"], r["stability"]["max_rank"]] for r in answer["rows"]]
    assert ranges == expected and any(lo != hi for _, lo, hi in ranges)


def test_model_page_shows_provenance(page, board):
    load(page, board.url + f"/?hardware_class={SMALL_CLASS}")
    bundle_id = board.bundles["alice/slow-accurate"]
    page.click("#board-sentiment tr[data-model=slow-accurate] td.model a")
    page.wait_for_url(f"**/models/{bundle_id}")
    payload = requests.get(f"{board.url}/api/bundles/{bundle_id}", timeout=10).json()["payload"]
    text = page.inner_text("main")
    assert "slow-accurate" in text and payload["model"]["digest"] in text
    for d in payload["datasets"]:
        assert d["name"] in text and d["digest"] in text
    assert payload["evaluator"]["image_digest"] in text and payload["evaluator"]["version"] in text
    assert payload["predictions"]["merkle_root"] in text
    assert "Test CPU 2000, 2 cores, 4 GiB, no GPU, cpu" in text and "docker, sandboxed" in text
    for section in ("#environment", "#seeds", "#settings", "#tolerances", "#audit"):
        assert page.locator(section).count() == 1
    assert "13" in page.inner_text("#seeds") and "batch_size" in page.inner_text("#settings summary")
    assert page.locator("#environment details").evaluate("d => d.open") is False  # long: folded, one click away
    page.click("#environment summary")
    assert "Test CPU 2000" in page.inner_text("#environment table")
    assert "throughput" in page.inner_text("#tolerances") and "Not audited" in page.inner_text("#audit")
    metrics = page.inner_text("#metrics")
    assert "vader-movies-test" in metrics and "whole run" in metrics and "78" in metrics  # perf on tweets: 75 + 3
    entry = next(e for e in requests.get(f"{board.url}/api/log", timeout=10).json()["entries"]
                 if e["bundle_id"] == bundle_id)
    log_text = page.inner_text("#log-entry")
    assert entry["entry_hash"] in log_text and str(entry["seq"]) in log_text
    assert "Rank" in page.inner_text(".standing")
    page.click("text=raw JSON")
    assert page.url.endswith(f"/api/bundles/{bundle_id}")
    page.go_back()
    page.click("#summary >> text=readable bundle")
    assert payload["predictions"]["merkle_root"] in page.inner_text("#payload")
    page.click("nav >> text=Transparency log")
    assert page.locator(f"#seq-{entry['seq']}").count() == 1


def test_empty_tasks_collapse_after_the_board_and_unused_datasets_get_no_slider(page, board):
    load(page, board.url + "/")
    tabs = page.locator("#tabs [role=tab]")
    assert tabs.count() == 1 and "5 models" in tabs.inner_text()
    assert tabs.get_attribute("aria-selected") == "true" and tabs.get_attribute("id") == "tab-sentiment"
    empties = page.locator("#empty-tasks details.empty-task")
    assert sorted(empties.evaluate_all("ds => ds.map(d => d.id)")) == ["task-hate_speech", "task-nli", "task-qa"]
    assert empties.evaluate_all("ds => ds.map(d => d.open)") == [False, False, False]
    assert all("no submissions yet" in t for t in empties.locator("summary").all_inner_texts())
    assert page.locator("#empty-tasks input").count() == 0
    after = page.evaluate("() => !!(document.querySelector('#board').compareDocumentPosition("
                          "document.querySelector('#empty-tasks')) & Node.DOCUMENT_POSITION_FOLLOWING)")
    assert after
    sliders = page.locator("input[data-kind=dataset]").evaluate_all("xs => xs.map(x => x.dataset.name)")
    assert sliders == ["vader-movies-test", "vader-tweets-test"] and UNUSED_SET not in sliders
    page.click("#task-nli summary")
    assert page.locator("#task-nli").evaluate("d => d.open")
    page.click("#task-nli >> text=Open this board")
    page.wait_for_selector("section#task-nli[data-loaded]")
    assert "No submissions yet on this board" in page.inner_text("section#task-nli")
    assert page.locator("section#task-nli tbody tr").count() == 0
    assert "task-nli" not in page.locator("#empty-tasks details").evaluate_all("ds => ds.map(d => d.id)")


def test_bad_links_say_what_is_wrong(page, board):
    for path, status, words in (("/?task=nope", 404, "no task 'nope'"),
                                ("/?weight.throughput=lots", 400, "'weight.throughput' must be a number"),
                                ("/?hardware_class=vax", 400, "hardware class 'vax'"),
                                ("/models/" + "0" * 64, 404, "no accepted bundle"),
                                ("/models/nothex", 400, "64 lowercase hex")):
        answer = page.goto(board.url + path)
        assert answer.status == status, path
        assert words in page.inner_text("[role=alert]"), path
