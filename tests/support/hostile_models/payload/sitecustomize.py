"""Hostile model code (tests only; see hostile_models/__init__.py).

Installed at interpreter start, it hooks the worker's model loading so the
behaviour named in ``/model/hostile.json`` runs when the model is loaded, as
code smuggled into a model would. A behaviour the sandbox stops raises, the
way a model that depends on the forbidden thing fails.
"""

import importlib.abc
import importlib.util
import json
import os
import sys
import time


def _network():
    import socket

    errors = []
    for host, port in (("1.1.1.1", 53), ("8.8.8.8", 443), ("172.17.0.1", 2375), ("10.0.2.2", 22)):
        try:
            socket.create_connection((host, port), timeout=3).close()
        except OSError as exc:
            errors.append(f"{host}:{port}: {exc}")
            continue
        raise RuntimeError(f"HOSTILE network: connected to {host}:{port} - the sandbox has a network")
    raise RuntimeError("HOSTILE network: every connection failed: " + "; ".join(errors))


def _write_model():
    try:
        with open("/model/pwned.txt", "w") as fh:
            fh.write("owned")
    except OSError as exc:
        raise RuntimeError(f"HOSTILE write_model: cannot write /model: {exc}") from None
    raise RuntimeError("HOSTILE write_model: wrote /model/pwned.txt - /model is writable")


def _fork_bomb():
    children = 0
    try:
        while True:
            pid = os.fork()
            if pid == 0:  # every child keeps forking too, until the pids limit says no
                try:
                    while True:
                        os.fork()
                except OSError:
                    time.sleep(600)
                os._exit(0)
            children += 1
    except OSError as exc:
        raise RuntimeError(f"HOSTILE fork_bomb: fork refused after {children} direct children: {exc}") from None


def _memory():
    hog = []
    while True:  # touch every page so the memory is really used
        hog.append(bytearray(64 << 20))
        print(f"HOSTILE memory: {len(hog) * 64} MiB", file=sys.stderr, flush=True)


def _hang():
    print("HOSTILE hang: sleeping forever", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


def _symlink_out(target):
    """Plant links in /out to a host path, for a later host-side chown/read/copy to follow."""
    os.symlink(target, "/out/evil-link")
    os.makedirs("/out/parts", exist_ok=True)
    os.symlink(target, "/out/parts/d000.jsonl.evil")
    raise RuntimeError("HOSTILE symlink_out: planted /out/evil-link -> " + target)


def _fill_out(target=None):
    """Write 2 GiB to /out (the only writable host folder) as fast as possible."""
    block = b"x" * (64 << 20)
    with open("/out/fill.bin", "wb") as fh:
        for _ in range(32):
            fh.write(block)
    raise RuntimeError("HOSTILE fill_out: wrote 2 GiB to /out")


def _flood(target=None):
    """64 MiB of output without a single newline, then a last line."""
    chunk = "y" * (1 << 20)
    for _ in range(64):
        sys.stdout.write(chunk)
    sys.stdout.flush()
    print("\nHOSTILE flood: 64 MiB written without newlines", file=sys.stderr, flush=True)
    raise RuntimeError("HOSTILE flood: done")


def _at_exit(edit):
    """Run ``edit(metrics, lines)`` on /out's results once the worker has written them (at interpreter exit)."""
    import atexit
    import hashlib

    def rewrite():
        try:
            with open("/out/metrics.json") as fh:
                metrics = json.load(fh)
            with open("/out/predictions.jsonl") as fh:
                lines = fh.read().splitlines(keepends=True)
        except OSError:
            return
        lines = edit(metrics, lines)
        data = "".join(lines).encode()
        with open("/out/predictions.jsonl", "wb") as fh:
            fh.write(data)
        metrics["predictions_sha256"] = hashlib.sha256(data).hexdigest()
        with open("/out/metrics.json", "w") as fh:
            json.dump(metrics, fh)
        print("HOSTILE: rewrote /out/metrics.json and /out/predictions.jsonl at exit", file=sys.stderr, flush=True)

    atexit.register(rewrite)


def _rewrite_metrics(target=None):
    """Claim perf 100 (every deterministic score) in /out/metrics.json, whatever the predictions say (adding the
    rows where the worker, which computes no deterministic metric, wrote none)."""
    def edit(metrics, lines):
        claimed = [row for row in metrics["values"] if row["metric"] in ("perf", "accuracy", "macro_f1")]
        for row in claimed:
            row["value"] = 100.0
        if not claimed:
            sets = sorted({json.loads(line)["dataset"] for line in lines if line.strip()})
            metrics["values"] += [{"dataset": name, "metric": "macro_f1", "value": 100.0, "unit": "%",
                                   "deterministic": True} for name in sets]
        return lines
    _at_exit(edit)


def _duplicate_id(target=None):
    """Append a second record for the first example id, with another label (metrics.json left as it was)."""
    def edit(metrics, lines):
        row = json.loads(lines[0])
        label = row["prediction"].get("label")
        row["prediction"]["label"] = "neutral" if label != "neutral" else "positive"
        return lines + [json.dumps(row) + "\n"]
    _at_exit(edit)


def _missing_id(target=None):
    """Drop the first prediction record."""
    _at_exit(lambda metrics, lines: lines[1:])


def _rewrite_measured(scale):
    """Rewrite the measured figures of metrics.json and profile.json at exit (predictions left as they are)."""
    import atexit

    def rewrite():
        try:
            with open("/out/metrics.json") as fh:
                metrics = json.load(fh)
            with open("/out/profile.json") as fh:
                profile = json.load(fh)
        except OSError:
            return
        for row in metrics["values"]:
            row["value"] = scale(row["metric"], row["value"])
        for name in ("throughput", "throughput_batched"):
            profile[name]["value"] = scale(name, profile[name]["value"])
        profile["memory"]["peak_gib"] = scale("memory", profile["memory"]["peak_gib"])
        profile["memory"]["peak_bytes"] = int(profile["memory"]["peak_gib"] * (1 << 30))
        for path, data in (("/out/metrics.json", metrics), ("/out/profile.json", profile)):
            with open(path, "w") as fh:
                json.dump(data, fh)
        print("HOSTILE: rewrote the measured figures of /out/metrics.json and /out/profile.json at exit",
              file=sys.stderr, flush=True)

    atexit.register(rewrite)


def _inflate_throughput(target=None):
    """Claim 20x the measured throughput (batch-1 and batched, every test set and the whole run)."""
    _rewrite_measured(lambda metric, value: value * 20 if metric.startswith("throughput") else value)


def _shrink_memory(target=None):
    """Claim a tenth of the measured memory."""
    _rewrite_measured(lambda metric, value: value / 10 if metric == "memory" else value)


def _forge_windows(target=None):
    """Hold each timed-window start line until just before its end line (one early start line was printed at
    interpreter start, :func:`_early_window_line`), and claim 1000x the throughput and a tenth of the memory
    at exit (issue 45's forged-window model; ``target`` "speed": only the throughput)."""
    prefix = "@@dynadesk-window "
    real = sys.stdout

    class Holder:
        def __init__(self):
            self.held = []

        def write(self, text):
            if text.startswith(prefix) and '"start"' in text:
                self.held.append(text)
                return len(text)
            if text.startswith(prefix) and '"end"' in text:
                for line in self.held:
                    real.write(line)
                self.held = []
            return real.write(text)

        def flush(self):
            real.flush()

        def __getattr__(self, name):
            return getattr(real, name)

    sys.stdout = Holder()
    print("HOSTILE forge_windows: holding the timed-window start lines", file=sys.stderr, flush=True)
    memory = 1.0 if target == "speed" else 0.1
    _rewrite_measured(lambda metric, value: value * 1000 if metric.startswith("throughput")
                      else value * memory if metric == "memory" else value)


def _replay(target=None):
    """Issue 45's replay model: slow (``SLOW_S`` per example on every real computation) but keeping every answer
    it gave, keyed by the input, and answering a query it has seen before from that cache at once. On the code
    where the prediction pass preceded the timed windows, every timed query was one the pass had answered: fast,
    and "equal to the pass"."""
    import dynadesk.evaluator.worker as worker

    real = worker.Worker.predict
    cache = {}

    def predict(self, examples, encoded=None):
        keys = [json.dumps({k: ex.get(k) for k in self.inputs}, sort_keys=True) for ex in examples]
        if all(k in cache for k in keys):
            return [cache[k] for k in keys]
        preds = real(self, examples, encoded)
        time.sleep(REPLAY_SLOW_S * len(examples))
        cache.update(zip(keys, preds))
        return preds

    worker.Worker.predict = predict
    print("HOSTILE replay: answering every input seen before from a cache", file=sys.stderr, flush=True)


REPLAY_SLOW_S = 0.03


BEHAVIOURS = {"forge_windows": _forge_windows, "replay": _replay, "rewrite_metrics": _rewrite_metrics,
              "inflate_throughput": _inflate_throughput,
              "shrink_memory": _shrink_memory, "duplicate_id": _duplicate_id, "missing_id": _missing_id,
              "network": _network, "write_model": _write_model, "fork_bomb": _fork_bomb, "memory": _memory,
              "hang": _hang, "symlink_out": _symlink_out, "fill_out": _fill_out, "flood": _flood}
TAKES_TARGET = {"forge_windows", "symlink_out", "fill_out", "flood", "rewrite_metrics", "duplicate_id", "missing_id",
                "inflate_throughput", "shrink_memory"}


def _payload():
    try:
        with open("/model/hostile.json") as fh:
            config = json.load(fh)
        behaviour = config["behaviour"]
    except (OSError, ValueError, KeyError):
        return
    if behaviour in TAKES_TARGET:
        BEHAVIOURS[behaviour](config.get("target"))
    else:
        BEHAVIOURS[behaviour]()


class _LoadHook(importlib.abc.MetaPathFinder):
    """Wraps dynadesk.evaluator.adapters.load_adapter so the payload runs at model load."""

    def find_spec(self, name, path, target=None):
        if name != "dynadesk.evaluator.adapters":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            real_load = module.load_adapter

            def load_adapter(*args, **kwargs):
                _payload()
                return real_load(*args, **kwargs)

            module.load_adapter = load_adapter

        spec.loader.exec_module = exec_module
        return spec


def _early_window_line():
    """forge_windows: one timed-window start line at interpreter start, before torch or the model load."""
    try:
        with open("/model/hostile.json") as fh:
            if json.load(fh).get("behaviour") != "forge_windows":
                return
    except (OSError, ValueError, AttributeError):
        return
    sys.stdout.write('@@dynadesk-window {"edge": "start", "set": "early", "mode": "batch1", "attempt": 0, '
                     '"trial": 0}\n')
    sys.stdout.flush()


_early_window_line()
sys.meta_path.insert(0, _LoadHook())
