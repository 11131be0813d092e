"""Every command of the README's section "Labs with several machines" (also in docs/queue.md), run as written.

Only what names the lab's machines is substituted: the broker's host and port become a free
loopback port, the password a fresh one, and each "machine" is a workspace of its own (the
coordinator's and one worker's). ``dynadesk image build`` is pointed at the suite's image
cache so it finds the image instead of rebuilding it.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import socket
from pathlib import Path

import pytest
from support import REPO
from support.eval import IMAGE_CACHE, LABELS, add_test_set
from support.queue import remove_containers, run_cli, spawn_worker, start_redis
from support.sync import free_port

ROOT = REPO
README, DOC = ROOT / "README.md", ROOT / "docs" / "queue.md"
COMMANDS = [
    "redis-server --port 6379 --bind 0.0.0.0 --requirepass lab-broker-secret",
    "export DYNADESK_BROKER=redis://:lab-broker-secret@coordinator:6379/0",
    "dynadesk image build",
    "dynadesk worker --broker redis://:lab-broker-secret@coordinator:6379/0 --gpus 0",
    "dynadesk jobs trust-worker gpu-box-worker.pub",
    "dynadesk eval my-model majority-sentiment --queue $DYNADESK_BROKER --no-wait",
    "dynadesk jobs list",
    "dynadesk jobs cancel JOB",
    "dynadesk jobs collect",
    "dynadesk eval my-model",
    "dynadesk runs compare QUEUED_RUN LOCAL_RUN",
]

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]


def section(path: Path) -> str:
    return path.read_text().split("<!-- readme:begin -->")[1].split("<!-- readme:end -->")[0]


def readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", section(README), re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_the_readme_section_lists_exactly_the_commands_this_test_runs():
    assert readme_commands() == COMMANDS
    commands = re.compile(r"```bash\n(.*?)```", re.S)
    assert commands.findall(section(README)) == commands.findall(section(DOC))  # the guide repeats them unchanged


def coordinator_workspace(home: Path, tmp_path: Path) -> None:
    """The two models the section names (two majority baselines: each Docker job takes seconds) and a test set."""
    from dynadesk.models.bow import write_majority
    from dynadesk.models.registry import register_model
    from dynadesk.workspace import Workspace

    store = Workspace(home).open_store()
    add_test_set(store, "set0-test", 12, seed=0)
    write_majority(tmp_path / "mine", "sentiment", LABELS, ["statement"], ["negative", "negative", "neutral"])
    register_model(store, tmp_path / "mine", "sentiment", name="my-model")
    write_majority(tmp_path / "maj", "sentiment", LABELS, ["statement"], ["positive"])
    register_model(store, tmp_path / "maj", "sentiment", name="majority-sentiment")
    store.close()


def test_every_command_of_the_readme_section(tmp_path, evaluator_image, docker_client):
    commands = readme_commands()
    port, password = free_port(), secrets.token_hex(12)

    def lab(command: str) -> list[str]:
        command = (command.replace("lab-broker-secret", password).replace("coordinator:6379", f"127.0.0.1:{port}")
                   .replace("--port 6379", f"--port {port}").replace("0.0.0.0", "127.0.0.1")
                   .replace("gpu-box-worker.pub", str(gpu_box / "worker-key" / "worker.pub")))
        return shlex.split(command.replace("$DYNADESK_BROKER", url))

    url = f"redis://:{password}@127.0.0.1:{port}/0"
    coordinator, gpu_box = tmp_path / "coordinator", tmp_path / "gpu-box" / "ws"
    coordinator_workspace(coordinator, tmp_path)

    server = start_redis(tmp_path / "redis", argv=lab(commands[0]), port=port, password=password)
    worker = None
    try:
        name, value = lab(commands[1])[1].split("=", 1)
        assert (name, value) == ("DYNADESK_BROKER", url)
        env = {**os.environ, "DYNADESK_BROKER": value}
        run_cli(*lab(commands[2])[1:], "--cache", str(IMAGE_CACHE), home=gpu_box)
        worker = spawn_worker(server, gpu_box, socket.gethostname(), lab(commands[3])[1:])
        trusted = run_cli(*lab(commands[4])[1:], home=coordinator).stdout
        assert trusted.startswith("trusted worker key sha256:"), trusted

        queued = run_cli(*lab(commands[5])[1:], home=coordinator)
        first, second = queued.stdout.split()
        listing = run_cli(*lab(commands[6])[1:], home=coordinator, env=env).stdout
        assert first in listing and second in listing
        cancel = [second if a == "JOB" else a for a in lab(commands[7])[1:]]
        assert run_cli(*cancel, home=coordinator, env=env).stdout.strip() == f"job {second}: cancelled"
        collected = run_cli(*lab(commands[8])[1:], home=coordinator, env=env)
        rows = {line.split()[4]: line.split() for line in collected.stdout.splitlines()[2:]}
        assert rows[first][2] == "succeeded" and rows[first][5] == socket.gethostname(), collected.stdout
        assert rows[second][2] == "cancelled", collected.stdout
        queued_run = rows[first][0]
        local = run_cli(*lab(commands[9])[1:], home=coordinator)
        local_run = re.match(r"run (\d+):", local.stdout).group(1)
        compare = [queued_run if a == "QUEUED_RUN" else local_run if a == "LOCAL_RUN" else a
                   for a in lab(commands[10])[1:]]
        proc = run_cli(*compare, home=coordinator)
        assert proc.stdout.splitlines()[-1].endswith("OK"), proc.stdout
        shown = run_cli("runs", "show", queued_run, home=coordinator).stdout
        assert f"ran on worker {socket.gethostname()}" in shown and "hardware class:" in shown
    finally:
        if worker is not None:
            worker.stop()
        server.proc.terminate()
        server.proc.wait(timeout=10)
        remove_containers(docker_client, tmp_path)


def test_a_remote_docker_host_is_refused_with_the_worker_pattern(tmp_path):
    """What the section says about DOCKER_HOST=ssh://gpu-box, checked: a clear refusal, no run created."""
    from dynadesk.models.bow import write_majority
    from dynadesk.models.registry import register_model
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    store = Workspace(home).open_store()
    add_test_set(store, "set0-test", 6, seed=0)
    write_majority(tmp_path / "maj", "sentiment", LABELS, ["statement"], ["positive"])
    register_model(store, tmp_path / "maj", "sentiment", name="maj")
    store.close()
    for host in ("ssh://gpu-box", "tcp://gpu-box:2376"):
        proc = run_cli("eval", "maj", home=home, check=False, env={**os.environ, "DOCKER_HOST": host})
        assert proc.returncode == 1
        assert f"DOCKER_HOST={host} names another machine" in proc.stderr and "dynadesk worker" in proc.stderr
    proc = run_cli("runs", "list", "--json", home=home)
    assert proc.stdout.strip() == "[]"
