"""Fast checks of the evaluation building blocks: spec validation, cgroup reading,
percentiles, and the byte-for-byte determinism of the image build's hand-made artefacts."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile

import pytest
from support import REPO
from support.payloads import typed

from dynadesk.evaluator import allocator, environment, measurement, profiling
from dynadesk.evaluator.schema import SCHEMA_VERSION, Spec, SpecError, evaluator_version, metric_row


def _spec(**over):
    raw = {"schema_version": SCHEMA_VERSION, "task": {"name": "sentiment"}, "model": {"manifest": {}},
           "datasets": [{"name": "a", "file": "d000.jsonl", "sha256": "x", "size": 1},
                        {"name": "a~case", "file": "d001.jsonl", "sha256": "y", "size": 1, "role": "perturbation",
                         "derived_from": "a", "kind": "robustness", "suite": "case"}],
           "settings": {"batch_size": 4}}
    raw.update(over)
    return raw


def test_spec_round_trip_and_errors_name_the_field(tmp_path):
    spec = Spec.from_dict(_spec())
    spec.write(tmp_path / "spec.json")
    assert Spec.read(tmp_path / "spec.json") == spec
    with pytest.raises(SpecError, match="schema_version 99 is not supported"):
        Spec.from_dict(_spec(schema_version=99))
    with pytest.raises(SpecError, match="'settings' has unknown key"):
        Spec.from_dict(_spec(settings={"batch": 3}))
    with pytest.raises(SpecError, match="settings.batch_size must be a positive integer"):
        Spec.from_dict(_spec(settings={"batch_size": 0}))
    bad = _spec()
    bad["datasets"][1]["derived_from"] = "zzz"
    with pytest.raises(SpecError, match="dataset 'a~case': a perturbation set needs derived_from"):
        Spec.from_dict(bad)
    bad = _spec()
    bad["datasets"][0]["file"] = "../../etc/passwd"
    with pytest.raises(SpecError, match="plain name"):
        Spec.from_dict(bad)
    with pytest.raises(SpecError, match="cannot read spec"):
        Spec.read(tmp_path / "missing.json")


def test_metric_rows_carry_fixed_units():
    assert metric_row("", "throughput", 3) == {"dataset": "", "metric": "throughput", "value": 3.0,
                                               "unit": "examples/s", "deterministic": False}
    assert metric_row("x", "perf", 50)["deterministic"] is True
    assert evaluator_version() == evaluator_version() and evaluator_version().startswith("sha256:")


def test_cgroup_v1_and_v2_are_read(tmp_path):
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "memory").mkdir()
    (v1 / "pids").mkdir()
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("150000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (v1 / "memory" / "memory.max_usage_in_bytes").write_text("123456789\n")
    (v1 / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    (v1 / "pids" / "pids.max").write_text("max\n")
    assert environment.cgroup_version(v1) == 1
    assert environment.cpu_quota(v1) == 1.5
    assert environment.memory_peak(v1) == (123456789, str(v1 / "memory" / "memory.max_usage_in_bytes"))
    assert environment.memory_limit(v1) is None  # v1's "unlimited" sentinel
    assert environment.pids_limit(v1) is None

    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("cpu memory pids\n")
    (v2 / "cpu.max").write_text("200000 100000\n")
    (v2 / "memory.peak").write_text("5000\n")
    (v2 / "memory.max").write_text("1073741824\n")
    (v2 / "pids.max").write_text("64\n")
    assert environment.cgroup_version(v2) == 2
    assert environment.cpu_quota(v2) == 2.0
    assert environment.memory_peak(v2) == (5000, str(v2 / "memory.peak"))
    assert environment.memory_limit(v2) == 1 << 30 and environment.pids_limit(v2) == 64
    (v2 / "cpu.max").write_text("max 100000\n")
    assert environment.cpu_quota(v2) is None
    assert environment.cpu_quota(tmp_path / "none") is None


def test_percentiles_are_nearest_rank_and_timings_bounded():
    values = [float(v) for v in range(1, 101)]
    assert profiling.percentile(values, 50) == 50 and profiling.percentile(values, 99) == 99
    assert profiling.percentile([7.0], 90) == 7.0
    calls = []
    units = [[{"i": i}] for i in measurement.even_sample(50, 10)]
    out = measurement.measure(lambda batch: calls.append(len(batch)) or [{}], units,
                              measurement.Protocol(warmup=3, min_queries=10, min_seconds=0.0, trials=2, retries=0,
                                                   threads=1))
    assert calls == [1] * (3 + 2 * 10)  # 3 warm-up calls, then 2 windows of 10 one-example calls
    assert [t["queries"] for t in out["trials"]] == [10, 10] and len(out["per_call_ms"]) == 20
    lat = measurement.latency(out["per_call_ms"], out["per_trial_ms"])
    assert lat["p50_ms"] <= lat["p99_ms"] and lat["too_few_samples"] == ["p90", "p99"]  # 20 samples: 2 above p90
    assert [len(t) for t in out["per_trial_ms"]] == [10, 10] and set(lat["trial_spread"]) == {"p50", "p90", "p99"}


def test_a_latency_tail_that_one_trial_moves_shows_in_its_trial_spread():
    steady, hiccup = [1.0] * 99 + [1.1], [1.0] * 95 + [9.0] * 5  # the second trial's slowest 5% hit a stall
    lat = measurement.latency(steady + hiccup, [steady, hiccup])
    assert lat["trial_spread"]["p50"] == 0.0
    assert lat["trial_spread"]["p99"] == pytest.approx((9.0 - 1.0) / ((9.0 + 1.0) / 2))  # nearest rank: 99th of 100


def test_gpu_probe_never_crashes():
    info = environment.gpu_info()
    assert info["nvml"] == "ok" or info["nvml"].startswith("unavailable")
    sampler = profiling.GpuSampler(interval_s=0.01).start()
    summary = sampler.stop()
    assert summary["nvml"] == "ok" or "unavailable" in summary["nvml"]


def test_evaluator_wheel_is_byte_identical_and_holds_only_the_worker(tmp_path):
    from dynadesk.orchestration.image import evaluator_wheel, host_pins

    pins = host_pins()
    a = evaluator_wheel(tmp_path / "a", pins).read_bytes()
    b = evaluator_wheel(tmp_path / "b", pins).read_bytes()
    assert a == b
    import io
    import zipfile

    names = zipfile.ZipFile(io.BytesIO(a)).namelist()
    assert "dynadesk/evaluator/worker.py" in names and "dynadesk/__init__.py" in names
    assert not [n for n in names if n.startswith("dynadesk/") and not n.startswith(("dynadesk/evaluator/",
                                                                                       "dynadesk/__init__"))]
    meta = zipfile.ZipFile(io.BytesIO(a)).read("dynadesk_evaluator-0.1.0.dist-info/METADATA").decode()
    assert f"Requires-Dist: torch=={pins['torch']}" in meta


def test_docker_archive_is_deterministic_and_id_is_config_digest(tmp_path):
    from dynadesk.orchestration.image import image_config, save_archive

    layer = tmp_path / "layer.tar"
    with tarfile.open(layer, "w") as tf:
        info = tarfile.TarInfo("hello")
        info.size = 2
        tf.addfile(info, fileobj=__import__("io").BytesIO(b"hi"))
    layer_hex = hashlib.sha256(layer.read_bytes()).hexdigest()
    config = image_config("sha256:" + layer_hex, 1700000000, {"k": "v"})
    assert json.loads(config)["created"] == "2023-11-14T22:13:20Z"
    id_a = save_archive(tmp_path / "a.tar", layer, layer_hex, config, "x:y", 1700000000)
    id_b = save_archive(tmp_path / "b.tar", layer, layer_hex, config, "x:y", 1700000000)
    assert id_a == id_b == "sha256:" + hashlib.sha256(config).hexdigest()
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    with tarfile.open(tmp_path / "a.tar") as tf:
        manifest = json.loads(tf.extractfile("manifest.json").read())
        assert manifest == [{"Config": f"{id_a[7:]}.json", "RepoTags": ["x:y"], "Layers": [f"{layer_hex}/layer.tar"]}]
        assert all(m.mtime == 1700000000 for m in tf.getmembers())


def test_image_epoch_follows_the_last_commit_that_changed_the_image_inputs(monkeypatch):
    """Commits elsewhere (GUI, docs, server) must not change the image Id, so runs stay reusable."""
    import subprocess

    from dynadesk.orchestration.image import EPOCH_PATHS, source_date_epoch

    repo = REPO
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    git = ["git", "-C", str(repo), "log", "-1", "--format=%ct"]
    inputs = subprocess.run([*git, "--", *EPOCH_PATHS], capture_output=True, text=True, check=True).stdout.strip()
    assert source_date_epoch() == int(inputs)
    head = int(subprocess.run(git, capture_output=True, text=True, check=True).stdout)
    assert source_date_epoch() <= head
    assert source_date_epoch(1_600_000_000) == 1_600_000_000
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert source_date_epoch() == 1_700_000_000


def test_compare_runs_judges_reordered_runs_by_their_records():
    from dynadesk.audit.compare import RunResults, compare_runs

    a_metrics = {("s1", "perf"): 0.1, ("s2", "perf"): 0.7, ("", "perf"): 0.4, ("", "throughput"): 10.0}
    a = RunResults("sha256:aa", "r1", 4, "l", a_metrics, source="run 1", examples_digest="sha256:same")
    b = RunResults("sha256:bb", "r2", 4, "l", {**a_metrics, ("", "perf"): 0.4 + 2 ** -54, ("", "throughput"): 12.0},
                   source="run 2", examples_digest="sha256:same")
    by = {c.field: c for c in compare_runs(a, b, ["s1", "s2"], ["s2", "s1"])}
    assert by["predictions.digest"].verdict == "not comparable" and "another order" in by["predictions.digest"].note
    assert by["predictions.per_example"].verdict == "identical"
    assert by["metrics[(run)].perf"].verdict == "not comparable" and not by["metrics[(run)].perf"].fails
    assert by["metrics[(run)].throughput"].kind == "measured" and not by["metrics[(run)].throughput"].fails
    same_order = {c.field: c for c in compare_runs(a, b, ["s1", "s2"], ["s1", "s2"])}
    assert same_order["predictions.digest"].fails and same_order["metrics[(run)].perf"].fails
    changed = RunResults("sha256:bb", "r2", 4, "l", a_metrics, source="run 2", examples_digest="sha256:other")
    assert {c.field for c in compare_runs(a, changed, ["s1", "s2"], ["s2", "s1"]) if c.fails} == {
        "predictions.per_example"}


def test_cgroup_throttling_and_proc_stat_are_read_on_v1_and_v2(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("cpu memory\n")
    (v2 / "cpu.stat").write_text("usage_usec 900\nnr_periods 40\nnr_throttled 7\nthrottled_usec 250000\n")
    assert measurement.throttling(v2) == (0.25, 7)
    v1 = tmp_path / "v1"
    (v1 / "cpu,cpuacct").mkdir(parents=True)
    (v1 / "memory").mkdir()
    (v1 / "cpu,cpuacct" / "cpu.stat").write_text("nr_periods 10\nnr_throttled 3\nthrottled_time 500000000\n")
    assert measurement.throttling(v1) == (0.5, 3)
    assert measurement.throttling(tmp_path / "none") == (None, None)
    stat = tmp_path / "stat"
    ticks = os.sysconf("SC_CLK_TCK")
    stat.write_text(f"cpu  {ticks} 0 {ticks} 500 0 0 0 {ticks // 2} 0 0\ncpu0 1 0 1 250 0 0 0 0 0 0\n")
    busy, steal, ok = measurement._proc_stat(stat)
    assert ok and busy == 2.0 and steal == 0.5
    assert measurement._proc_stat(tmp_path / "missing") == (0.0, 0.0, False)


def test_competition_names_other_processes_throttling_and_steal():
    def snap(wall, own, busy, steal=0.0, throttled=0.0):
        return measurement.CpuSnapshot(wall, own, busy, steal, True, throttled, 0)

    quiet = measurement.competition([(snap(0, 0, 0), snap(1, 1.9, 2.0))], threads=2, host_cores=2)
    assert quiet["reasons"] == [] and quiet["others_cores"] == pytest.approx(0.1)
    busy = measurement.competition([(snap(0, 0, 0), snap(1, 1.0, 2.0, steal=0.2, throttled=0.3))], threads=2,
                                   host_cores=2)
    assert [r.split()[0] for r in busy["reasons"]] == ["other", "steal", "cgroup"]
    free = measurement.competition([(snap(0, 0, 0), snap(1, 1.0, 2.0))], threads=1, host_cores=2)
    assert free["reasons"] == []  # the other process ran on the core the run left free
    # the host's load generator issuing the queries is the harness, not competition (a fast model's windows)
    harness = measurement.competition([(snap(0, 0, 0), snap(1, 1.0, 2.0))], threads=2, host_cores=2,
                                      harness_cpu_s=0.9)
    assert harness["reasons"] == [] and harness["others_cores"] == pytest.approx(0.1)
    assert harness["harness_cpu_seconds"] == 0.9
    waited = measurement.CpuSnapshot(1, 1.0, 1.1, 0.0, True, None, None, 0.5)  # both threads waited 0.5 s in all
    start = measurement.CpuSnapshot(0, 0.0, 0.0, 0.0, True, None, None, 0.0)
    assert measurement.competition([(start, waited)], threads=2, host_cores=2)["reasons"][0].startswith(
        "the run's threads waited")
    assert measurement.competition([(start, waited)], threads=2, host_cores=2, harness_cpu_s=0.4)["reasons"] == []
    assert measurement.spread([90.0, 100.0, 110.0]) == pytest.approx(0.2)


def test_hardware_class_is_canonical_and_derived_for_older_environments():
    env = {"hardware": {"cpu_model": "AMD  EPYC 7B13", "cores": 2, "memory_limit_gib": 4,
                        "gpus": "NVIDIA H100 x 2", "runtime": "cuda 12.8"}}
    assert environment.hardware_class_of(env) == \
        "cpu=AMD EPYC 7B13;cores=2;memory=4GiB;gpus=NVIDIA H100 x 2;runtime=cuda 12.8"
    assert environment.hardware_class_label(env) == "AMD EPYC 7B13, 2 cores, 4 GiB, NVIDIA H100 x 2, cuda 12.8"
    old = {"cpu_model": "AMD EPYC 7B13", "threads": 2, "cgroup": {"memory_limit_bytes": 4 << 30},
           "cuda_devices": ["NVIDIA H100", "NVIDIA H100"], "torch_build": {"cuda": "12.8"}}
    assert environment.hardware_class_of(old) == environment.hardware_class_of(env)
    here = environment.hardware(None, [])
    assert here["cores"] == environment.cores_available() and here["gpus"] == "none" and here["runtime"] == "cpu"


_MAPPER = """
import json, mmap, sys
from dynadesk.evaluator import allocator, profiling
maps = []
for name, size in (("libfake.so.1", 48 << 20), ("weights.bin", 32 << 20)):
    path = sys.argv[1] + "/" + name
    with open(path, "wb") as fh:
        fh.write(b"x" * size)
    fh = open(path, "rb")
    m = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    sum(m[i] for i in range(0, size, 4096))  # fault every page in
    maps.append((fh, m))
allocator.fix_malloc()
heap = bytearray(64 << 20)
for i in range(0, len(heap), 4096):
    heap[i] = 1
print(json.dumps(profiling.memory_figures(False)))
"""


def test_memory_counts_the_model_heap_and_mapped_weights_but_not_shared_library_pages(tmp_path):
    """The Dynascore's memory must not move with the page cache: a process that maps (and touches) 48 MB of a
    shared library, 32 MB of a weights file and 64 MB of heap has a peak RSS of all three, and a memory of the
    last two only. Before this definition, memory was the whole peak RSS (a fresh venv: 0.437 vs 0.347 GiB)."""
    import json

    out = subprocess.run([sys.executable, "-c", _MAPPER, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    mem = json.loads(out.stdout)
    mb = 1 << 20
    assert mem["definition"] == profiling.MEMORY_DEFINITION
    assert mem["shared_library_rss_bytes"] >= 48 * mb  # the fake library, plus libpython's own pages
    assert mem["rss_peak_bytes"] >= (48 + 32 + 64) * mb
    assert mem["peak_bytes"] == mem["rss_peak_bytes"] - mem["shared_library_rss_bytes"]
    assert mem["peak_bytes"] >= (32 + 64) * mb  # mapped weights and heap stay in
    assert mem["peak_bytes"] <= mem["rss_peak_bytes"] - 48 * mb


_HISTORY = """
import ctypes, json, sys
from dynadesk.evaluator import allocator, profiling
if sys.argv[1] == "fixed":
    allocator.fix_malloc()
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
MB = 1 << 20
def block(size):
    p = libc.malloc(size)
    libc.memset(p, 1, size)
    return p
libc.free(block(24 * MB))  # a large activation, freed: glibc raises its threshold to 24 MB
first, kept = [], []
for _ in range(40):  # 160 MB of 4 MB activations, with small long-lived objects between them
    first.append(block(4 * MB))
    kept.append(libc.malloc(256 * 1024))
for p in first:
    libc.free(p)
second = [block(12 * MB) for _ in range(15)]  # 180 MB live: the real peak of what is still held
print(json.dumps({"peak": profiling.memory_figures(False)["peak_bytes"], "malloc": allocator.malloc_settings()}))
"""


def test_a_fixed_mmap_threshold_keeps_freed_activations_out_of_the_peak():
    """Why the worker fixes glibc's mmap threshold: under the moving threshold, blocks freed early stay in the
    heap (pinned by small live objects) and the later peak counts them, so the same work peaks higher or
    lower with the allocation history (three identical Docker runs: 0.742, 0.744, 0.549 GiB). Fixed, the
    peak follows what is live. Both processes allocate the same; at most 180 MB (+ Python) is live at once."""
    mb = 1 << 20

    def peak(mode):
        out = subprocess.run([sys.executable, "-c", _HISTORY, mode], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout)

    moving, fixed = peak("moving"), peak("fixed")
    assert not moving["malloc"]["fixed"] and fixed["malloc"] == {
        "fixed": True, "glibc": fixed["malloc"]["glibc"], "mmap_threshold_bytes": allocator.MEMORY_MMAP_THRESHOLD_BYTES}
    assert moving["peak"] >= (180 + 150) * mb  # the 160 MB freed first is still counted
    assert (180 - 5) * mb <= fixed["peak"] <= (180 + 60) * mb


def test_the_worker_fixes_malloc_before_it_runs_and_names_the_definition(tmp_path):
    """``python -m dynadesk.evaluator run`` (both runners start the worker so) fixes the threshold first; a
    profile written without it would name the older definition, so audits never compare the two."""
    code = ("import json, sys; from dynadesk.evaluator import __main__ as m, profiling\n"
            "try:\n    m.main(['run', '--spec', sys.argv[1] + '/missing.json', '--out', sys.argv[1] + '/out', "
            "'--model', sys.argv[1], '--data', sys.argv[1]])\nexcept BaseException:\n    pass\n"
            "print(json.dumps(profiling.memory_figures(False)))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    mem = json.loads(out.stdout.strip().splitlines()[-1])
    assert mem["definition"] == profiling.MEMORY_DEFINITION and mem["malloc"]["fixed"], mem
    unfixed = subprocess.run([sys.executable, "-c", "import json; from dynadesk.evaluator import profiling; "
                              "print(json.dumps(profiling.memory_figures(False)))"], capture_output=True, text=True,
                             timeout=120)
    assert json.loads(unfixed.stdout)["definition"] == profiling.UNFIXED_MEMORY_DEFINITION


def test_an_audit_compares_memory_only_between_runs_of_one_memory_definition():
    from dynadesk.audit.compare import RunResults, compare_results

    env = {"measurement": {"noisy": False, "memory_definition": profiling.MEMORY_DEFINITION}}
    payload = {"predictions": {"digest": "sha256:aa", "merkle_root": "r", "count": 4},
               "metrics": [{"dataset": "", "metric": "memory", "value": 0.347, "unit": "GiB", "deterministic": False}],
               "tolerances": {"memory": {"relative": 0.25}}, "environment": {}}
    rerun = RunResults("sha256:aa", "r", 4, "l", {("", "memory"): 0.21}, environment=env, source="the re-run")
    old = {c.field: c for c in compare_results(typed(payload), rerun)}["metrics[(run)].memory"]
    assert old.verdict == "not comparable" and not old.fails
    assert "peak-rss/0" in old.note and profiling.MEMORY_DEFINITION in old.note
    same = {c.field: c for c in compare_results(typed(dict(payload, environment=env)), rerun)}["metrics[(run)].memory"]
    assert same.verdict == "differs" and same.kind == "measured"  # 0.347 claimed vs 0.21 re-measured, same definition
    # the attack: keep the re-run's evaluator version but edit the definition away to make memory "not comparable"
    versioned = {**env, "evaluator_version": "sha256:ev"}
    edited = {"evaluator_version": "sha256:ev", "measurement": {"noisy": False, "memory_definition": "peak-rss/0"}}
    rerun_v = RunResults("sha256:aa", "r", 4, "l", {("", "memory"): 0.21}, environment=versioned, source="the re-run")
    dodged = {c.field: c for c in compare_results(typed(dict(payload, environment=edited)), rerun_v)}
    assert dodged["metrics[(run)].memory"].verdict == "differs"


def test_a_noisy_remeasurement_still_judges_memory_but_not_timing():
    """Competing CPU load moves throughput and latency, never memory: an inflated memory claim must not hide
    behind a noisy re-measurement (the attack: audit on a busy machine so that nothing measured is judged)."""
    from dynadesk.audit.compare import RunResults, compare_results

    env = {"cpu_model": "X", "measurement": {"noisy": True, "noisy_measurements": ["t: spread 40%"],
                                             "memory_definition": profiling.MEMORY_DEFINITION}}
    payload = {"predictions": {"digest": "sha256:aa", "merkle_root": "r", "count": 4}, "environment": env,
               "metrics": [{"dataset": "", "metric": m, "value": v, "unit": "u", "deterministic": False}
                           for m, v in (("memory", 0.0003), ("throughput", 1e6))],
               "tolerances": {"memory": {"relative": 0.25}, "throughput": {"relative": 0.5}}}
    rerun = RunResults("sha256:aa", "r", 4, "l", {("", "memory"): 0.35, ("", "throughput"): 100.0}, environment=env,
                       source="the re-run")
    by = {c.field: c for c in compare_results(typed(payload), rerun)}
    assert by["metrics[(run)].memory"].verdict == "differs"
    assert by["metrics[(run)].throughput"].verdict == "not comparable" and "noisy" in by[
        "metrics[(run)].throughput"].note
    other_class = dict(payload, environment={**env, "cpu_model": "Y"})
    assert {c.field: c for c in compare_results(typed(other_class), rerun)}["metrics[(run)].memory"].verdict == \
        "not comparable"


def test_runs_and_bundles_show_how_memory_was_measured():
    from dynadesk.audit.hardware import measurement_lines

    now = measurement_lines({"measurement": {"noisy": False, "memory_definition": profiling.MEMORY_DEFINITION}})
    assert f"memory: {profiling.MEMORY_DEFINITION} (docs/measurement.md; audits compare only within one)" in now
    assert any(line.startswith("memory: peak-rss/0 ") for line in measurement_lines({"measurement": {"noisy": False}}))


def test_inherited_allocator_settings_void_the_fixed_definition():
    """A worker started with ``MALLOC_*`` / ``GLIBC_TUNABLES`` (a user's shell, a hand-started worker) would
    measure memory under another allocator: it must not claim the fixed definition. (The local runner removes
    them from what it passes on: tests/measure/test_measure_runners.py runs it with one set.)"""
    code = ("import json; from dynadesk.evaluator import allocator; print(json.dumps(allocator.fix_malloc()))")
    env = dict(os.environ, MALLOC_ARENA_MAX="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    state = json.loads(out.stdout)
    assert not state["fixed"] and "MALLOC_ARENA_MAX" in state["reason"]
