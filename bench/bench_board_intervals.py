"""Board reads with intervals, ties and rank intervals (issue 36) against the same board without them.

Two SQLite boards hold the same signed bundles (``MODELS`` models, two test sets): on one, every bundle carries
per-example outcomes, so the server stored each test set's shared resamples at ingest and every board answer
adds intervals, paired tests against the next row, "tied with" marks and the Dynascore rank interval; the other
has none, which is the read path before issue 36. A real ``dynadesk-server serve`` process answers the same
sequence of board queries (varying weights, as bench_server) on each, twice, interleaved (without, with,
without, with); rows report p50 and p99 of each and the paired ratio with/without. The goal: reads no slower
than the board without intervals (ratio of medians <= 1.25, within this machine's noise). Reads at a weight
setting never asked before (each one's rank intervals worked out then, from the board's kept
:class:`~dynadesk.scoring.rank_basis.RankBasis`) are measured the same way, over HTTP with both servers up and
in process as server CPU, each setting asked of both boards in turn: p50, p99 and the median of the paired
ratios with/without.
``--baseline-server PATH`` also serves the board with outcomes by another ``dynadesk-server`` (e.g. main's,
before this change).

    python bench/bench_board_intervals.py [--quick] [--baseline-server /work/main/.venv/bin/dynadesk-server]
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import (
    DATASETS,
    NO_LIMITS,
    Factory,
    _board_latencies,
    _free_port,
    _p99,
    _wait_ready,
)

from dynadesk.scoring import bootstrap as B
from dynadesk.sync.format.keys import fingerprint
from dynadesk.sync.format.timestamps import epoch_us
from dynadesk.sync.format.translog import entry_hash
from dynadesk.sync.server.db import CheckedBundle, ServerDB

MODELS = 200
EXAMPLES = (500, 1000)  # examples per test set in the outcomes (the bootstrap at ingest scales with them)
RATIO_GOAL = 1.25


def _outcomes(rng: np.random.Generator, skill: float) -> dict:
    out = {}
    for (name, digest, _size), n in zip(DATASETS, EXAMPLES):
        gold = rng.integers(0, 3, n)
        pred = np.where(rng.random(n) < skill, gold, rng.integers(0, 3, n))
        o = B.Outcomes("macro_f1", pred=pred.astype(np.int64), gold=gold.astype(np.int64),
                       allowed=np.ones(3, dtype=np.bool_))
        out[name] = B.encode_outcomes(o, digest)
    return out


def populate(path: Path, with_outcomes: bool) -> None:
    """``MODELS`` signed bundles (the same on both boards); with outcomes, their stats stored as at ingest."""
    from dynadesk.sync.format.parts import Outcome
    from dynadesk.sync.rules.board_stats import bundle_stats

    sizes = {name: n for (name, _digest, _size), n in zip(DATASETS, EXAMPLES)}  # the outcomes' own sizes

    factory = Factory(Ed25519PrivateKey.from_private_bytes(b"\x07" * 32))
    db = ServerDB(path)
    db.add_key(fingerprint(factory.pub), factory.pub, "bench")
    for name, digest, size in DATASETS:
        db.add_dataset("sentiment", name, "test", digest, size)
    rng, nrng = random.Random(1), np.random.default_rng(1)
    batch = []
    for i in range(MODELS):
        raw, info = factory.make(f"model-{i:04d}", i, rng)
        outcomes = _outcomes(nrng, 0.5 + 0.45 * i / MODELS)
        # the typed outcomes, parsed as the format parses them (the bundles themselves are signed without them)
        parsed = SimpleNamespace(intervals=None, outcomes=tuple(
            Outcome.from_json({"dataset": k, **v}, "bench", sizes) for k, v in outcomes.items()))
        stats = bundle_stats(parsed) if with_outcomes else None  # type: ignore[arg-type]
        batch.append(CheckedBundle(info["bundle_id"], raw, hashlib.sha256(raw).hexdigest(), "sentiment",
                                   info["model_name"], info["model_digest"], fingerprint(factory.pub),
                                   info["created_at"], epoch_us(info["created_at"]), {n: d for n, d, _ in DATASETS},
                                   info["metrics"], "", stats))
    db.accept_many(batch, entry_hash)
    db.close()


def serve_and_query(exe: str, db: Path, queries: int) -> list[float]:
    port = _free_port()
    proc = subprocess.Popen([exe, "serve", "--db", str(db), "--port", str(port), *NO_LIMITS],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_ready(port)
        _board_latencies(port, 5, random.Random(0))  # the first answer builds the prepared board
        return _board_latencies(port, queries, random.Random(2))
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _unseen(k: int) -> str:
    """The k-th weight setting of a run, never asked before on either board (rank intervals not cached)."""
    return f"weight.perf={1 + k / 1000:.3f}&weight.memory={1 + k % 3}&dataset.vader-movies-test={0.5 + k % 4 / 2:g}"


def first_reads(exe: str, paths: dict[str, Path], queries: int) -> dict[str, list[float]]:
    """Wall time of board reads at weight settings never seen before, over HTTP: both servers up, each setting
    asked of both in turn (the order alternating), so each pair of reads shares the machine's moment. The server
    answers such a read without waiting for the setting's rank intervals (``rank_intervals_pending``); ``shown``
    is how long after the first answer they were there (asked again every 2 ms, as a page would)."""
    procs, ports = {}, {}
    try:
        for name, path in paths.items():
            ports[name] = _free_port()
            procs[name] = subprocess.Popen([exe, "serve", "--db", str(path), "--port", str(ports[name]), *NO_LIMITS],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        conns = {}
        for name, port in ports.items():
            _wait_ready(port)
            _board_latencies(port, 5, random.Random(0))  # the first answer builds the prepared board
            conns[name] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        out: dict[str, list[float]] = {name: [] for name in paths}
        out["shown"] = []
        names = list(paths)
        pending = b'"rank_intervals_pending":true'
        for k in range(queries):
            path = f"/api/leaderboard/sentiment?{_unseen(k)}"
            answered: dict[str, tuple[float, bytes]] = {}
            for name in (names if k % 2 == 0 else names[::-1]):
                t0 = time.perf_counter()
                body = _get(conns[name], path)
                answered[name] = (time.perf_counter(), body)
                out[name].append((answered[name][0] - t0) * 1000)
            since, body = answered["with"]
            while pending in body:
                time.sleep(0.002)
                body = _get(conns["with"], path)
            out["shown"].append((time.perf_counter() - since) * 1000)
        return out
    finally:
        for proc in procs.values():
            proc.terminate()
            proc.wait(timeout=20)


def _get(conn: http.client.HTTPConnection, path: str) -> bytes:
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200 or b'"rows"' not in body:
        raise AssertionError(f"board query failed: {resp.status} {body[:200]!r}")
    return body


def cpu_per_query(paths: dict[str, Path], queries: int) -> dict[str, list[float]]:
    """Server CPU of one board answer and its JSON on the request thread (``thread_time``), in process, the two
    boards alternating on the same queries (less sensitive to other load than wall time); then one new weight
    setting per query (every rank interval a cache miss) on both boards, in turn: ``miss`` and ``miss_without``,
    paired by position. As in the server, a new setting's rank intervals are worked out off the request path
    (:class:`OffRequestPath`); their CPU is ``deferred`` (waited for after each pair, so it never overlaps a
    measured answer here)."""

    from dynadesk.sync.server.board_view import BoardView, OffRequestPath
    from dynadesk.sync.server.task_registry import board_tasks
    from dynadesk.sync.server.values import registry

    off_path = OffRequestPath()
    deferred: list[float] = []

    def timed(job):
        def run() -> None:
            t0 = time.thread_time()
            job()
            deferred.append((time.thread_time() - t0) * 1000)
        return off_path(run)

    views = {}
    for name, path in paths.items():
        db = ServerDB(path)
        tasks = board_tasks(db)
        views[name] = BoardView(db, tasks, {n: registry(t) for n, t in tasks.items()}, defer=timed)
    rng = random.Random(2)
    qs = [{"weight.perf": str(rng.choice([0, 1, 4, 5])), "weight.memory": str(rng.choice([0, 1, 3])),
           "dataset.vader-movies-test": str(rng.choice([0.5, 1, 2]))} for _ in range(queries)]
    out: dict[str, list[float]] = {name: [] for name in views}
    for q in qs[:40]:
        for v in views.values():
            v.answer("sentiment", q)
    off_path.drain()
    for q in qs:
        for name, v in views.items():
            t0 = time.thread_time()
            json.dumps(v.answer("sentiment", q), ensure_ascii=False, separators=(",", ":"))
            out[name].append((time.thread_time() - t0) * 1000)
    out = {k: sorted(x) for k, x in out.items()}
    out["miss"], out["miss_without"] = [], []  # unseen weight settings, the two boards in turn (paired, in order)
    for i in range(queries):
        q = dict(p.split("=") for p in _unseen(10_000 + i).split("&"))
        for name, v in (views.items() if i % 2 == 0 else list(views.items())[::-1]):
            t0 = time.thread_time()
            json.dumps(v.answer("sentiment", q), ensure_ascii=False, separators=(",", ":"))
            out["miss" if name == "with" else "miss_without"].append((time.thread_time() - t0) * 1000)
        off_path.drain()
    out["deferred"] = sorted(deferred[-queries:])
    off_path.shutdown()
    for v in views.values():
        v.db.close()
    return out


def run(quick: bool = False, baseline_server: str | None = None) -> list[dict]:
    smoke = quick and os.environ.get("DYNADESK_BENCH_SMOKE") == "1"  # the suite's smoke run: proves it runs
    queries = 20 if smoke else 60 if quick else 300
    exe = str(Path(sys.executable).with_name("dynadesk-server"))
    with tempfile.TemporaryDirectory(prefix="dynadesk-bench-iv-") as tmp:
        without, with_ = Path(tmp) / "without.db", Path(tmp) / "with.db"
        populate(without, False)
        populate(with_, True)
        lat: dict[str, list[float]] = {"without": [], "with": []}
        for _ in range(2):
            lat["without"] += serve_and_query(exe, without, queries)
            lat["with"] += serve_and_query(exe, with_, queries)
        extra = sorted(serve_and_query(baseline_server, with_, queries)) if baseline_server else None
        cpu = cpu_per_query({"without": without, "with": with_}, queries)
        first = first_reads(exe, {"without": without, "with": with_}, queries)
    load = os.getloadavg()[0]
    a, b = sorted(lat["with"]), sorted(lat["without"])
    p50a, p50b = a[len(a) // 2], b[len(b) // 2]
    rows = [
        {"measure": f"board read p50 with intervals, ties, rank intervals ({MODELS} rows)", "value": p50a, "unit": "ms",
         "goal": f"<= {RATIO_GOAL:g}x without", "baseline": f"without {p50b:.2f} ms (load {load:.1f})",
         "ratio": p50a / p50b, "ok": p50a <= RATIO_GOAL * p50b},
        {"measure": f"board read p99 with intervals, ties, rank intervals ({MODELS} rows)", "value": _p99(a),
         "unit": "ms", "goal": f"<= {RATIO_GOAL:g}x without", "baseline": f"without {_p99(b):.2f} ms",
         "ratio": _p99(a) / _p99(b), "ok": _p99(a) <= RATIO_GOAL * _p99(b)},
    ]
    cw, cn = cpu["with"], cpu["without"]
    rows += [
        {"measure": "board answer + JSON, server CPU per query p50, in process (with / without intervals)",
         "value": cw[len(cw) // 2], "unit": "ms", "goal": f"<= {RATIO_GOAL:g}x without",
         "baseline": f"without {cn[len(cn) // 2]:.2f} ms", "ratio": cw[len(cw) // 2] / cn[len(cn) // 2],
         "ok": cw[len(cw) // 2] <= RATIO_GOAL * cn[len(cn) // 2]},
        {"measure": "board answer + JSON, server CPU per query p99, in process (with / without intervals)",
         "value": _p99(cw), "unit": "ms", "goal": f"<= {RATIO_GOAL:g}x without",
         "baseline": f"without {_p99(cn):.2f} ms",
         "ratio": _p99(cw) / _p99(cn), "ok": _p99(cw) <= RATIO_GOAL * _p99(cn)},
    ]
    rows += _first_read_rows({k: first[k] for k in ("with", "without")},
                             "first read at an unseen weight setting over HTTP", "wall")
    rows += _first_read_rows({"with": cpu["miss"], "without": cpu["miss_without"]},
                             "first read at an unseen weight setting, server CPU in process", "CPU")
    shown, deferred = sorted(first["shown"]), cpu["deferred"]
    rows.append({"measure": "a new setting's rank intervals shown, after its first answer over HTTP, p50",
                 "value": shown[len(shown) // 2], "unit": "ms", "goal": "-",
                 "baseline": f"p99 {_p99(shown):.2f} ms; their CPU off the request path p50 "
                             f"{deferred[len(deferred) // 2]:.2f} ms", "ratio": None, "ok": None})
    if extra:
        p50c = extra[len(extra) // 2]
        rows.append({"measure": f"board read p50 by {baseline_server} on the board with outcomes", "value": p50c,
                     "unit": "ms", "goal": "-", "baseline": f"its p99 {_p99(extra):.2f} ms", "ratio": p50a / p50c,
                     "ok": None})
    return rows


def _first_read_rows(paired: dict[str, list[float]], what: str, kind: str) -> list[dict]:
    """p50 and p99 of first reads with intervals against the same reads of the board without them, and the median
    of the per-query paired ratios (the issue's goal: no slower than a plain read, within this machine's noise)."""
    w, n = paired["with"], paired["without"]
    ratios = sorted(a / b for a, b in zip(w, n))
    ws, ns = sorted(w), sorted(n)
    load = os.getloadavg()[0]
    return [
        {"measure": f"{what} p50 ({MODELS} rows, {len(w)} settings)", "value": ws[len(ws) // 2], "unit": "ms",
         "goal": f"<= {RATIO_GOAL:g}x without", "baseline": f"without {ns[len(ns) // 2]:.2f} ms (load {load:.1f})",
         "ratio": ws[len(ws) // 2] / ns[len(ns) // 2], "ok": ws[len(ws) // 2] <= RATIO_GOAL * ns[len(ns) // 2]},
        {"measure": f"{what} p99", "value": _p99(ws), "unit": "ms", "goal": f"<= {RATIO_GOAL:g}x without",
         "baseline": f"without {_p99(ns):.2f} ms", "ratio": _p99(ws) / _p99(ns),
         "ok": _p99(ws) <= RATIO_GOAL * _p99(ns)},
        {"measure": f"{what}: median of paired ratios with/without ({kind})", "value": ratios[len(ratios) // 2],
         "unit": "x", "goal": f"<= {RATIO_GOAL:g}", "baseline": "the same setting on the board without intervals",
         "ratio": None, "ok": ratios[len(ratios) // 2] <= RATIO_GOAL},
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline-server", help="another dynadesk-server to serve the board with intervals")
    args = ap.parse_args()
    for r in run(args.quick, args.baseline_server):
        ratio = "" if r["ratio"] is None else f"  ratio {r['ratio']:.2f}"
        print(f"{r['measure']}: {r['value']:.2f} {r['unit']} (goal {r['goal']}; baseline {r['baseline']}){ratio}")


if __name__ == "__main__":
    main()
