"""The app's import box refuses a lone quote that would merge rows (naming its line), reads it as text when
"quotes are text" is ticked, and says which splits a DynaHate-style file holds (pytest-qt, offscreen)."""

from __future__ import annotations

import pytest
from test_gui_import_formats import _import

pytestmark = pytest.mark.qt

TWEETS = "id\tstatement\tlabel\nt1\tgreat film\tpositive\nt2\t\"so-called fun\tnegative\nt3\tfine\tneutral\n"


def test_a_lone_quote_is_refused_in_the_app_and_read_as_text_when_asked(gui, qtbot, tmp_path):
    services, window = gui
    page = window.show_page("tasks_data")
    path = tmp_path / "tweets.tsv"
    path.write_text(TWEETS, encoding="utf-8")
    _import(qtbot, page, path, "sentiment")
    assert page.banner.kind == "error"
    assert any(p.startswith("line 3: a cell opens a quote") for p in
               [page.problems.item(i).text() for i in range(page.problems.count())])
    page.import_quotes_text.setChecked(True)
    _import(qtbot, page, path, "sentiment")
    assert page.banner.kind == "ok", page.banner.text()
    examples = services.ws.store.datasets.examples("tweets")
    assert [(e["id"], e["label"]) for e in examples] == [("t1", "positive"), ("t2", "negative"), ("t3", "neutral")]


def test_the_app_says_which_splits_a_file_holds(gui, qtbot, tmp_path):
    _, window = gui
    page = window.show_page("tasks_data")
    path = tmp_path / "dh.csv"
    path.write_text('"","acl.id","text","label","split"\n"1","a1","they are vermin","hate","train"\n'
                    '"2","a2","I love my neighbours","nothate","test"\n', encoding="utf-8")
    _import(qtbot, page, path, "hate_speech")
    assert page.banner.kind == "ok", page.banner.text()
    assert "splits in the file: train 1, test 1 (the test rows imported)" in page.banner.text()
