"""Leaderboard server: verified uploads per core over HTTP, board query p99, and board p99 under a
registered key's flood of costly bodies (issues 32 and 39).

Goals: >= 500 verified uploads per server CPU-second (what one core sustains) over HTTP; board query
p99 < 50 ms; under one registered key's flood of signed, 1 MiB, non-canonical bundles (each costs the
server a signature check over 1 MiB plus a JSON parse and canonical-form comparison, ~25 ms of Python)
from two clients, board query p99 within 2x of the quiet p99.

A real ``dynadesk-server serve`` (``--workers``, default 2) runs on loopback over a database already
holding the stored bundles (500 models; ``--quick``: 5,000 bundles, 100 models). Two servers run on the
same database, measured alternately in each round (3 rounds; 1 with ``--quick``): one with the upload
pool (its default, a process per core) and one with ``--verify-processes 0`` (every check in the
serving process, the code before the pool): the rows give medians over rounds and the median of the
per-round paired ratios, never a best-of. Every upload goes the full path (key lookup, Ed25519
verification, canonical form, schema, board checks, one transaction with its log entry). The
in-process rate of the checks alone (:func:`dynadesk.sync.server.pool.check_document`) is the ceiling
baseline. Rates per server CPU-second (psutil, the server and its pool processes) are what one free
core sustains; wall-clock rates depend on what else the machine runs, so the load average is printed.

Stored bundles are bulk-loaded straight into the database (``ServerDB.import_bundles``: PostgreSQL
``COPY``, SQLite one ``executemany``, in transactions of 50,000), not uploaded: real signed bundles
with their log chain, board rows and key usage, as uploads would leave them, in minutes instead of
hours. ``--stored N`` (or ``DYNADESK_BENCH_SERVER_STORED=N make bench``) picks the size, e.g.
``--stored 1000000 --backend postgresql`` for the 1M-bundle board.

Both backends are measured: SQLite (a file) and PostgreSQL (a local cluster this benchmark starts in a
temp folder, tests/support/pg.py). ``--backend sqlite|postgresql`` runs one.

    python bench/bench_server.py [--quick] [--stored N] [--backend both] [--rounds R] [--workers W]
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.envelope import FORMAT, MAX_BUNDLE_BYTES, envelope_bytes, load_and_verify
from dynadesk.sync.format.keys import fingerprint, public_raw
from dynadesk.sync.format.timestamps import epoch_us
from dynadesk.sync.format.translog import entry_hash
from dynadesk.sync.rules.board import board_metrics
from dynadesk.sync.server.db import CheckedBundle, ServerDB
from dynadesk.sync.server.pool import check_document

DATASETS = [("vader-movies-test", "sha256:" + "1" * 64, 2000), ("vader-tweets-test", "sha256:" + "2" * 64, 4200)]
UPLOAD_GOAL, P99_GOAL_MS, FLOOD_RATIO_GOAL = 500.0, 50.0, 2.0  # uploads per CPU-second (one core)
BARE_RATIO_GOAL = 0.5  # issue 50 item 4: the server spends at least half its CPU per upload on the checks
BULK_BATCH = 50_000
NO_LIMITS = ["--address-rate", "1000000/1000000", "--key-rate", "1000000/1000000",
             "--key-quota", str(1 << 50)]  # a million stored bundles are 2.4 GB of one key's bytes


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
            "seeds": {"seed": 13},
            "worker_settings": {"batch_size": 32, "device": "cpu", "deterministic": True, "seed": 13},
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
    """Store ``n`` signed bundles, bulk-loaded (``ServerDB.import_bundles``: COPY / executemany, in batches of
    50,000) with their log chain, board rows and key usage; the first 50 are fully verified as a cross-check."""
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
            assert (b.id, b.model_name, board_metrics(b.payload.metric_rows())) == \
                (info["bundle_id"], info["model_name"], info["metrics"])
        batch.append(CheckedBundle(info["bundle_id"], raw, hashlib.sha256(raw).hexdigest(), "sentiment",
                                   info["model_name"], info["model_digest"], fingerprint(factory.pub),
                                   info["created_at"], epoch_us(info["created_at"]),
                                   {n: d for n, d, _ in DATASETS}, info["metrics"]))
        if len(batch) == BULK_BATCH or i == n - 1:
            db.import_bundles(batch, entry_hash)
            batch = []
    db.close()


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post_all(port: int, bundles: list[bytes], statuses: list[int]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for raw in bundles:
        conn.request("POST", "/api/bundles", body=raw, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        statuses.append(resp.status)
    conn.close()


def invalid_bodies(factory: Factory) -> list[bytes]:
    """A cheap flood: a ~1 MiB non-canonical bundle signed by an unregistered key, and junk."""
    stranger = Ed25519PrivateKey.generate()
    raw, _ = Factory(stranger).make("flood", 0, random.Random(3))
    doc = json.loads(raw)
    doc["payload"]["environment"]["pad"] = ["x" * 100] * 9000
    big = json.dumps(doc, separators=(", ", ": ")).encode()[: (1 << 20)]
    return [big, b"{}", b"not json at all", raw.replace(b'"version":1', b'"version":2')]


def costly_bodies(factory: Factory, n: int = 4) -> list[bytes]:
    """A registered key's costly flood: bundles signed by ``factory``'s (registered) key whose payload is ~1 MiB
    of valid but non-canonical JSON. Each passes the key lookup and the signature, then costs the full parse
    and the canonical-form comparison before it is refused (400)."""
    out = []
    for i in range(n):
        raw, _ = factory.make(f"flood-{i}", 10_000_000 + i, random.Random(i))
        payload = json.loads(raw)["payload"]
        pad = 9200
        while True:
            payload["environment"]["pad"] = ["x" * 100] * pad
            signed = json.dumps(payload, separators=(", ", ": ")).encode()
            body = envelope_bytes(signed, factory.pub, factory.key.sign(signed))
            if len(body) <= MAX_BUNDLE_BYTES:
                break
            pad -= 100
        outcome = check_document(body, FORMAT, "flood body")
        assert outcome.verified and outcome.error is not None, "a flood body must verify and then be refused"
        out.append(body)
    return out


def _flood(port: int, bodies: list[bytes], stop: threading.Event, sent: list[int]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    i = 0
    while not stop.is_set():
        conn.request("POST", "/api/bundles", body=bodies[i % len(bodies)], headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        if resp.status < 400:
            raise AssertionError(f"a flood body was accepted ({resp.status})")
        sent.append(resp.status)
        i += 1
    conn.close()


def _board_latencies(port: int, n: int, rng: random.Random) -> list[float]:
    lat = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
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


class Server:
    """One ``dynadesk-server serve`` process over ``target``; ``cpu()`` is its and its children's CPU seconds."""

    def __init__(self, target: str | Path, key_path: Path, workers: int, verify_processes: int | None):
        self.port = _free_port()
        exe = Path(sys.executable).with_name("dynadesk-server")
        extra = [] if verify_processes is None else ["--verify-processes", str(verify_processes)]
        self.proc = subprocess.Popen([str(exe), "serve", "--db", str(target), "--port", str(self.port), "--key",
                                      str(key_path), "--workers", str(workers), *NO_LIMITS, *extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_ready(self.port)
        self.ps = psutil.Process(self.proc.pid)

    def cpu(self) -> float:
        total = 0.0
        for p in [self.ps] + self.ps.children(recursive=True):
            try:
                total += sum(p.cpu_times()[:2])
            except psutil.NoSuchProcess:
                pass
        return total

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def upload_round(server: Server, fresh: list[bytes]) -> dict:
    """POST ``fresh`` from two keep-alive clients; rate over the wall clock and per server CPU-second."""
    cpu0 = server.cpu()
    statuses: list[int] = []
    threads = [threading.Thread(target=_post_all, args=(server.port, h, statuses)) for h in (fresh[0::2], fresh[1::2])]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    cpu = server.cpu() - cpu0
    if statuses.count(201) != len(fresh):
        raise AssertionError(f"only {statuses.count(201)} of {len(fresh)} uploads accepted: {set(statuses)}")
    return {"rate": len(fresh) / wall, "per_cpu": len(fresh) / cpu, "load": os.getloadavg()[0]}


def board_round(server: Server, flood: list[bytes], queries: int, rng: random.Random) -> dict:
    """Board query latencies quiet, then while two clients flood the server with ``flood`` bodies."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("GET", "/api/leaderboard/sentiment")  # the first query after uploads rebuilds the row cache
    conn.getresponse().read()
    conn.close()
    cpu0 = server.cpu()
    quiet = _board_latencies(server.port, queries, rng)
    cpu_query_ms = (server.cpu() - cpu0) / queries * 1000
    stop, sent = threading.Event(), []
    flooders = [threading.Thread(target=_flood, args=(server.port, flood, stop, sent)) for _ in range(2)]
    for t in flooders:
        t.start()
    time.sleep(0.5)
    t0 = time.perf_counter()
    flooded = _board_latencies(server.port, queries, rng)
    flood_rate = len(sent) / (time.perf_counter() - t0 + 0.5)
    stop.set()
    for t in flooders:
        t.join()
    return {"p99": _p99(quiet), "median": quiet[len(quiet) // 2], "flood_p99": _p99(flooded),
            "flood_rate": flood_rate, "cpu_query_ms": cpu_query_ms, "codes": sorted(set(sent))}


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def in_process_rate(bundles: list[bytes], reps: int = 3) -> float:
    """The checks alone (signature, parse, canonical form, schema) per CPU-second in this process: the ceiling."""
    rates = []
    for _ in range(reps):
        t0 = time.process_time()
        for raw in bundles:
            check_document(raw, FORMAT, "bundle")
        rates.append(len(bundles) / (time.process_time() - t0))
    return _median(rates)


def measure(target: str | Path, key_path: Path, factory: Factory, fresh: list[list[bytes]], warm: list[bytes],
            workers: int, queries: int) -> dict[str, list[dict]]:
    """Rounds of (uploads, quiet board, flooded board) on a pool server and an in-process server, alternating.
    Each server first takes ``warm`` uploads (half each), so the pool's processes are started before timing."""
    flood = costly_bodies(factory)
    servers = {"pool": Server(target, key_path, workers, None), "inline": Server(target, key_path, workers, 0)}
    out: dict[str, list[dict]] = {"pool": [], "inline": []}
    rng = random.Random(2)
    try:
        upload_round(servers["pool"], warm[0::2])
        upload_round(servers["inline"], warm[1::2])
        for r, chunk in enumerate(fresh):
            order = ["pool", "inline"] if r % 2 == 0 else ["inline", "pool"]
            halves = {order[0]: chunk[0::2], order[1]: chunk[1::2]}
            for mode in order:
                bare = in_process_rate(halves[mode][:100], reps=1)  # the bare check loop, paired with this round
                up = upload_round(servers[mode], halves[mode])
                out[mode].append({**up, "bare": bare, **board_round(servers[mode], flood, queries, rng)})
    finally:
        for server in servers.values():
            server.stop()
    return out


def _rows(m: dict[str, list[dict]], backend: str, where: str, ceiling: float, t_pop: float, stored: int,
          workers: int) -> list[dict]:
    pool, inline = m["pool"], m["inline"]
    med = lambda mode, k: _median([r[k] for r in m[mode]])  # noqa: E731
    paired = lambda k: _median([a[k] / b[k] for a, b in zip(pool, inline)])  # noqa: E731
    flood_ratio = _median([r["flood_p99"] / r["p99"] for r in pool])
    inline_flood_ratio = _median([r["flood_p99"] / r["p99"] for r in inline])
    per_cpu, p99 = med("pool", "per_cpu"), med("pool", "p99")
    load = _median([r["load"] for r in pool + inline])
    rounds = len(pool)
    tag = f"[{backend}]"
    return [
        {"measure": f"{tag} verified uploads per server CPU-second over HTTP, upload pool ({where})",
         "value": per_cpu, "unit": "/cpu-s", "goal": f">= {UPLOAD_GOAL:g}/cpu-s",
         "baseline": f"checks in the serving process {med('inline', 'per_cpu'):.0f}/cpu-s (paired, {rounds} rounds;"
                     f" load average {load:.1f})", "ratio": paired("per_cpu"), "ok": per_cpu >= UPLOAD_GOAL},
        {"measure": f"{tag} verified uploads per server CPU-second over HTTP vs the bare check loop in-process"
                    " (signature, canonical form, schema: pool.check_document), paired per round",
         "value": per_cpu, "unit": "/cpu-s", "goal": f">= {BARE_RATIO_GOAL:g}x the bare loop",
         "baseline": f"bare loop {med('pool', 'bare'):.0f}/cpu-s ({rounds} rounds; load average {load:.1f})",
         "ratio": _median([r["per_cpu"] / r["bare"] for r in pool]),
         "ok": _median([r["per_cpu"] / r["bare"] for r in pool]) >= BARE_RATIO_GOAL},
        {"measure": f"{tag} verified uploads/s over HTTP, wall clock (2 clients, {workers} worker(s))",
         "value": med("pool", "rate"), "unit": "/s", "goal": "-",
         "baseline": f"in-process checks alone {ceiling:.0f}/cpu-s (the ceiling; load average {load:.1f})",
         "ratio": med("pool", "rate") / ceiling, "ok": None},
        {"measure": f"{tag} board query p99 ({where})", "value": p99, "unit": "ms", "goal": f"< {P99_GOAL_MS:g} ms",
         "baseline": f"median {med('pool', 'median'):.1f} ms", "ratio": p99 / med("pool", "median"),
         "ok": p99 < P99_GOAL_MS},
        {"measure": f"{tag} board query p99 under a registered key's flood of 1 MiB non-canonical bundles"
                    f" ({med('pool', 'flood_rate'):.0f} bodies/s, 2 clients), upload pool",
         "value": med("pool", "flood_p99"), "unit": "ms", "goal": f"<= {FLOOD_RATIO_GOAL:g}x quiet p99",
         "baseline": f"quiet p99 {p99:.1f} ms (median of per-round ratios)", "ratio": flood_ratio,
         "ok": flood_ratio <= FLOOD_RATIO_GOAL},
        {"measure": f"{tag} the same flood ({med('inline', 'flood_rate'):.0f} bodies/s), checks in the serving"
                    " process (--verify-processes 0: the code before the pool)",
         "value": med("inline", "flood_p99"), "unit": "ms", "goal": "-",
         "baseline": f"quiet p99 {med('inline', 'p99'):.1f} ms (median of per-round ratios)",
         "ratio": inline_flood_ratio, "ok": None},
        {"measure": f"{tag} board query server CPU per query (mean; what a free core spends)",
         "value": med("pool", "cpu_query_ms"), "unit": "ms", "goal": f"< {P99_GOAL_MS:g} ms",
         "baseline": f"wall median {med('pool', 'median'):.1f} ms", "ratio": None,
         "ok": med("pool", "cpu_query_ms") < P99_GOAL_MS},
        {"measure": f"{tag} bulk-load {stored:,} signed bundles (sign + COPY/executemany + log chain)",
         "value": t_pop, "unit": "s", "goal": "-", "baseline": "-", "ratio": None, "ok": None},
    ]


def _postgres():
    """A local PostgreSQL for the benchmark (tests/support/pg.py): durable pages, commits acknowledged before their WAL
    is flushed (``synchronous_commit=off``), which is what SQLite's ``synchronous=NORMAL`` WAL mode does too."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from support.pg import Cluster, pg_bin

    if pg_bin() is None:
        return None
    root = tempfile.mkdtemp(prefix="dynadesk-bench-pg-")  # its own: the postgres user must reach it
    return Cluster(Path(root), fast=False, settings={"synchronous_commit": "off", "shared_buffers": "256MB"})


def run(quick: bool = False, workers: int = 2, stored: int | None = None,
        backends: tuple[str, ...] = ("sqlite", "postgresql"), rounds: int | None = None) -> list[dict]:
    """Each backend gets the same ``stored`` bundles and the same fresh uploads."""
    n_stored, uploads, models, queries = (5_000, 200, 100, 60) if quick else (100_000, 1_000, 500, 300)
    if quick and os.environ.get("DYNADESK_BENCH_SMOKE") == "1":  # the suite's smoke run: proves it runs
        uploads, queries = 60, 20
    n_stored = stored or int(os.environ.get("DYNADESK_BENCH_SERVER_STORED", "0")) or n_stored  # make bench: the env
    rounds = rounds or (1 if quick else 3)
    factory = Factory(Ed25519PrivateKey.generate())
    tmp = Path(tempfile.mkdtemp(prefix="dynadesk-bench-server-"))
    rng = random.Random(2)
    fresh = [[factory.make(f"model-{i % models:04d}", n_stored + r * uploads * 2 + i, rng)[0]
              for i in range(uploads * 2)] for r in range(rounds)]  # per round: half to each server
    warm = [factory.make(f"model-{i % models:04d}", n_stored + rounds * uploads * 2 + i, rng)[0] for i in range(80)]
    ceiling = in_process_rate(fresh[0][:300])
    rows: list[dict] = []
    cluster = None
    try:
        for backend in backends:
            if backend == "sqlite":
                target: str | Path = tmp / "board.db"
            else:
                cluster = _postgres()
                if cluster is None:
                    rows.append({"measure": "[postgresql] not measured: initdb/pg_ctl not found", "value": None,
                                 "unit": "", "goal": "-", "baseline": "packaging/system_deps.sh installs postgresql",
                                 "ratio": None, "ok": None})
                    continue
                target = cluster.new_database("bench")
            t0 = time.perf_counter()
            populate(target, factory, n_stored, models)
            t_pop = time.perf_counter() - t0
            print(f"[{backend}] bulk-loaded {n_stored:,} bundles in {t_pop:.0f} s (load average"
                  f" {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
            m = measure(target, tmp / "server.key", factory, fresh, warm, workers, queries)
            where = f"{n_stored:,} stored bundles, {models} models, {workers} worker(s)"
            rows += _rows(m, backend, where, ceiling, t_pop, n_stored, workers)
            if cluster is not None:
                cluster.stop()
                shutil.rmtree(cluster.root, ignore_errors=True)
                cluster = None
    finally:
        if cluster is not None:
            cluster.stop()
            shutil.rmtree(cluster.root, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5,000 stored bundles, 200 uploads per server, 1 round")
    ap.add_argument("--workers", type=int, default=2, help="server worker processes (dynadesk-server serve --workers)")
    ap.add_argument("--stored", type=int, help="bundles bulk-loaded before measuring (default 100,000; 5,000 quick)")
    ap.add_argument("--rounds", type=int, help="alternating rounds per server (default 3; 1 with --quick)")
    ap.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    args = ap.parse_args()
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    print(f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    rows = run(quick=args.quick, workers=args.workers, stored=args.stored, backends=backends, rounds=args.rounds)
    print("measure | value | goal | baseline ratio")
    for r in rows:
        ok = {True: "ok", False: "MISSED", None: ""}[r["ok"]]
        ratio = "" if r["ratio"] is None else f" (x{r['ratio']:.2f})"
        value = "-" if r["value"] is None else f"{r['value']:.1f}"
        print(f"{r['measure']} | {value} {r['unit']} | {r['goal']} {ok} | {r['baseline']}{ratio}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
