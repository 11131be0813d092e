"""packaging/gpu_check.sh: without a GPU it prints a "no GPU" row for every model kind, the profiler and the Docker
--gpus path and exits 0; its per-kind check itself works (run on the CPU against the CPU)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from support import REPO

from dynadesk.evaluator.adapters import KINDS


def _gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "packaging" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_a_gpu_every_row_says_no_gpu_and_the_script_succeeds():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHON": sys.executable}
    done = subprocess.run(["bash", str(REPO / "packaging" / "gpu_check.sh")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines()[2:]]
    checks = {cells[0].strip(): cells[2].strip() for cells in rows}
    assert set(KINDS) <= set(checks), f"kinds without a row: {set(KINDS) - set(checks)}"  # a new kind needs its row
    assert {"profiler: nvml", "profiler: torch memory", "docker --gpus all"} <= set(checks)
    assert set(checks.values()) == {"no GPU"}, checks


@pytest.mark.parametrize("kind", ["bag-of-words", "handler"])
def test_a_kinds_check_compares_the_device_with_the_cpu(kind, tmp_path):
    gpu_check = _gpu_check()
    row = gpu_check.check_kind(kind, gpu_check.KINDS[kind], "cpu", tmp_path)
    assert row["result"] == "ok" and "vs cpu 0" in row["detail"], row
    broken = gpu_check.check_kind(kind, lambda tmp: (tmp / "missing", []), "cpu", tmp_path)
    assert broken["result"] == "FAIL" and "model folder not found" in broken["detail"], broken


@pytest.mark.long
def test_every_kind_checks_on_the_cpu():
    done = subprocess.run([sys.executable, str(REPO / "packaging" / "gpu_check.py"), "--device", "cpu", "--no-docker"],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert done.stdout.count("| cpu | ok |") == 8, done.stdout
