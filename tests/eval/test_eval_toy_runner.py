"""DEVELOPERS.md "a runner", followed literally: a toy runner is written, registered, and a real evaluation runs on it.

The toy runs the worker as a plain subprocess of this Python (``python -c ...`` with its own site-packages, not the
local runner's isolated view). Registered once in the runner registry, it is accepted by RunRequest, built by
make_runner, offered by the CLI and the app, recorded in the run, and signed into a bundle that verifies. Without
the registry (a runner list of its own anywhere on that path) the request, the run or the bundle would refuse it.
"""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner
from support.eval import metric, run_request, setup_workspace

from dynadesk.cli import cli
from dynadesk.errors import ConfigError
from dynadesk.orchestration import runner_registry as R
from dynadesk.orchestration.evaluate import evaluate, make_runner
from dynadesk.orchestration.folder import RunPaths
from dynadesk.orchestration.runners import LocalRunner
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format.envelope import load_and_verify
from dynadesk.sync.format.keys import generate_key
from dynadesk.workspace import Workspace

WORKER = "import sys; from dynadesk.evaluator.__main__ import main; sys.exit(main(sys.argv[1:]))"


# Step 1: subclass Runner (here LocalRunner, whose run() already watches the subprocess and its memory and issues its
# timed queries), set name and sandboxed, and say how the worker starts.
class ToySubprocessRunner(LocalRunner):
    """The worker in a plain subprocess of this Python; not sandboxed."""

    name = "toy-subprocess"
    sandboxed = False

    def command(self, paths: RunPaths) -> list[str]:
        return [self.python, "-c", WORKER, "run", "--spec", str(paths.spec_dir / "spec.json"),
                "--out", str(paths.out_dir), "--model", str(paths.model_dir), "--data", str(paths.data_dir)]


@pytest.fixture
def toy_runner(monkeypatch):
    # Step 2: register it (a built-in one: one register_runner line at the end of runner_registry.py)
    spec = R.RunnerSpec("toy-subprocess", "Toy subprocess (no sandbox)", False,
                        f"{ToySubprocessRunner.__module__}:ToySubprocessRunner", help="a plain subprocess")
    monkeypatch.setitem(R.RUNNERS, spec.name, spec)
    return spec


def test_an_unregistered_runner_is_refused_by_name():
    with pytest.raises(ConfigError, match="unknown runner 'toy-subprocess' \\(use one of docker, local, remote\\)"):
        run_request("tiny", runner="toy-subprocess")


def test_a_toy_runner_added_by_the_guide_runs_and_its_bundle_verifies(home, store, tmp_path, toy_runner):
    setup_workspace(store, tmp_path, sizes=(12,))
    ws = Workspace(home)
    request = run_request("tiny", runner="toy-subprocess", latency_samples=4, warmup=0)
    assert type(make_runner(request)) is ToySubprocessRunner and sys.executable == make_runner(request).python

    # every list derives from the registry: the CLI's --runner choices (eval, audit check, demo)
    for command in (["eval", "--help"], ["audit", "check", "--help"], ["demo", "--help"]):
        shown = CliRunner().invoke(cli, command)
        assert shown.exit_code == 0 and "toy-subprocess" in shown.output, (command, shown.output)

    rec = evaluate(store, ws, request)
    assert rec.status == "succeeded", rec.error
    assert rec.runner == "toy-subprocess" and rec.sandboxed is False
    assert 0 <= metric(rec, "macro_f1", "set0-test") <= 100 and metric(rec, "throughput") > 0
    assert rec.profile["host_bounds"]["loadgen"]["finished"]  # the host issued its timed queries, as for any runner

    generate_key(ws.keys_dir)
    out = tmp_path / "toy.bundle.json"
    bundle = create_bundle(ws, store, rec.id, out=out)
    verified = load_and_verify(bundle.raw)  # structure (the runner name's form), canonical form, signature
    assert verified.payload.to_json()["runner"] == {"kind": "toy-subprocess", "sandboxed": False}
    assert verified.payload.to_json()["request"]["runner"] == "toy-subprocess"
    shown = CliRunner().invoke(cli, ["bundle", "verify", "--json", str(out)])
    assert shown.exit_code == 0 and json.loads(shown.output)["valid"] is True, shown.output


def test_the_apps_runner_boxes_list_a_registered_runner(require_qt, toy_runner):
    from dynadesk.gui.pages.audit import runner_choices

    assert ("toy-subprocess (not sandboxed)", "toy-subprocess") in runner_choices()
    assert runner_choices()[:3] == [("as recorded", None), ("docker (sandboxed)", "docker"),
                                    ("local (not sandboxed)", "local")]
