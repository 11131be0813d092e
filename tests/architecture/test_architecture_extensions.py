"""The public extension surface (issue 48 item 6): one registry shape for runners, metrics, data formats, task kinds
and model kinds (evaluator/registry.py); third-party entries through Python entry points, proven with a real
distribution (a ``.dist-info`` with ``entry_points.txt``) on the path, in this process and in a fresh ``dynadesk``
process; every registry walked; the surface modules' ``__all__`` pinned (httpx's exported-members test)."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys

import pytest
from support import REPO

import dynadesk.evaluator  # noqa: F401  (registers the model kinds kept in their own modules)
from dynadesk.evaluator.kinds import KINDS
from dynadesk.evaluator.metric_registry import METRICS
from dynadesk.evaluator.model_kinds import MODEL_KINDS
from dynadesk.evaluator.registry import ENTRY_POINT_GROUPS, Registry, RegistryError, registries
from dynadesk.formats import FORMATS
from dynadesk.orchestration.runner_registry import RUNNERS, runner_class, runner_spec

PLUGIN_HOST = '''
from dynadesk.formats.base import Format, SourceRow, convert_native
from dynadesk.orchestration.runner_registry import RunnerSpec

RUNNER = RunnerSpec("toyplug", "Toy plugin runner", False, "dynadesk.orchestration.runners:LocalRunner",
                    help="a plugin's runner")


def read_pipe_rows(path, problems):
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        label, _, text = line.partition("|")
        yield SourceRow(f"line {n}", {"statement": text, "label": label}, str(n))


FORMAT = Format("toyplug", "label|text lines (a plugin's)", read_pipe_rows, convert_native, ("sentiment",),
                detect=lambda sniff: sniff.suffix == ".toyplug")
'''

# What runs inside the image too imports only the evaluator (rule 1): the metric, the task kind, the model kind.
PLUGIN_WORKER = '''
from dynadesk.evaluator.kinds import LabelKind
from dynadesk.evaluator.metric_registry import SHARED, MetricDef
from dynadesk.evaluator.model_kinds import ModelKind

METRIC = MetricDef("toyplug_ms", "ms", SHARED, False, tolerance=0.5)


class ToyKind(LabelKind):
    name = "toyplug"


KIND = ToyKind()
MODEL_KIND = ModelKind("toyplug", factory=lambda *a, **k: None, check=lambda manifest: [])
'''

ENTRY_POINTS = {"runners": "toyplug = toyplug.host:RUNNER", "metrics": "toyplug_ms = toyplug.worker:METRIC",
                "formats": "toyplug = toyplug.host:FORMAT", "task_kinds": "toyplug = toyplug.worker:KIND",
                "model_kinds": "toyplug = toyplug.worker:MODEL_KIND"}
BY_NAME = {"runners": RUNNERS, "metrics": METRICS, "formats": FORMATS, "task_kinds": KINDS,
           "model_kinds": MODEL_KINDS}


@pytest.fixture
def plugin_dir(tmp_path):
    """An installed distribution ``toyplug`` in a folder of its own: its module and its ``.dist-info`` with one
    entry point in each of DynaDesk's groups."""
    site = tmp_path / "site"
    (site / "toyplug").mkdir(parents=True)
    (site / "toyplug" / "__init__.py").write_text("", encoding="utf-8")
    (site / "toyplug" / "host.py").write_text(PLUGIN_HOST, encoding="utf-8")
    (site / "toyplug" / "worker.py").write_text(PLUGIN_WORKER, encoding="utf-8")
    info = site / "toyplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplug\nVersion: 0.1\n", encoding="utf-8")
    groups = "".join(f"[{ENTRY_POINT_GROUPS[r]}]\n{line}\n\n" for r, line in ENTRY_POINTS.items())
    (info / "entry_points.txt").write_text(groups, encoding="utf-8")
    return site


@pytest.fixture
def installed(plugin_dir, monkeypatch):
    """The plugin's folder on sys.path and every registry's entry points read again; afterwards both undone."""
    # read before the plugin is on the path: a registry's first read scans the entry points, so a run of this test
    # alone would otherwise find the plugin there already
    before = {name: set(reg) for name, reg in BY_NAME.items()}
    monkeypatch.syspath_prepend(str(plugin_dir))
    added = {name: reg.discover() for name, reg in BY_NAME.items()}
    yield added
    for name, reg in BY_NAME.items():
        for entry in set(reg) - before[name]:
            del reg[entry]
    for module in ("toyplug", "toyplug.host", "toyplug.worker"):
        sys.modules.pop(module, None)


def test_every_extension_point_has_one_registry_of_the_one_shape():
    assert set(registries()) == set(ENTRY_POINT_GROUPS) == set(BY_NAME)
    for name, reg in BY_NAME.items():
        assert isinstance(reg, Registry) and registries()[name] is reg and reg.group == ENTRY_POINT_GROUPS[name]


@pytest.mark.parametrize("name", sorted(ENTRY_POINT_GROUPS))
def test_walk_every_registry(name):
    """Every entry of every registry loads, is of the registry's type and passes its check; and what each kind of
    entry points at exists (a runner's class, a task kind's metrics, a format's reader, a model kind's loader)."""
    reg = registries()[name]
    assert len(reg) >= 2
    for key in reg:
        entry = reg[key]
        assert isinstance(entry, reg.kind) and getattr(entry, "name", key) == key
        if name == "runners":
            assert inspect.isclass(runner_class(key))
        elif name == "task_kinds":
            assert set(entry.metrics) <= set(METRICS), (key, entry.metrics)
        elif name == "formats":
            assert callable(entry.read) and callable(entry.convert)
        elif name == "model_kinds":
            assert callable(entry.factory) and callable(entry.check)


def test_a_plugins_entry_points_fill_every_registry(installed):
    assert installed == {"runners": ["toyplug"], "metrics": ["toyplug_ms"], "formats": ["toyplug"],
                         "task_kinds": ["toyplug"], "model_kinds": ["toyplug"]}
    host, worker = importlib.import_module("toyplug.host"), importlib.import_module("toyplug.worker")
    assert RUNNERS["toyplug"] is host.RUNNER and runner_spec("toyplug").label == "Toy plugin runner"
    assert METRICS["toyplug_ms"] is worker.METRIC and FORMATS["toyplug"] is host.FORMAT
    assert KINDS["toyplug"] is worker.KIND and MODEL_KINDS["toyplug"] is worker.MODEL_KIND
    assert RUNNERS.origin("toyplug") == "entry point toyplug = toyplug.host:RUNNER of toyplug"
    assert RUNNERS.origin("docker") == "built in"


def test_a_built_in_name_wins_over_a_plugins(plugin_dir, monkeypatch):
    info = plugin_dir / "toyplug-0.1.dist-info" / "entry_points.txt"
    info.write_text("[dynadesk.runners]\ndocker = toyplug.host:RUNNER\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(plugin_dir))
    builtin = RUNNERS["docker"]
    assert RUNNERS.discover() == [] and RUNNERS["docker"] is builtin


def test_a_broken_plugin_is_refused_by_name(plugin_dir, monkeypatch):
    """An entry point naming a module that is not there, or an object of the wrong type: one line naming the
    entry, its distribution and what is wrong; nothing else in the registry is affected."""
    info = plugin_dir / "toyplug-0.1.dist-info" / "entry_points.txt"
    info.write_text("[dynadesk.runners]\nbroken = toyplug_missing:RUNNER\nwrong = toyplug.worker:METRIC\n",
                    encoding="utf-8")
    monkeypatch.syspath_prepend(str(plugin_dir))
    assert sorted(RUNNERS.discover()) == ["broken", "wrong"]
    try:
        with pytest.raises(RegistryError, match=r"runner 'broken' \(entry point broken = toyplug_missing:RUNNER of "
                                                r"toyplug\): cannot import toyplug_missing:RUNNER"):
            RUNNERS["broken"]
        with pytest.raises(Exception, match=r"runner 'wrong' .* is a MetricDef, not a RunnerSpec"):
            runner_spec("wrong")
        assert runner_spec("local").name == "local"
    finally:
        del RUNNERS["broken"], RUNNERS["wrong"]
        for module in ("toyplug", "toyplug.host", "toyplug.worker"):
            sys.modules.pop(module, None)


def test_a_fresh_dynadesk_process_finds_the_plugin_with_no_edit(plugin_dir, tmp_path):
    """The real CLI in its own process, the plugin only on PYTHONPATH: ``--runner`` offers the plugin's runner and
    ``data import`` detects and reads the plugin's format."""
    env = {**os.environ, "PYTHONPATH": str(plugin_dir), "DYNADESK_HOME": str(tmp_path / "ws")}
    dynadesk = [sys.executable, "-m", "dynadesk.cli"] if not (REPO / ".venv/bin/dynadesk").exists() \
        else [str(REPO / ".venv/bin/dynadesk")]
    shown = subprocess.run([*dynadesk, "eval", "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert shown.returncode == 0 and "toyplug" in shown.stdout, shown.stdout + shown.stderr
    data = tmp_path / "reviews.toyplug"
    data.write_text("positive|a fine film\nnegative|a dull book\n", encoding="utf-8")
    out = subprocess.run([*dynadesk, "data", "import", str(data), "--task", "sentiment", "--name", "plug", "--json"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["format"] == "toyplug"
    without = subprocess.run([*dynadesk, "eval", "--help"], capture_output=True, text=True, timeout=120,
                             env={**env, "PYTHONPATH": ""})
    assert "toyplug" not in without.stdout


# The public surface a plugin author builds on: module -> its __all__, pinned. Changing it is deliberate: edit here.
SURFACE = {
    "dynadesk.evaluator.registry": ["ENTRY_POINT_GROUPS", "Registry", "RegistryError", "registries"],
    "dynadesk.orchestration.runner_registry": ["RUNNERS", "RunnerSpec", "register_runner", "runner_class",
                                               "runner_help", "runner_names", "runner_spec"],
    "dynadesk.evaluator.metric_registry": ["AGGREGATES", "METRICS", "SCOPES", "SHARED", "TASK", "UNIT_RANGES",
                                           "DynascoreDefault", "MetricDef", "UnitsView", "dynascore_defaults",
                                           "is_deterministic", "load_independent", "metric_def", "over_test_sets",
                                           "register_metric", "run_value", "shared_metrics", "timed_metrics",
                                           "tolerances"],
    "dynadesk.formats": ["FORMATS", "Format", "Mapping", "ReadResult", "Sniff", "detect_format", "parse_pairs",
                         "read_examples", "register_format"],
    "dynadesk.evaluator.kinds": ["FOOLED_RULES", "KINDS", "FooledTest", "LabelKind", "OutputKind", "SpanKind",
                                 "kind_of"],
    "dynadesk.evaluator.model_kinds": ["MODEL_KINDS", "ModelKind"],
}


@pytest.mark.parametrize("module", sorted(SURFACE))
def test_the_extension_surface_is_pinned(module):
    """httpx's exported-members test: ``__all__`` is exactly the pinned list, every name in it exists, and every
    public class or function the module defines is in it (nothing public by accident)."""
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(SURFACE[module])
    assert all(hasattr(mod, name) for name in mod.__all__)
    defined = {name for name, value in vars(mod).items() if not name.startswith("_")
               and (inspect.isclass(value) or inspect.isfunction(value)) and value.__module__ == mod.__name__}
    assert defined <= set(mod.__all__), sorted(defined - set(mod.__all__))


def test_the_contributor_guide_names_the_entry_point_groups():
    guide = (REPO / "DEVELOPERS.md").read_text(encoding="utf-8")
    missing = [group for group in ENTRY_POINT_GROUPS.values() if f"`{group}`" not in guide]
    assert not missing, missing

