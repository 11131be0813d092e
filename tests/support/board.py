"""A served public board with two submitters, two hardware classes and both runners (real server, real bundles).

Used by the board page tests (tests/server/test_server_board_*.py) and
packaging/board_screenshots.py's fallback; the runs are like tests/support/sync.make_run's, but
each chooses its runner, sandbox flag and machine, which is what the board filters on.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynadesk.store.evaluations import MetricValue, RunChange, RunSetup, WorkerSettings
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import sync_queue
from dynadesk.sync.format.keys import key_info
from dynadesk.sync.server.admin import import_workspace_datasets
from dynadesk.sync.server.db import ServerDB
from support.sync import (
    NO_LIMITS,
    TEST_SETS,
    ensure_datasets,
    free_port,
    start_server,
    stop_server,
    stored_model,
    workspace_with_key,
    write_run_folder,
)

LABELS = ("negative", "neutral", "positive")
SMALL = {"cpu_model": "Test CPU 2000", "cores": 2, "memory_limit_gib": 4, "gpus": "none", "runtime": "cpu"}
BIG = {"cpu_model": "Test CPU 9000", "cores": 16, "memory_limit_gib": 64, "gpus": "none", "runtime": "cpu"}


def board_run(store: Any, runs_dir: Path, model: str, perf: float, throughput: float, memory: float, *,
              robustness: float = 60.0, fairness: float = 80.0, runner: str = "docker", sandboxed: bool = True,
              hardware: dict[str, Any] | None = None, datasets: tuple[str, ...] = TEST_SETS) -> int:
    """A succeeded sentiment run (perf differs per dataset: +0, +3, ...) on a chosen runner and machine."""
    ensure_datasets(store, datasets)
    m = stored_model(store, model)
    ev = store.evaluations.create(m.id, "sentiment", RunSetup(worker=WorkerSettings(batch_size=32, seed=13, threads=2)),
                                  runner=runner, sandboxed=sandboxed, datasets=list(datasets), status="running")
    run_dir = Path(runs_dir) / str(ev)
    metrics = write_run_folder(store, run_dir, m, datasets, perf, robustness, fairness, step=3.0)
    metrics += [MetricValue("", "throughput", throughput, "examples/s", False),
                MetricValue("", "memory", memory, "GiB", False)]
    pred = run_dir / "out" / "predictions.jsonl"
    store.evaluations.set_metrics(
        ev, metrics,
        RunChange(image_id="sha256:" + "ab" * 32, evaluator_version="sha256:" + "cd" * 32, run_dir=str(run_dir),
                  predictions_digest="sha256:" + hashlib.sha256(pred.read_bytes()).hexdigest(),
                  environment={"python": "3.11.2", "torch": "2.13.0", "hardware": dict(hardware or SMALL),
                               "cpu_model": (hardware or SMALL)["cpu_model"]}), status="succeeded")
    return ev


@dataclass
class Served:
    url: str
    stores: list[Any]
    db: Any  # the server's database, open in this process too (to register an auditor, say)
    bundles: dict[str, str] = field(default_factory=dict)  # "<submitter>/<model>" -> bundle id


# (submitter, model, perf, throughput, memory, runner, sandboxed, hardware)
ROWS: tuple[tuple[str, str, float, float, float, str, bool, dict[str, Any]], ...] = (
    ("alice", "fast-small", 60.0, 3000.0, 0.2, "docker", True, SMALL),
    ("alice", "slow-accurate", 75.0, 40.0, 6.0, "docker", True, SMALL),
    ("alice", "middle", 68.0, 700.0, 1.0, "docker", True, SMALL),
    ("bob", "bob-local", 71.0, 900.0, 0.8, "local", False, SMALL),
    ("bob", "bob-bigbox", 73.0, 5000.0, 2.0, "docker", True, BIG),
)


UNUSED_SET = "vader-unused-test"  # accepted by the board, used by no submission: it gets no slider


def serve_board(tmp: Path, rows: tuple[tuple[Any, ...], ...] = ROWS,
                db_target: Path | str | None = None) -> tuple[Served, Any]:
    """Workspaces per submitter, their bundles synced to a real ``dynadesk-server`` that also accepts
    :data:`UNUSED_SET`; returns (served, stop). ``db_target``: a SQLite file (default ``tmp/board.db``) or a
    PostgreSQL URL."""
    db_path = db_target or tmp / "board.db"
    db = ServerDB(db_path)
    workspaces: dict[str, tuple[Any, Any]] = {}
    pending: list[tuple[str, str, Any, int]] = []
    for submitter, model, perf, tput, mem, runner, sandboxed, hw in rows:
        if submitter not in workspaces:
            ws, store = workspace_with_key(tmp / f"ws-{submitter}")
            info = key_info(ws.keys_dir)
            db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), submitter)
            workspaces[submitter] = (ws, store)
        ws, store = workspaces[submitter]
        ev = board_run(store, ws.runs_dir, model, perf, tput, mem, runner=runner, sandboxed=sandboxed, hardware=hw)
        pending.append((submitter, model, store, create_bundle(ws, store, ev).id))
    first = next(iter(workspaces.values()))[0]
    import_workspace_datasets(db, first.home)
    db.add_dataset("sentiment", UNUSED_SET, "test", "sha256:" + "0f" * 32, 5)
    port = free_port()
    proc = start_server(db_path, port, (*NO_LIMITS, "--key", str(tmp / "server.key")))
    url = f"http://127.0.0.1:{port}"
    for _ws, store in workspaces.values():
        assert sync_queue(store, url).ok
    served = Served(url, [s for _, s in workspaces.values()], db,
                    {f"{sub}/{model}": bid for sub, model, _, bid in pending})

    def stop() -> None:
        stop_server(proc)
        for s in served.stores:
            s.close()
        db.close()

    return served, stop


CHROMIUM = os.environ.get("DYNADESK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def chromium() -> Iterator[Any]:
    """Headless Debian chromium through Playwright (a fixture body: missing pieces fail in CI, else skip)."""
    from support import missing

    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        missing("playwright", str(exc))
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        missing("chromium", f"{CHROMIUM} not found; apt-get install chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
