"""Leaderboard server under load: N concurrent clients upload valid, duplicate and invalid bundles.

A real ``dynadesk-server serve`` process on loopback takes, for a bounded time, a mix from
``clients`` keep-alive connections: 60 % fresh valid bundles, 20 % re-sends of valid bundles already
sent (by any client, so some race their first copy), 20 % invalid ones (a flipped byte, a key the
server does not know, or garbage). Afterwards :func:`check` proves the correctness properties —
every valid bundle sent is stored exactly once, nothing invalid is stored, duplicates are answered as
replays, no answer is a 5xx, the transparency log verifies against the server's signed head — and
the rows report latency p50/p99 and throughput. Baseline: one client sending the same mix
sequentially in the same run.

    python bench/bench_load.py [--quick] [--clients 4] [--seconds 10] [--workers 1]

``tests/reliability/test_reliability_load.py`` runs :func:`drive` and :func:`check` at a small size.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import importlib.util
import json
import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.sync.format.keys import fingerprint
from dynadesk.sync.format.translog import verify_log
from dynadesk.sync.server.db import ServerDB

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/scratch.py, also when loaded by path
from scratch import scratch_dir

HERE = Path(__file__).resolve().parent
THROUGHPUT_GOAL = 500.0  # verified uploads/s on 2 cores (the server's goal), here under a mixed concurrent load
MIX = (("valid", 0.6), ("duplicate", 0.2), ("invalid", 0.2))


def _bench_server():
    """bench_server.py's bundle factory (one signed template; only values change), loaded by path."""
    if "bench_server" in sys.modules:
        return sys.modules["bench_server"]
    spec = importlib.util.spec_from_file_location("bench_server", HERE / "bench_server.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_server"] = mod
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Workload:
    valid: list[tuple[str, bytes]]  # (bundle id, signed bytes), all acceptable to the server
    invalid: list[tuple[str, bytes]]  # (kind, bytes): each must be refused
    public_key: bytes


def make_workload(db_path: Path, n_valid: int, n_invalid: int = 300, seed: int = 7) -> Workload:
    """Register a key and the datasets in a fresh server database; sign the bundles to send."""
    bs = _bench_server()
    key = Ed25519PrivateKey.generate()
    factory = bs.Factory(key)
    db = ServerDB(db_path)
    db.add_key(fingerprint(factory.pub), factory.pub, "load")
    for name, digest, size in bs.DATASETS:
        db.add_dataset("sentiment", name, "test", digest, size)
    db.close()
    rng = random.Random(seed)
    valid = []
    for i in range(n_valid):
        raw, info = factory.make(f"model-{i % 200:03d}", i, rng)
        valid.append((info["bundle_id"], raw))
    foreign = bs.Factory(Ed25519PrivateKey.generate())  # signs well-formed bundles with an unregistered key
    invalid = []
    for i in range(n_invalid):
        kind = ("flipped", "unknown_key", "garbage")[i % 3]
        if kind == "flipped":
            data = bytearray(valid[rng.randrange(len(valid))][1])
            pos = rng.randrange(len(data))
            data[pos] = (data[pos] + rng.randrange(1, 256)) % 256
            invalid.append((kind, bytes(data)))
        elif kind == "unknown_key":
            invalid.append((kind, foreign.make(f"intruder-{i}", i, rng)[0]))
        else:
            invalid.append((kind, rng.randbytes(rng.randrange(1, 400))))
    return Workload(valid, invalid, factory.pub)


@dataclass
class LoadResult:
    seconds: float = 0.0
    server_cpu: float = 0.0  # server CPU-seconds during the run (filled by run())
    requests: list[tuple[str, str, int, str, float]] = field(default_factory=list)  # kind, id, status, error, ms
    exhausted: bool = False

    def latencies(self) -> list[float]:
        return sorted(r[4] for r in self.requests)

    def percentile(self, q: float) -> float:
        lat = self.latencies()
        return lat[min(len(lat) - 1, max(0, int(round(q * len(lat))) - 1))]

    def count(self, kind: str | None = None, status: int | None = None) -> int:
        return sum(1 for r in self.requests if (kind is None or r[0] == kind) and (status is None or r[2] == status))


def drive(url: str, work: Workload, clients: int, seconds: float, seed: int = 11) -> LoadResult:
    """``clients`` threads, each on its own keep-alive connection, send the mix until ``seconds`` pass."""
    host, port = url.removeprefix("http://").split(":")
    result = LoadResult()
    lock = threading.Lock()
    next_valid = iter(work.valid)
    sent_valid: list[tuple[str, bytes]] = []
    errors: list[BaseException] = []

    def client(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        local = []
        try:
            while time.perf_counter() < deadline:
                roll, kind = rng.random(), "invalid"
                if roll < MIX[0][1]:
                    kind = "valid"
                elif roll < MIX[0][1] + MIX[1][1]:
                    kind = "duplicate"
                with lock:
                    if kind == "valid":
                        item = next(next_valid, None)
                        if item is None:
                            result.exhausted, kind = True, "duplicate"
                        else:
                            sent_valid.append(item)
                    if kind == "duplicate":
                        if not sent_valid:
                            continue
                        item = sent_valid[rng.randrange(len(sent_valid))]
                if kind == "invalid":
                    item = work.invalid[rng.randrange(len(work.invalid))]
                t0 = time.perf_counter()
                conn.request("POST", "/api/bundles", body=item[1], headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                body = resp.read()
                ms = (time.perf_counter() - t0) * 1000
                try:
                    answer = json.loads(body)
                except ValueError:
                    answer = {"error": f"not JSON: {body[:80]!r}"}
                local.append((kind, item[0] if kind != "invalid" else "", resp.status,
                              str(answer.get("error", "")), ms))
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)
        finally:
            conn.close()
            with lock:
                result.requests.extend(local)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    t0 = time.perf_counter()
    deadline = t0 + seconds
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.seconds = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"a load client failed: {errors[0]!r}") from errors[0]
    return result


def check(db_path: Path, url: str, work: Workload, result: LoadResult) -> dict:
    """The correctness properties after a load run; raises AssertionError naming the first broken one."""
    statuses = {r[2] for r in result.requests}
    assert all(s < 500 for s in statuses), f"server errors under load: {sorted(statuses)}"
    sent = {r[1] for r in result.requests if r[0] in ("valid", "duplicate")}
    created: dict[str, int] = {}
    for kind, bid, status, error, _ in result.requests:
        if kind in ("valid", "duplicate"):
            assert status in (201, 409), f"valid bundle {bid[:12]} answered {status} {error}"
            assert status == 201 or error == "replay", f"duplicate of {bid[:12]} answered {status} {error}"
            created[bid] = created.get(bid, 0) + (status == 201)
        else:
            assert 400 <= status < 500 and error, f"an invalid bundle was answered {status} {error}"
    assert all(n == 1 for n in created.values()), "a valid bundle was accepted (201) more than once"
    db = ServerDB(db_path)
    try:
        assert db.integrity_check() == "ok"
        stored = [b["id"] for b in db.list_bundles(None, 10_000_000)]
        entries = db.log_entries(1, 10_000_000)
        raw_by_id = dict(work.valid)
        for e in entries:  # the log hashes exactly the bytes stored, which are exactly the bytes sent
            raw = db.bundle_raw(e["bundle_id"])
            assert hashlib.sha256(raw).hexdigest() == e["bundle_sha256"]
            assert raw == raw_by_id.get(e["bundle_id"]), f"stored bundle {e['bundle_id'][:12]} is not one sent"
    finally:
        db.close()
    assert len(stored) == len(set(stored)), "a bundle is stored twice"
    assert set(stored) == sent, "stored bundles differ from the valid bundles sent"
    assert [e["bundle_id"] for e in entries] == stored
    conn = http.client.HTTPConnection(*url.removeprefix("http://").split(":"), timeout=60)
    conn.request("GET", "/api/log?limit=10000&start=1")
    log = json.loads(conn.getresponse().read())
    entries_http = list(log["entries"])
    while len(entries_http) < log["head"]["size"]:
        conn.request("GET", f"/api/log?limit=10000&start={len(entries_http) + 1}")
        entries_http.extend(json.loads(conn.getresponse().read())["entries"])
    conn.close()
    verify_log(entries_http, log["head"])
    assert log["head"]["size"] == len(stored)
    return {"stored": len(stored), "valid_sent": len(sent), "duplicates": result.count("duplicate"),
            "invalid": result.count("invalid"), "log_size": log["head"]["size"]}


def start_server(db_path: Path, workers: int = 1) -> tuple[subprocess.Popen, str]:
    sock_port = _bench_server()._free_port()
    exe = Path(sys.executable).with_name("dynadesk-server")
    proc = subprocess.Popen([str(exe), "serve", "--db", str(db_path), "--port", str(sock_port),
                             "--workers", str(workers), *_bench_server().NO_LIMITS],  # measures capacity, not limits
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{sock_port}"
    for _ in range(300):
        if proc.poll() is not None:
            raise RuntimeError(f"dynadesk-server exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", sock_port, timeout=2)
            c.request("GET", "/api/tasks")
            c.getresponse().read()
            return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("dynadesk-server did not start within 30 s")


def run(quick: bool = False, clients: int = 4, seconds: float | None = None, workers: int = 1,
        pool: int | None = None) -> list[dict]:
    """``pool``: valid bundles signed up front (when the load uses them all, re-sends continue)."""
    seconds = seconds or (3.0 if quick else 10.0)
    pool = pool or (3_000 if quick else 12_000)
    tmp = scratch_dir("dynadesk-bench-load-")
    rows = []
    measured = {}
    for label, n_clients, secs in (("sequential", 1, seconds / 2), ("concurrent", clients, seconds)):
        db_path = tmp / f"{label}.db"
        work = make_workload(db_path, pool)
        proc, url = start_server(db_path, workers)
        try:
            server = psutil.Process(proc.pid)
            def cpu(server: psutil.Process = server) -> float:
                return sum(sum(p.cpu_times()[:2]) for p in [server] + server.children(recursive=True))

            cpu0 = cpu()
            res = drive(url, work, n_clients, secs)
            res.server_cpu = cpu() - cpu0
            facts = check(db_path, url, work, res)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        measured[label] = (res, facts)
    seq, _ = measured["sequential"]
    con, facts = measured["concurrent"]
    seq_rate, con_rate = len(seq.requests) / seq.seconds, len(con.requests) / con.seconds
    valid_rate = con.count("valid", 201) / con.seconds
    seq_valid = seq.count("valid", 201) / seq.seconds
    where = f"{clients} clients x {seconds:g} s, {workers} worker(s), mix 60/20/20 valid/duplicate/invalid"
    rows += [
        {"measure": f"requests/s under load ({where})", "value": con_rate, "unit": "/s", "goal": "-",
         "baseline": f"1 sequential client {seq_rate:.0f}/s", "ratio": con_rate / seq_rate, "ok": None},
        {"measure": "valid uploads accepted/s under that load (verified, stored, logged)", "value": valid_rate,
         "unit": "/s", "goal": f">= {THROUGHPUT_GOAL:g}/s", "baseline": f"1 sequential client {seq_valid:.0f}/s",
         "ratio": valid_rate / seq_valid if seq_valid else None, "ok": valid_rate >= THROUGHPUT_GOAL},
        {"measure": "requests per server CPU-second under load (what one free core sustains)",
         "value": len(con.requests) / con.server_cpu, "unit": "/cpu-s", "goal": "-",
         "baseline": f"machine load average {os.getloadavg()[0]:.1f}", "ratio": None, "ok": None},
        {"measure": "upload latency p50 under load", "value": con.percentile(0.5), "unit": "ms", "goal": "-",
         "baseline": f"1 sequential client {seq.percentile(0.5):.2f} ms",
         "ratio": con.percentile(0.5) / seq.percentile(0.5), "ok": None},
        {"measure": "upload latency p99 under load", "value": con.percentile(0.99), "unit": "ms", "goal": "-",
         "baseline": f"1 sequential client {seq.percentile(0.99):.2f} ms",
         "ratio": con.percentile(0.99) / seq.percentile(0.99), "ok": None},
        {"measure": "after the load: valid bundles stored exactly once, log verified (stored / valid sent)",
         "value": float(facts["stored"]), "unit": "bundles", "goal": f"= {facts['valid_sent']} sent",
         "baseline": f"{facts['duplicates']} duplicates, {facts['invalid']} invalid refused", "ratio": None,
         "ok": facts["stored"] == facts["valid_sent"]},
    ]
    if con.exhausted:
        rows[1]["baseline"] += " (valid pool exhausted: rate is a lower bound)"
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 s of load")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--workers", type=int, default=1, help="server worker processes")
    args = ap.parse_args()
    rows = run(quick=args.quick, clients=args.clients, seconds=args.seconds, workers=args.workers)
    print("measure | value | goal | baseline ratio")
    for r in rows:
        ok = {True: "ok", False: "MISSED", None: ""}[r["ok"]]
        ratio = "" if r["ratio"] is None else f" (x{r['ratio']:.2f})"
        print(f"{r['measure']} | {r['value']:.2f} {r['unit']} | {r['goal']} {ok} | {r['baseline']}{ratio}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
