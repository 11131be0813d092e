"""Leaderboard server: verified uploads per second and board query p99 with 100k stored bundles,
and board query p99 under a flood of invalid uploads.

Goals (2 cores): >= 500 verified uploads/s; board query p99 < 50 ms; under a flood of invalid
bodies (1 MiB non-canonical bundles from an unknown key, and junk) from two clients, the board
query p99 stays within 2x of the quiet p99. A real
``dynadesk-server serve`` process (``--workers``, default 2: one per core of the 2-core goal) runs on loopback
over a database already
holding 100,000 signed bundles (500 models x 200 submissions each, all in the
transparency log); fresh signed bundles are then POSTed by two keep-alive
client threads, and the board is queried with varying weights. Every upload
goes through the full path (parse, canonical check, key lookup, Ed25519
verify, board check, atomic insert + log append). Baseline: the same bundle's
verification alone, in process (the ceiling the HTTP server can approach).
Wall-clock rates depend on what else the machine runs, so the server's CPU time
per upload is reported too (psutil): uploads per CPU-second is what one free
core sustains, and the goal for it is half the 2-core goal. ``--quick`` stores
5,000 bundles and uploads 200; ``--stored N`` (or ``DYNADESK_BENCH_SERVER_STORED=N make bench``) picks
another size.

Both backends are measured on the same bundles: SQLite (a file) and PostgreSQL (a local cluster
this benchmark starts in a temp folder, tests/_pg.py); the PostgreSQL rows give the SQLite value
as their baseline. ``--backend sqlite|postgresql`` runs one.

    python bench/bench_server.py [--quick] [--stored N] [--backend both]
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.sync.board import board_metrics
from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.envelope import envelope_bytes, load_and_verify
from dynadesk.sync.format.keys import fingerprint, public_raw
from dynadesk.sync.format.timestamps import epoch_us
from dynadesk.sync.format.translog import entry_hash
from dynadesk.sync.server.db import CheckedBundle, ServerDB

DATASETS = [("vader-movies-test", "sha256:" + "1" * 64, 2000), ("vader-tweets-test", "sha256:" + "2" * 64, 4200)]
UPLOAD_GOAL, P99_GOAL_MS, FLOOD_RATIO_GOAL = 500.0, 50.0, 2.0
NO_LIMITS = ["--address-rate", "1000000/1000000", "--key-rate", "1000000/1000000"]


class Factory:
    """Signed bundles from one canonical template; only string/number slots change (stays RFC 8785)."""

    def __init__(self, key: Ed25519PrivateKey):
        self.key, self.pub = key, public_raw(key)
        metrics = []
        for name, _, _ in DATASETS:
            for m in ("perf", "robustness", "fairness"):
                metrics.append({"dataset": name, "metric": m, "value": f"@{name}:{m}@", "unit": "score",
                                "deterministic": True})
        for m, unit in (("throughput", "examples/s"), ("memory", "GiB"), ("latency_p99_ms", "ms")):
            metrics.append({"dataset": "", "metric": m, "value": f"@:{m}@", "unit": unit, "deterministic": False})
        payload = {
            "created_at": "@CREATED@", "task": "sentiment", "model": {"name": "@MODEL@", "digest": "@MDIGEST@"},
            "datasets": [{"name": n, "split": "test", "digest": d, "size": s} for n, d, s in DATASETS],
            "evaluator": {"image_digest": "sha256:" + "ab" * 32, "version": "sha256:" + "cd" * 32},
            "runner": {"kind": "docker", "sandboxed": True},
            "environment": {"cpu": "Bench CPU", "cores": 2, "python": "3.11.2", "torch": "2.13.0"},
            "seeds": {"seed": 13}, "settings": {"batch_size": 32, "device": "cpu", "seed": 13},
            "metrics": metrics,
            "predictions": {"digest": "sha256:" + "ef" * 32, "merkle_root": "@ROOT@", "count": 6200},
            "submitter": {"key_fingerprint": fingerprint(self.pub)}, "evaluation_id": 1}
        self.template = canonical_bytes(payload)
        self.slots = [f'"@{n}:{m}@"'.encode() for n in ("vader-movies-test", "vader-tweets-test")
                      for m in ("perf", "robustness", "fairness")] + [b'"@:throughput@"', b'"@:memory@"',
                                                                      b'"@:latency_p99_ms@"']

    def make(self, model: str, i: int, rng: random.Random) -> tuple[bytes, dict]:
        """A signed bundle and what the server would extract from it (id, model, time, board metrics)."""
        created = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_700_000_000 + i)) + ".000Z"
        raw = (self.template.replace(b"@CREATED@", created.encode())
               .replace(b"@MODEL@", model.encode())
               .replace(b"@MDIGEST@", b"sha256:" + hashlib.sha256(model.encode()).hexdigest().encode())
               .replace(b"@ROOT@", hashlib.sha256(f"{model}{i}".encode()).hexdigest().encode()))
        values = [rng.uniform(40, 95) for _ in range(6)] + [rng.uniform(5, 3000), rng.uniform(0.1, 12),
                                                             rng.uniform(1, 50)]
        for slot, v in zip(self.slots, values):
            raw = raw.replace(slot, rfc8785.dumps(v))
        names = [f"{n}:{m}" for n, _, _ in DATASETS for m in ("perf", "robustness", "fairness")] + \
            [":throughput", ":memory", ":latency_p99_ms"]
        units = {"throughput": "examples/s", "memory": "GiB", "latency_p99_ms": "ms"}
        metrics = [{"dataset": k.split(":")[0], "metric": k.split(":")[1], "value": v,
                    "unit": units.get(k.split(":")[1], "score"), "deterministic": k.split(":")[0] != ""}
                   for k, v in zip(names, values)]
        envelope = envelope_bytes(raw, self.pub, self.key.sign(raw))
        return envelope, {"bundle_id": hashlib.sha256(raw).hexdigest(), "model_name": model, "created_at": created,
                          "model_digest": "sha256:" + hashlib.sha256(model.encode()).hexdigest(),
                          "metrics": board_metrics(metrics)}


def populate(db_path: Path | str, factory: Factory, n: int, models: int) -> None:
    """Store ``n`` signed bundles in batches of 2,000 (the first 50 fully verified as a cross-check)."""
    db = ServerDB(db_path)
    db.add_key(fingerprint(factory.pub), factory.pub, "bench")
    for name, digest, size in DATASETS:
        db.add_dataset("sentiment", name, "test", digest, size)
    rng = random.Random(1)
    batch = []
    for i in range(n):
        raw, info = factory.make(f"model-{i % models:04d}", i, rng)
        if i < 50:  # the factory's bytes are real bundles: full verification agrees with what it states
            b = load_and_verify(raw)
            assert (b.id, b.model_name, board_metrics(b.payload["metrics"])) == \
                (info["bundle_id"], info["model_name"], info["metrics"])
        batch.append(CheckedBundle(info["bundle_id"], raw, hashlib.sha256(raw).hexdigest(), "sentiment",
                                   info["model_name"], info["model_digest"], fingerprint(factory.pub),
                                   info["created_at"], epoch_us(info["created_at"]),
                                   {n: d for n, d, _ in DATASETS}, info["metrics"]))
        if len(batch) == 2000 or i == n - 1:
            db.accept_many(batch, entry_hash)
            batch = []
    db.close()


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post_all(port: int, bundles: list[bytes], statuses: list[int]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for raw in bundles:
        conn.request("POST", "/api/bundles", body=raw, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        statuses.append(resp.status)
    conn.close()


def invalid_bodies(factory: Factory) -> list[bytes]:
    """What a flood sends: a ~1 MiB non-canonical bundle signed by an unregistered key, and junk."""
    stranger = Ed25519PrivateKey.generate()
    raw, _ = Factory(stranger).make("flood", 0, random.Random(3))
    doc = __import__("json").loads(raw)
    doc["payload"]["environment"]["pad"] = ["x" * 100] * 9000
    big = __import__("json").dumps(doc, separators=(", ", ": ")).encode()[: (1 << 20)]
    return [big, b"{}", b"not json at all", raw.replace(b'"version":1', b'"version":2')]


def _flood(port: int, bodies: list[bytes], stop: threading.Event, sent: list[int]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    i = 0
    while not stop.is_set():
        conn.request("POST", "/api/bundles", body=bodies[i % len(bodies)], headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        if resp.status < 400:
            raise AssertionError(f"an invalid body was accepted ({resp.status})")
        sent.append(resp.status)
        i += 1
    conn.close()


def _board_latencies(port: int, n: int, rng: random.Random) -> list[float]:
    lat = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(n):
        q = f"weight.perf={rng.choice([0, 1, 4, 5])}&weight.memory={rng.choice([0, 1, 3])}" \
            f"&dataset.vader-movies-test={rng.choice([0.5, 1, 2])}"
        t0 = time.perf_counter()
        conn.request("GET", f"/api/leaderboard/sentiment?{q}")
        resp = conn.getresponse()
        body = resp.read()
        lat.append((time.perf_counter() - t0) * 1000)
        if resp.status != 200 or b'"rows"' not in body:
            raise AssertionError(f"board query failed: {resp.status} {body[:200]!r}")
    conn.close()
    return sorted(lat)


def _p99(lat: list[float]) -> float:
    return lat[min(len(lat) - 1, int(round(0.99 * len(lat))) - 1)]


def _wait_ready(port: int) -> None:
    for _ in range(300):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/api/tasks")
            c.getresponse().read()
            return
        except OSError:
            time.sleep(0.1)


def measure(target: str | Path, key_path: Path, fresh: list[bytes], factory: Factory, workers: int,
            quick: bool) -> dict:
    """Upload ``fresh`` through a real ``serve`` process over ``target``; time board queries, quiet and flooded."""
    rng = random.Random(2)
    uploads = len(fresh)
    port = _free_port()
    exe = Path(sys.executable).with_name("dynadesk-server")
    proc = subprocess.Popen([str(exe), "serve", "--db", str(target), "--port", str(port), "--key", str(key_path),
                             "--workers", str(workers), *NO_LIMITS],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_ready(port)
        server = psutil.Process(proc.pid)

        def server_cpu() -> float:
            procs = [server] + server.children(recursive=True)
            return sum(sum(p.cpu_times()[:2]) for p in procs)

        cpu0 = server_cpu()
        statuses: list[int] = []
        halves = [fresh[0::2], fresh[1::2]]
        threads = [threading.Thread(target=_post_all, args=(port, h, statuses)) for h in halves]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        t_up = time.perf_counter() - t0
        cpu_up = server_cpu() - cpu0
        if statuses.count(201) != uploads:
            raise AssertionError(f"only {statuses.count(201)} of {uploads} uploads accepted: {set(statuses)}")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/api/leaderboard/sentiment")  # first query after the uploads rebuilds the row cache
        conn.getresponse().read()
        conn.close()
        queries = 60 if quick else 300
        cpu_q0 = server_cpu()
        lat = _board_latencies(port, queries, rng)
        cpu_query_ms = (server_cpu() - cpu_q0) / len(lat) * 1000
        stop, sent = threading.Event(), []
        flooders = [threading.Thread(target=_flood, args=(port, invalid_bodies(factory), stop, sent))
                    for _ in range(2)]
        for t in flooders:
            t.start()
        time.sleep(0.5)
        t_flood = time.perf_counter()
        flood_lat = _board_latencies(port, queries, rng)
        flood_rate = len(sent) / (time.perf_counter() - t_flood + 0.5)
        stop.set()
        for t in flooders:
            t.join()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return {"rate": uploads / t_up, "per_cpu": uploads / cpu_up, "lat": lat, "p99": _p99(lat),
            "flood_p99": _p99(flood_lat), "flood_rate": flood_rate, "cpu_query_ms": cpu_query_ms}


def _rows(m: dict, backend: str, where: str, verify_rate: float, t_pop: float, stored: int,
          sqlite: dict | None) -> list[dict]:
    lat, p99, rate, per_cpu = m["lat"], m["p99"], m["rate"], m["per_cpu"]
    median = lat[len(lat) // 2]
    up_base, up_ratio = (f"in-process verify only {verify_rate:.0f}/s", rate / verify_rate) if sqlite is None else \
        (f"SQLite {sqlite['rate']:.0f}/s", rate / sqlite["rate"])
    p99_base, p99_ratio = (f"median {median:.1f} ms", p99 / median) if sqlite is None else \
        (f"SQLite {sqlite['p99']:.1f} ms", p99 / sqlite["p99"])
    return [
        {"measure": f"[{backend}] verified uploads/s over HTTP ({where})", "value": rate, "unit": "/s",
         "goal": f">= {UPLOAD_GOAL:g}/s", "baseline": up_base, "ratio": up_ratio, "ok": rate >= UPLOAD_GOAL},
        {"measure": f"[{backend}] verified uploads per server CPU-second (what one free core sustains)",
         "value": per_cpu, "unit": "/cpu-s", "goal": f">= {UPLOAD_GOAL / 2:g}/cpu-s",
         "baseline": f"machine load average {os.getloadavg()[0]:.1f} during the run", "ratio": None,
         "ok": per_cpu >= UPLOAD_GOAL / 2},
        {"measure": f"[{backend}] board query p99 ({where})", "value": p99, "unit": "ms",
         "goal": f"< {P99_GOAL_MS:g} ms", "baseline": p99_base, "ratio": p99_ratio, "ok": p99 < P99_GOAL_MS},
        {"measure": f"[{backend}] board query p99 under an invalid-upload flood ({m['flood_rate']:.0f} bodies/s,"
         " 2 clients)", "value": m["flood_p99"], "unit": "ms", "goal": f"<= {FLOOD_RATIO_GOAL:g}x quiet p99",
         "baseline": f"quiet p99 {p99:.1f} ms", "ratio": m["flood_p99"] / p99,
         "ok": m["flood_p99"] <= FLOOD_RATIO_GOAL * p99},
        {"measure": f"[{backend}] board query server CPU per query (mean; what a free core spends)",
         "value": m["cpu_query_ms"], "unit": "ms", "goal": f"< {P99_GOAL_MS:g} ms",
         "baseline": f"wall median {median:.1f} ms", "ratio": None, "ok": m["cpu_query_ms"] < P99_GOAL_MS},
        {"measure": f"[{backend}] populate {stored:,} signed bundles (sign + store + log)", "value": t_pop,
         "unit": "s", "goal": "-", "baseline": "-", "ratio": None, "ok": None},
    ]


def _postgres():
    """A local PostgreSQL for the benchmark (tests/_pg.py): durable pages, commits acknowledged before their WAL
    is flushed (``synchronous_commit=off``), which is what SQLite's ``synchronous=NORMAL`` WAL mode does too."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _pg import Cluster, pg_bin

    if pg_bin() is None:
        return None
    root = tempfile.mkdtemp(prefix="dynadesk-bench-pg-")  # its own: the postgres user must reach it
    return Cluster(Path(root), fast=False, settings={"synchronous_commit": "off", "shared_buffers": "256MB"})


def run(quick: bool = False, workers: int = 2, db: Path | None = None, stored: int | None = None,
        backends: tuple[str, ...] = ("sqlite", "postgresql")) -> list[dict]:
    """Each backend gets the same ``stored`` bundles and the same fresh uploads; PostgreSQL rows compare to SQLite's.
    ``db``: reuse a SQLite database a previous run populated (its bundles stay; the new key is added)."""
    n_stored, uploads, models = (5_000, 200, 100) if quick else (100_000, 1_000, 500)
    n_stored = stored or int(os.environ.get("DYNADESK_BENCH_SERVER_STORED", "0")) or n_stored  # make bench: the env
    factory = Factory(Ed25519PrivateKey.generate())
    tmp = Path(tempfile.mkdtemp(prefix="dynadesk-bench-server-"))
    rng = random.Random(2)
    fresh = [factory.make(f"model-{i % models:04d}", n_stored + i, rng)[0] for i in range(uploads)]
    t0 = time.perf_counter()
    for raw in fresh[:200]:
        load_and_verify(raw)
    verify_rate = 200 / (time.perf_counter() - t0)
    rows: list[dict] = []
    results: dict[str, dict] = {}
    cluster = None
    try:
        for backend in backends:
            if backend == "sqlite":
                target: str | Path = Path(db) if db else tmp / "board.db"
            else:
                cluster = _postgres()
                if cluster is None:
                    rows.append({"measure": "[postgresql] not measured: initdb/pg_ctl not found", "value": None,
                                 "unit": "", "goal": "-", "baseline": "packaging/system_deps.sh installs postgresql",
                                 "ratio": None, "ok": None})
                    continue
                target = cluster.new_database("bench")
            t0 = time.perf_counter()
            here = n_stored
            if isinstance(target, Path) and target.exists():
                sdb = ServerDB(target)
                sdb.add_key(fingerprint(factory.pub), factory.pub, "bench")
                here = sdb.count_bundles()
                sdb.close()
            else:
                populate(target, factory, n_stored, models)
            t_pop = time.perf_counter() - t0
            results[backend] = measure(target, tmp / "server.key", fresh, factory, workers, quick)
            where = f"{here:,} stored bundles, {models} models, {workers} worker(s)"
            rows += _rows(results[backend], backend, where, verify_rate, t_pop, here,
                          results.get("sqlite") if backend != "sqlite" else None)
    finally:
        if cluster is not None:
            cluster.stop()
            shutil.rmtree(cluster.root, ignore_errors=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5,000 stored bundles, 200 uploads")
    ap.add_argument("--workers", type=int, default=2, help="server worker processes (dynadesk-server serve --workers)")
    ap.add_argument("--db", type=Path, help="reuse (or create and keep) this SQLite server database")
    ap.add_argument("--stored", type=int, help="bundles stored before measuring (default 100,000; 5,000 with --quick)")
    ap.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    args = ap.parse_args()
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    rows = run(quick=args.quick, workers=args.workers, db=args.db, stored=args.stored, backends=backends)
    print("measure | value | goal | baseline ratio")
    for r in rows:
        ok = {True: "ok", False: "MISSED", None: ""}[r["ok"]]
        ratio = "" if r["ratio"] is None else f" (x{r['ratio']:.2f})"
        value = "-" if r["value"] is None else f"{r['value']:.1f}"
        print(f"{r['measure']} | {value} {r['unit']} | {r['goal']} {ok} | {r['baseline']}{ratio}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
