"""What ``make demo`` prints (issue 47): one line per step with its result, the board, the audit verdict with the
fields that differ, every stdout line at most 160 characters; the details in a log file named at the start and
the end. Real parts: the CLI in a subprocess on a real workspace, a real SQLite board, a real audit file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from dynadesk.demo import LINE_WIDTH, Steps, audit_verdict, print_leaderboard
from dynadesk.store.evaluations import RunChange
from dynadesk.workspace import Workspace

LONG_NOTE = ("the re-run's wall-clock figure depends on the machine's load at the time and is not compared; "
             "this note deliberately runs on and on " * 8)
DS = "vader-movies-test"


def _checks() -> list[dict[str, str]]:
    checks = [{"field": f"metric.vader-{i}.macro_f1", "kind": "deterministic", "verdict": "identical"}
              for i in range(20)]
    checks += [{"field": f"measured.throughput.{i}", "kind": "measured", "verdict": "not comparable",
                "note": LONG_NOTE} for i in range(25)]
    return checks + [{"field": "measured.memory", "kind": "measured", "verdict": "outside tolerance",
                      "note": LONG_NOTE}]


def _run(store, model: str, perf: float) -> None:
    """A succeeded run with every Dynascore metric and its bootstrap outcomes (as tests/scoring's board tests)."""
    from dynadesk.scoring import bootstrap as B
    from dynadesk.store.evaluations import MetricValue

    golds = ["negative", "neutral", "positive"] * 10
    task = {"metric": "macro_f1", "output_kind": "label", "labels": ["negative", "neutral", "positive"]}
    preds = golds if perf > 50 else golds[1:] + golds[:1]
    store.models.add(model, "sentiment", "majority", f"/models/{model}", f"sha256:{model}", {"task": "sentiment"})
    run = store.evaluations.create(store.models.get(model).id, "sentiment", runner="local", sandboxed=False,
                                   datasets=[DS], status="running")
    values = [MetricValue(DS, m, perf, "%", True) for m in ("perf", "macro_f1", "robustness", "fairness")]
    values += [MetricValue("", "throughput", 10.0, "examples/s", False), MetricValue("", "memory", 1.0, "GiB", False)]
    o = B.outcomes(task, "macro_f1", preds, golds)
    digest = "sha256:" + model.encode().hex().ljust(64, "0")
    data = "sha256:" + "d1" * 32
    profile = {"intervals": {DS: B.interval(o, B.derive_seed(digest, data, "macro_f1"))},
               "outcomes": {DS: B.encode_outcomes(o, data)}}
    store.evaluations.set_metrics(run, values, RunChange(predictions_digest=digest, profile=profile),
                                  status="succeeded")


def test_the_audit_step_names_the_fields_that_differ_in_short_lines_and_logs_every_note(home):
    ws = Workspace(home)
    Path(ws.bundles_dir).mkdir(parents=True, exist_ok=True)
    report = {"ok": True, "counts": {"identical": 20, "not comparable": 25, "outside tolerance": 1},
              "checks": _checks()}
    (Path(ws.bundles_dir) / "b1.audit.json").write_text(json.dumps({"audited_at": "2026-12-05 11:00:00",
                                                                    "report": report}))
    said: list[str] = []
    log: list[str] = []
    steps = Steps(log.append, 1, said.append)
    steps.start("Audit: re-run the bundle and compare field by field", "audit")
    audit_verdict(None, ws, "b1", "local", steps, force=False)  # type: ignore[arg-type]  # the cached verdict
    steps.close()
    assert said[0].startswith("[1/1] audit: PASS; deterministic fields identical 20/20")
    assert all(len(line) <= LINE_WIDTH for line in said), max(said, key=len)
    brief = " ".join(said)
    assert "not comparable (25):" in brief and "outside tolerance (1): measured.memory" in brief
    assert all(f"measured.throughput.{i}" in brief for i in range(25))
    assert "deliberately runs on" not in brief  # the notes stay in the log
    assert sum(LONG_NOTE.strip() in line for line in log) == 26
    assert all(line in log for line in said)  # the log holds the brief lines too


def test_the_board_table_goes_to_the_brief_channel_and_its_details_to_the_log(store):
    _run(store, "a-copy", 90.0)
    _run(store, "b-copy", 89.0)
    _run(store, "c-wrong", 10.0)
    log: list[str] = []
    table: list[str] = []
    assert print_leaderboard(store, log.append, table) == "a-copy"
    assert table[0].split()[:3] == ["rank", "model", "Dynascore"]
    assert [line.split()[1] for line in table[2:5]] == ["a-copy", "b-copy", "c-wrong"]
    assert "detailed log" in table[-1] and "units: Dynascore points, perf %" in table[-1]
    assert [line.split() for line in table[2:5]] == [line.split() for line in log[2:5]]  # the same rows
    assert "perf (%)" in log[0] and "perf (%)" not in table[0] and len(table[0]) < len(log[0])
    assert any("95% intervals" in line for line in log) and not any("95% intervals (" in line for line in table)


def test_the_cli_names_its_log_at_the_start_and_the_end_and_a_failed_step_in_one_line(tmp_path):
    from dynadesk.recipes import load_recipe

    home = tmp_path / "ws"
    (home / "cache").mkdir(parents=True)
    (home / "cache" / load_recipe().sdist).write_text("not the pinned archive\n")  # step 2 refuses its digest
    env = {**os.environ, "DYNADESK_HOME": str(home), "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-c", "from dynadesk.cli import cli; cli()", "demo", "--runner", "local"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    lines = proc.stdout.splitlines()
    assert all(len(line) <= LINE_WIDTH for line in lines), max(lines, key=len)
    first = re.fullmatch(r"detailed log: (\S+)", lines[0])
    assert first and lines[-1] == lines[0], proc.stdout
    log = Path(first.group(1)).read_text(encoding="utf-8")
    assert Path(first.group(1)).parent == home / "logs"
    assert lines[1].startswith("[1/10] tasks: 4 tasks (") and lines[2].startswith("[2/10] bundled data: FAILED (")
    assert lines[-2].startswith("      ") and "does not match the pinned" in proc.stdout  # wrapped, not cut
    assert "inputs: context, hypothesis" in log and "step 1:" in log and "load average" in log  # the details
    assert "inputs: context, hypothesis" not in proc.stdout


def test_a_noisy_mark_in_the_brief_table_is_explained_there(store):
    """The brief table marks a row whose timing was flagged noisy with '*'; the brief channel says what '*' means
    (its reasons stay in the log), and says nothing of it when no row is marked."""
    _run(store, "a-copy", 90.0)
    _run(store, "b-copy", 89.0)
    quiet: list[str] = []
    print_leaderboard(store, [].append, quiet)
    assert not any("*" in line for line in quiet)
    run = store.evaluations.list(task="sentiment", model="b-copy")[0].id
    store.evaluations.update(run, RunChange(environment={"measurement": {"noisy": True, "noisy_measurements": [
                  "vader-movies-test batch1: other processes used 1.5 cores"]}}))
    log: list[str] = []
    table: list[str] = []
    print_leaderboard(store, log.append, table)
    assert any(line.split()[1:3] == ["b-copy", "*"] for line in table[2:]), table
    legend = [line for line in table if "*:" in line]
    assert legend and "busy machine" in legend[0] and "flagged noisy" in legend[0], table
    assert not any("other processes used" in line for line in table)  # the reasons: in the log
    assert any("other processes used" in line for line in log)


def _scored(store, model: str, f1: dict[str, float]) -> int:
    """A succeeded run with a macro-F1 on each of the demo's test sets (what the demo's step 6 reads)."""
    from dynadesk.store.evaluations import MetricValue

    store.models.add(model, "sentiment", "majority", f"/models/{model}", f"sha256:{model}", {"task": "sentiment"})
    run = store.evaluations.create(store.models.get(model).id, "sentiment", runner="local", sandboxed=False,
                                   datasets=list(f1), status="running")
    store.evaluations.set_metrics(run, [MetricValue(ds, "macro_f1", v, "score", True) for ds, v in f1.items()],
                                  status="succeeded")
    return run


def test_the_test_score_step_calls_only_the_boards_baseline_a_baseline(store):
    """Step 6 compared MiniLM with 'both baselines', bag-of-words among them, while the board (step 7) ranks
    bag-of-words and shows only the constant majority model as a baseline (issue 44, items 4 and 8)."""
    from dynadesk.demo import TEST_SETS, DemoState, print_test_scores

    state = DemoState()
    for model, base in (("minilm-sentiment", 70.0), ("bag-of-words-sentiment", 55.0), ("majority-sentiment", 20.0)):
        state.evaluations[model] = _scored(store, model, {ds: base + i for i, ds in enumerate(TEST_SETS)})
    log: list[str] = []
    said = print_test_scores(store, state, log.append)
    assert said == "minilm-sentiment beats bag-of-words-sentiment and the majority-sentiment baseline on 4/4 test sets"
    assert "both baselines" not in " ".join(log) and said in " ".join(log)
    # bag-of-words wins one test set: the count says so
    store.evaluations.set_metrics(state.evaluations["bag-of-words-sentiment"], [
        __import__("dynadesk.store.evaluations", fromlist=["MetricValue"]).MetricValue(
            ds, "macro_f1", 99.0 if i == 0 else 55.0, "score", True) for i, ds in enumerate(TEST_SETS)])
    assert print_test_scores(store, state, log.append).endswith("on 3/4 test sets")


def test_the_audit_step_groups_metric_fields_by_the_test_sets_they_share(home):
    """The audit's not-comparable timing fields were 26 names over 8 wrapped lines (every metric of every test set);
    the brief line names each metric and each test set once, the count stays exact, other fields stay whole."""
    ws = Workspace(home)
    Path(ws.bundles_dir).mkdir(parents=True, exist_ok=True)
    sets = ["(run)", "vader-amazon-test", "vader-movies-test", "vader-nyt-test", "vader-tweets-test"]
    timed = ["latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "throughput", "throughput_batched"]
    checks = [{"field": "evaluator.image_digest", "kind": "environment", "verdict": "not comparable", "note": "x"}]
    checks += [{"field": f"metrics[{ds}].{m}", "kind": "measured", "verdict": "not comparable", "note": LONG_NOTE}
               for ds in sets for m in timed]
    checks += [{"field": "metrics[vader-nyt-test].memory", "kind": "measured", "verdict": "outside tolerance"}]
    checks += [{"field": f"metrics[{ds}].macro_f1", "kind": "deterministic", "verdict": "identical"} for ds in sets]
    report = {"ok": True, "counts": {}, "checks": checks}
    (Path(ws.bundles_dir) / "b2.audit.json").write_text(json.dumps({"audited_at": "2026-12-05 11:00:00",
                                                                    "report": report}))
    said: list[str] = []
    steps = Steps([].append, 1, said.append)
    steps.start("Audit", "audit")
    audit_verdict(None, ws, "b2", "local", steps, force=False)  # type: ignore[arg-type]  # the cached verdict
    steps.close()
    assert said[0].startswith("[1/1] audit: PASS; deterministic fields identical 5/5")
    assert len(said) <= 4 and all(len(line) <= LINE_WIDTH for line in said), said
    brief = " ".join(" ".join(said).split())
    assert ("not comparable (26): evaluator.image_digest; metrics latency_p50_ms, latency_p90_ms, latency_p99_ms, "
            "throughput, throughput_batched of (run), vader-amazon-test, vader-movies-test, vader-nyt-test, "
            "vader-tweets-test") in brief, brief
    assert "outside tolerance (1): metrics[vader-nyt-test].memory" in brief  # one field: as it is named


def test_the_server_step_names_the_local_boards_other_figure_when_the_two_differ():
    """Step 9 said "reads Dynascore X on the local and the public board" whatever step 7's board had printed for
    the same run; where step 7 read another figure (its rates from every run in the workspace, the edition's from
    the synced rows), the reader saw two figures for one run and a claim that there is one (issue 44, item 3)."""
    from dynadesk.demo_rates import one_figure

    same = one_figure("minilm-sentiment", 145.6712, 145.6698)
    assert same == "minilm-sentiment reads Dynascore 145.67 on the local and the public board"
    other = one_figure("minilm-sentiment", 145.67, 131.2)
    assert other.startswith("minilm-sentiment reads Dynascore 145.67 on the local and the public board under the "
                            "board's rate edition; step 7's board read 131.20"), other
    assert "rates" in other.split("131.20", 1)[1]
    assert one_figure("minilm-sentiment", 145.67, None).endswith("on the local and the public board")


def test_the_closing_line_names_the_command_that_opens_the_app_on_the_demos_workspace(tmp_path, monkeypatch):
    """The last line said "'make gui' opens the app on this workspace" whatever the workspace: after
    'dynadesk --home DIR demo', 'make gui' opens the default workspace, not DIR (issue 44, item 8)."""
    from dynadesk.demo_steps import closing_line
    from dynadesk.workspace import resolve_home

    monkeypatch.delenv("DYNADESK_HOME", raising=False)
    default = closing_line(resolve_home(), 312.4)
    assert default == "demo finished in 312 s; 'make gui' opens the app on this workspace"
    other = closing_line(tmp_path / "ws", 312.4)
    assert other == f"demo finished in 312 s; 'dynadesk --home {tmp_path / 'ws'} gui' opens the app on this workspace"
    monkeypatch.setenv("DYNADESK_HOME", str(tmp_path / "ws"))  # make gui reads it too
    assert closing_line(tmp_path / "ws", 312.4) == default
