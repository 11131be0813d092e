"""Mixed traffic against the leaderboard server on PostgreSQL, driven by locust (issue 38).

locust (``bench/locust/board_traffic.py``) runs as its own process, headless, with a fixed number of
users and no think time, against a real ``dynadesk-server serve`` over a PostgreSQL database holding
``stored`` bundles: board reads with changing weights, model pages, log reads, valid uploads signed by
three registered keys (each sent once) and invalid bodies (each must get a 4xx). It runs twice in one
bench run, against one server process and against two (``--workers 2``) on the same database, and
reports per route throughput and p50/p99, and the two-process / one-process throughput ratio. After
each run every valid upload locust saw accepted must be stored exactly once (users finish the request
in flight when the time is up: ``--stop-timeout``).

    python bench/bench_locust.py [--quick] [--users 16] [--seconds 20]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_server import Factory, _postgres, _wait_ready, invalid_bodies, populate  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

from dynadesk.sync.format.keys import fingerprint  # noqa: E402
from dynadesk.sync.server.db import ServerDB  # noqa: E402

LOCUSTFILE = HERE / "locust" / "board_traffic.py"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bodies(n_valid: int, models: int, seed: int, factories: list[Factory]) -> list[bytes]:
    rng = random.Random(seed)
    return [factories[i % len(factories)].make(f"load-{i % models:03d}", 10_000_000 + seed * 100_000 + i, rng)[0]
            for i in range(n_valid)]


def _drive(url: str, users: int, seconds: int, bodies_file: Path, prefix: Path) -> list[dict]:
    env = dict(os.environ, DYNADESK_LOCUST_BODIES=str(bodies_file), DYNADESK_LOCUST_ACKS=str(prefix) + ".acks")
    exe = Path(sys.executable).with_name("locust")
    cmd = [str(exe), "-f", str(LOCUSTFILE), "--headless", "-u", str(users), "-r", str(users), "-t", f"{seconds}s",
           "--host", url, "--csv", str(prefix), "--only-summary", "--stop-timeout", "30",
           "--loglevel", "WARNING", "--exit-code-on-error", "0"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 120)
    if out.returncode != 0:
        raise RuntimeError(f"locust failed ({out.returncode}): {out.stderr[-2000:]}")
    with open(f"{prefix}_stats.csv", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _measure(target: str, key: Path, workers: int, users: int, seconds: int, bodies_file: Path,
             tmp: Path) -> tuple[list[dict], float]:
    port = _free_port()
    exe = Path(sys.executable).with_name("dynadesk-server")
    proc = subprocess.Popen([str(exe), "serve", "--db", target, "--port", str(port), "--key", str(key),
                             "--workers", str(workers), "--address-rate", "1000000/1000000",
                             "--key-rate", "1000000/1000000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_ready(port)
        load0 = os.getloadavg()[0]
        stats = _drive(f"http://127.0.0.1:{port}", users, seconds, bodies_file, tmp / f"w{workers}")
        return stats, max(load0, os.getloadavg()[0])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _rows(stats: list[dict], workers: int, load: float, where: str) -> list[dict]:
    rows = []
    for s in stats:
        name = s["Name"] if s["Name"] != "Aggregated" else "all routes"
        fails = int(s["Failure Count"])
        rows.append({"measure": f"[locust, PostgreSQL, {workers} server process(es)] {name}: p99",
                     "value": float(s["99%"]), "unit": "ms", "goal": "0 failures",
                     "baseline": (f"p50 {float(s['50%']):.0f} ms, {float(s['Requests/s']):.1f} req/s, "
                                  f"{s['Request Count']} requests, {fails} failures; {where}; load avg {load:.1f}"),
                     "ratio": None, "ok": fails == 0})
    return rows


def run(quick: bool = False, users: int = 16, seconds: int | None = None) -> list[dict]:
    smoke = quick and os.environ.get("DYNADESK_BENCH_SMOKE") == "1"  # the suite's smoke run: proves it runs
    seconds = seconds or (3 if smoke else 5 if quick else 30)
    n_stored, models = (500, 20) if smoke else (2_000, 50) if quick else (20_000, 200)
    n_stored = int(os.environ.get("DYNADESK_BENCH_SERVER_STORED", "0")) or n_stored  # the smoke test: 1,000
    n_valid = 400 if quick else 3_000
    cluster = _postgres()
    if cluster is None:
        return [{"measure": "[locust] not measured: initdb/pg_ctl not found", "value": None, "unit": "", "goal": "-",
                 "baseline": "packaging/system_deps.sh installs postgresql", "ratio": None, "ok": None}]
    tmp = Path(tempfile.mkdtemp(prefix="dynadesk-bench-locust-"))
    try:
        target = cluster.new_database("locust")
        base = Factory(Ed25519PrivateKey.generate())
        populate(target, base, n_stored, models)
        uploaders = [Factory(Ed25519PrivateKey.generate()) for _ in range(3)]
        db = ServerDB(target)
        for i, f in enumerate(uploaders):
            db.add_key(fingerprint(f.pub), f.pub, f"lab-{i}")
        before_ids = [b["id"] for b in db.list_bundles(None, 1_000_000)]
        model_ids = before_ids[:200]
        stored_before = db.count_bundles()
        db.close()
        junk = [b for b in invalid_bodies(base) if len(b) < 100_000]
        rows: list[dict] = []
        totals: dict[int, float] = {}
        acked: set[str] = set()
        for workers in (1, 2):
            bodies = tmp / f"bodies-{workers}.json"
            bodies.write_text(json.dumps({"valid": [b.hex() for b in _bodies(n_valid, models, workers, uploaders)],
                                          "invalid": [b.hex() for b in junk], "models": model_ids}))
            stats, load = _measure(target, tmp / "server.key", workers, users, seconds, bodies, tmp)
            where = f"{stored_before:,}+ stored bundles, {users} users, {seconds} s"
            rows += _rows(stats, workers, load, where)
            agg = next(s for s in stats if s["Name"] == "Aggregated")
            totals[workers] = float(agg["Requests/s"])
            acks_file = tmp / f"w{workers}.acks"
            acked |= set(acks_file.read_text().split()) if acks_file.exists() else set()
        db = ServerDB(target)
        stored_after = db.count_bundles()
        new_ids = {b["id"] for b in db.list_bundles(None, 1_000_000)} - set(before_ids)
        db.close()
        rows.append({"measure": "[locust] valid uploads acknowledged 201, each stored exactly once",
                     "value": len(acked), "unit": "bundles", "goal": "all stored, nothing else added",
                     "baseline": f"{stored_after - stored_before} bundles added to the {stored_before} stored",
                     "ratio": None, "ok": acked == new_ids and stored_after == stored_before + len(acked)})
        rows.append({"measure": "[locust] throughput, 2 server processes / 1", "value": totals[2], "unit": "req/s",
                     "goal": "-", "baseline": f"1 process: {totals[1]:.1f} req/s (same database, same mix)",
                     "ratio": totals[2] / totals[1] if totals[1] else None, "ok": None})
        return rows
    finally:
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--users", type=int, default=16)
    ap.add_argument("--seconds", type=int)
    args = ap.parse_args()
    t0 = time.monotonic()
    for row in run(args.quick, args.users, args.seconds):
        print(json.dumps(row))
    print(f"({time.monotonic() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
