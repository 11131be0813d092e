"""Boards rank measured metrics within one hardware class: by default the class with the most models,
any class present on request, or all classes with a plain note that measured metrics do not compare.
The CLI, the library and the app's selector agree."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dynadesk.errors import ValidationError
from dynadesk.store.evaluations import MetricValue, RunChange

UNITS = {"perf": "%", "throughput": "examples/s", "memory": "GiB", "robustness": "%", "fairness": "%"}


def _env(cpu: str) -> dict:
    return {"hardware": {"cpu_model": cpu, "cores": 2, "memory_limit_gib": 4, "gpus": "none", "runtime": "cpu"}}


X = "cpu=Laptop CPU;cores=2;memory=4GiB;gpus=none;runtime=cpu"
Y = "cpu=Server CPU;cores=2;memory=4GiB;gpus=none;runtime=cpu"


def _run(store, model: str, cpu: str, perf: float, throughput: float) -> int:
    rec = store.models.get(model) if store.models.exists(model) else store.models.add(
        model, "sentiment", "majority", f"/nonexistent/{model}", f"sha256:{model:0<64}"[:71], {})
    run = store.evaluations.create(rec.id, "sentiment", runner="local", sandboxed=False, datasets=[], status="running")
    values = {"perf": perf, "throughput": throughput, "memory": 1.0, "robustness": 90.0, "fairness": 90.0}
    store.evaluations.set_metrics(run, [MetricValue("", m, v, UNITS[m], m not in ("throughput", "memory"))
                                        for m, v in values.items()], RunChange(environment=_env(cpu)),
                                  status="succeeded")
    return run


@pytest.fixture
def board_store(store):
    _run(store, "alpha", "Laptop CPU", 80.0, 100.0)
    _run(store, "beta", "Laptop CPU", 70.0, 300.0)
    _run(store, "alpha", "Server CPU", 80.0, 900.0)  # the same model measured on a faster machine
    _run(store, "gamma", "Server CPU", 75.0, 1000.0)
    return store


def test_default_class_explicit_class_and_all_classes(board_store):
    from dynadesk.scoring.leaderboard import ALL_CLASSES, NOT_COMPARABLE, build_leaderboard

    assert board_store.evaluations.hardware_classes("sentiment") == {X: 2, Y: 2}
    default = build_leaderboard(board_store, "sentiment")
    assert default.hardware_class == X  # a tie goes to the first class in order: stable
    assert sorted(r.model for r in default.rows) == ["alpha", "beta"]
    assert {r.model: r.values["throughput"] for r in default.rows} == {"alpha": 100.0, "beta": 300.0}
    assert not any("not comparable" in n for n in default.notes)

    server = build_leaderboard(board_store, "sentiment", hardware_class=Y)
    assert {r.model: r.values["throughput"] for r in server.rows} == {"alpha": 900.0, "gamma": 1000.0}

    every = build_leaderboard(board_store, "sentiment", hardware_class=ALL_CLASSES)
    assert sorted(r.model for r in every.rows) == ["alpha", "beta", "gamma"]
    assert every.notes[0] == NOT_COMPARABLE.format(n=2)
    with pytest.raises(ValidationError, match="has no runs on this board .*classes present: cpu=Laptop"):
        build_leaderboard(board_store, "sentiment", hardware_class="cpu=Nowhere")


def test_cli_names_the_class_and_lists_the_others(board_store, home):
    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                               "leaderboard", "sentiment", *args], capture_output=True, text=True, timeout=120)

    out = cli()
    assert out.returncode == 0, out.stderr
    words = " ".join(out.stdout.split())  # long lines wrap to the terminal's width (120 columns in a pipe)
    assert f"hardware class: {X} (classes present: {X} [2 model(s)]; {Y} [2 model(s)])" in words
    assert "gamma" not in out.stdout
    every = cli("--hardware-class", "all")
    assert "gamma" in every.stdout and "are not comparable here" in " ".join(every.stdout.split())
    assert json.loads(cli("--hardware-class", Y, "--json").stdout)["hardware_class"] == Y
    bad = cli("--hardware-class", "cpu=Nowhere")
    assert bad.returncode != 0 and "classes present" in (bad.stdout + bad.stderr)


@pytest.mark.qt
def test_app_selector_lists_the_classes_and_reranks(require_qt, qtbot, board_store, tmp_path, home):
    from support.gui import loaded, make_window

    board_store.close()
    services, window = make_window(qtbot, tmp_path, home)
    try:
        page = window.show_page("leaderboard")
        page.select_task("sentiment")
        loaded(qtbot, page)
        items = [page.hardware_combo.itemData(i) for i in range(page.hardware_combo.count())]
        assert items == [X, Y, "all"] and page.hardware_combo.currentData() == X
        assert page.ranking() == ["alpha", "beta"]
        page.hardware_combo.setCurrentIndex(1)
        page.hardware_combo.activated.emit(1)
        loaded(qtbot, page)  # the class's runs are read off the GUI thread
        assert sorted(page.ranking()) == ["alpha", "gamma"]
        page.hardware_combo.setCurrentIndex(2)
        page.hardware_combo.activated.emit(2)
        loaded(qtbot, page)
        assert sorted(page.ranking()) == ["alpha", "beta", "gamma"]
        assert "not comparable" in page.notes.text()
    finally:
        window.close()
        services.close()
