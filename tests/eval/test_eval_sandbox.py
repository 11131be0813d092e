"""The run folder and the Docker boundary against a real daemon: a GPU request without NVIDIA's runtime,
links planted in /out before a resume as root, /out filled to 2 GiB, 64 MiB of output without newlines."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.eval import add_test_set, run_request, setup_workspace

from dynadesk.orchestration.evaluate import default_limits, evaluate, resume
from dynadesk.orchestration.folder import RunFolder
from dynadesk.progress import ProgressEvent
from dynadesk.workspace import Workspace

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]  # the fixture may build the image


@pytest.fixture
def ws(home, store, tmp_path):
    setup_workspace(store, tmp_path, sizes=(8, 4))
    add_test_set(store, "small-test", 6, seed=7, perturbed=False)
    return Workspace(home)


def _hostile(store, tmp_path: Path, behaviour: str, target: str | None = None) -> str:
    from support.hostile_models import make_hostile_model

    from dynadesk.models.registry import register_model

    register_model(store, make_hostile_model(tmp_path / behaviour, behaviour, target), "sentiment", name=behaviour)
    return behaviour


def _no_nvidia_runtime(client) -> bool:
    return "nvidia" not in (client.info().get("Runtimes") or {})


def test_cli_eval_with_gpus_all_and_no_gpu_runtime_prints_one_line_and_fails(home, ws, evaluator_image,
                                                                            docker_client):
    if not _no_nvidia_runtime(docker_client):
        pytest.skip("this daemon has NVIDIA's runtime: --gpus all is honoured here")
    proc = subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                           "eval", "tiny", "--dataset", "small-test", "--runner", "docker", "--gpus", "all",
                           "--image", evaluator_image.image_id], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "(gpu_unavailable)" in lines[0] and "nvidia-container-toolkit" in lines[0] and "without --gpus" in lines[0]
    assert "Traceback" not in proc.stderr
    rec = ws.open_store().evaluations.list(limit=1)[0]
    assert (rec.status, rec.verdict) == ("failed", "gpu_unavailable")


@pytest.mark.skipif(os.getuid() != 0, reason="the attack needs a host running dynadesk as root")
def test_links_planted_in_out_are_removed_and_never_chowned_on_resume_as_root(store, ws, tmp_path,
                                                                             evaluator_image, docker_client):
    from support.hostile_models import HostileDockerRunner

    victim = tmp_path / "root-owned.txt"
    victim.write_text("root's file")
    os.chown(victim, 0, 0)
    model = _hostile(store, tmp_path, "symlink_out", str(victim))
    request = run_request(model, ["small-test"], runner="docker", image=evaluator_image.image_id,
                          limits=default_limits(cpus=1.0, timeout_s=300), latency_samples=2, warmup=0)
    rec = evaluate(store, ws, request, runner=HostileDockerRunner(evaluator_image.image_id, client=docker_client))
    assert (rec.status, rec.verdict) == ("failed", "error") and "HOSTILE symlink_out" in rec.error
    folder = RunFolder(Path(rec.run_dir))
    assert (folder.out_dir / "evil-link").is_symlink()
    events: list[ProgressEvent] = []
    done = resume(store, ws, rec.id, client=docker_client, progress=events.append)  # the product runner, as root
    assert victim.stat().st_uid == 0 and victim.stat().st_gid == 0 and victim.read_text() == "root's file"
    assert done.status == "succeeded", done.error
    cleaned = [e for e in events if e.phase == "cleaned"]
    assert cleaned and cleaned[0].detail["removed"] == ["evil-link", "parts/d000.jsonl.evil"]
    assert "removed from out/ before resuming" in done.log and "evil-link" in done.log
    assert not (folder.out_dir / "evil-link").exists() and not (folder.out_dir / "evil-link").is_symlink()


def test_two_gib_written_to_out_is_stopped_with_verdict_disk(store, ws, tmp_path, evaluator_image, docker_client):
    from support.hostile_models import HostileDockerRunner

    model = _hostile(store, tmp_path, "fill_out")
    limits = default_limits(cpus=1.0, memory_bytes=512 << 20, timeout_s=300, out_bytes=256 << 20)
    rec = evaluate(store, ws, run_request(model, ["small-test"], runner="docker", limits=limits),
                   runner=HostileDockerRunner(evaluator_image.image_id, client=docker_client))
    assert (rec.status, rec.verdict) == ("failed", "disk"), f"{rec.verdict}: {rec.error}"
    assert "0.25 GiB output limit" in rec.error
    folder = RunFolder(Path(rec.run_dir))
    assert folder.out_bytes() < 1 << 20  # the overflow is not kept on the host's disk
    assert not docker_client.containers.list(all=True, filters={"label": f"dynadesk.run-dir={folder.root}"})


def test_64_mib_of_output_without_newlines_is_cut_and_the_tail_saved(store, ws, tmp_path, evaluator_image,
                                                                     docker_client):
    from support.hostile_models import HostileDockerRunner

    model = _hostile(store, tmp_path, "flood")
    start = time.monotonic()
    rec = evaluate(store, ws, run_request(model, ["small-test"], runner="docker",
                                          limits=default_limits(cpus=1.0, timeout_s=300)),
                   runner=HostileDockerRunner(evaluator_image.image_id, client=docker_client))
    seconds = time.monotonic() - start
    assert (rec.status, rec.verdict) == ("failed", "error") and "HOSTILE flood: done" in rec.error
    assert seconds < 120
    assert "line cut" in rec.log and "HOSTILE flood: 64 MiB written without newlines" in rec.log
    assert len(rec.log) < 8 << 20
    saved = RunFolder(Path(rec.run_dir)).log_file.read_text()
    assert "HOSTILE flood: 64 MiB written without newlines" in saved


def test_one_daemon_status_serves_the_cli_and_the_gui(home, docker_client, require_qt, monkeypatch):
    from dynadesk.gui.services.status import probe_docker
    from dynadesk.orchestration.daemon import daemon_status

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                               "image", "status", *args], capture_output=True, text=True, timeout=120)

    up = cli()
    assert up.returncode == 0 and up.stdout.splitlines()[0] == daemon_status().detail
    assert probe_docker() == (True, daemon_status().detail)
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")  # nothing listens there
    down = cli()
    ok, detail = probe_docker()
    assert down.returncode == 1 and not ok and down.stdout.strip() == detail
    assert "no Docker daemon answers" in detail and "--runner local" in detail
