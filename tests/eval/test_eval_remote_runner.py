"""The remote runner (issue 48 item 3): another machine is a runner, reached over a real socket.

The "other machine" is a second process on this host: the remote agent (``python -m
dynadesk.orchestration.remote_agent``) with its own work folder, listening on a loopback TCP port, running each run
with its own registered runner (``local`` here). That is the shape docs/remote-runner.md's recipe gives over SSH
(``ssh -L`` forwards the same port); this machine has no sshd (and tests cannot install one), so the SSH hop itself is
left out and the test talks to the agent's socket directly. Real processes, a real socket, no mocks: a run through
the agent is stored with the same deterministic figures and predictions as a local run of the same request.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from support.eval import deterministic_metrics, metric, predictions_bytes, run_request, setup_workspace

from dynadesk.cancel import CancelToken
from dynadesk.errors import EvaluationError
from dynadesk.orchestration.evaluate import evaluate, gpu_status, make_runner
from dynadesk.orchestration.remote_runner import ADDRESS_VAR, TOKEN_VAR, RemoteRunner
from dynadesk.orchestration.remote_wire import WireError, unpack
from dynadesk.workspace import Workspace

TOKEN = "a-throwaway-token-for-this-test-only"


@contextlib.contextmanager
def running_agent(tmp_path: Path, monkeypatch, runner: str):
    """The agent as another machine would run it: its own process, work folder and token file."""
    token_file = tmp_path / "agent-token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    work = tmp_path / "agent-work"
    proc = subprocess.Popen([sys.executable, "-m", "dynadesk.orchestration.remote_agent", "--listen", "127.0.0.1:0",
                             "--runner", runner, "--work", str(work), "--token-file", str(token_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "listening on 127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        address = line.split("listening on ", 1)[1].split()[0]
        monkeypatch.setenv(ADDRESS_VAR, address)
        monkeypatch.setenv(TOKEN_VAR, str(token_file))
        yield work
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _emptied(work: Path) -> bool:
    """The agent's work folder is empty within 10 s: it removes a run's folder just after sending the last bytes."""
    deadline = time.monotonic() + 10
    while list(work.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return list(work.iterdir()) == []


@pytest.fixture
def agent(tmp_path, monkeypatch):
    with running_agent(tmp_path, monkeypatch, "local") as work:
        yield work


def test_a_run_through_the_remote_agent_equals_a_local_run(home, store, tmp_path, agent):
    setup_workspace(store, tmp_path, sizes=(12,))
    ws = Workspace(home)
    local = evaluate(store, ws, run_request("tiny", runner="local", latency_samples=4, warmup=0))
    assert local.status == "succeeded", local.error

    request = run_request("tiny", runner="remote", latency_samples=4, warmup=0)
    assert type(make_runner(request)) is RemoteRunner
    remote = evaluate(store, ws, request)
    assert remote.status == "succeeded", remote.error
    assert remote.runner == "remote" and remote.sandboxed is False
    # the host recomputed every deterministic figure from the predictions the agent sent back: the same as local
    assert deterministic_metrics(remote) == deterministic_metrics(local) and deterministic_metrics(local)
    assert predictions_bytes(remote) == predictions_bytes(local)
    # the agent's own observation of the run (its load generator's timed windows) arrived and bounded the figures
    assert remote.profile["host_bounds"]["loadgen"]["finished"] and metric(remote, "throughput") > 0
    assert "throughput" in remote.profile["host_bounds"]["bounded"]
    assert _emptied(agent)  # the agent keeps nothing of a finished run


def test_cancel_reaches_the_run_on_the_other_machine(home, store, tmp_path, agent):
    setup_workspace(store, tmp_path, sizes=(12,))
    cancel, phases = CancelToken(), []

    def progress(event):  # the worker's own phases come back over the socket; cancel on the first of them
        if event.phase in ("load", "predict"):
            phases.append(event.phase)
            cancel.cancel()
    record = evaluate(store, Workspace(home), run_request("tiny", runner="remote", latency_samples=4, warmup=0),
                      progress=progress, cancel=cancel)
    assert phases and record.status == "cancelled", (phases, record.status, record.error)
    assert _emptied(agent)


def test_a_wrong_token_is_refused_before_a_run_is_recorded(home, store, tmp_path, agent, monkeypatch):
    setup_workspace(store, tmp_path, sizes=(6,))
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-agents-token", encoding="utf-8")
    monkeypatch.setenv(TOKEN_VAR, str(wrong))
    with pytest.raises(EvaluationError, match="refused: the token does not match this agent's --token-file"):
        evaluate(store, Workspace(home), run_request("tiny", runner="remote"))
    assert store.evaluations.list() == []


def test_gpu_status_is_asked_of_the_remote_agent(agent):
    status = gpu_status("remote")
    assert status.detail == "remote: " + gpu_status("local").detail  # the agent's local runner answered, over there
    assert status.ok is gpu_status("local").ok


def test_gpu_status_without_an_agent_names_the_fix(monkeypatch):
    monkeypatch.delenv(ADDRESS_VAR, raising=False)
    status = gpu_status("remote")
    assert status.ok is False and ADDRESS_VAR in status.detail and "docs/remote-runner.md" in status.detail


@pytest.mark.docker
def test_the_agent_runs_its_own_docker_sandbox(home, store, tmp_path, monkeypatch, evaluator_image, docker_client):
    """The recipe's default: the agent's runner is the Docker sandbox on its machine, in its own image."""
    setup_workspace(store, tmp_path, sizes=(6,))
    with running_agent(tmp_path, monkeypatch, "docker"):
        record = evaluate(store, Workspace(home), run_request("tiny", runner="remote", latency_samples=4, warmup=0))
    assert record.status == "succeeded", record.error
    assert record.runner == "remote" and record.image_id == evaluator_image.image_id  # the agent's image, by Id
    assert record.profile["host_bounds"]["loadgen"]["finished"]


def _archive(*members: tuple[str, bytes | None, str | None]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            else:
                info.size = len(data or b"")
                tar.addfile(info, io.BytesIO(data or b""))
    buf.seek(0)
    return buf


@pytest.mark.parametrize("members, named", [
    ((("out/ok.json", b"{}", None), ("out/../../escape", b"x", None)), "out/../../escape"),
    ((("out/ok.json", b"{}", None), ("out/link", None, "/etc/passwd")), "not a regular file or folder"),
    ((("spec/spec.json", b"{}", None),), "outside the folders"),
    ((("out/big", b"x" * 100, None),), "past its 10-byte limit"),
])
def test_an_archive_from_the_other_end_is_unpacked_only_inside_its_folder(tmp_path: Path, members, named):
    into = tmp_path / "run"
    into.mkdir()
    with pytest.raises(WireError, match=named.replace(".", r"\.").replace("/", "/")):
        unpack(_archive(*members), into, {"out"}, 10 if "big" in members[0][0] else 1 << 20)
    assert list(into.iterdir()) == []  # nothing written: every member is checked before the first is
