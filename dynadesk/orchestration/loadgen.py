"""The host is the load generator (after MLPerf LoadGen): it issues every timed query and holds the clock.

The worker runs next to the model's code, so nothing it prints or writes about time can be trusted. Once
the model is loaded, and BEFORE its prediction pass, the worker connects to a Unix socket this module listens
on, in a folder of the host's (the Docker runner mounts it into the container, the local runner passes it):

1. the worker says ``hello`` (protocol ``PROTOCOL``);
2. the host, for each test set, issues the timed queries itself: each carries the examples themselves and a
   fresh random nonce the answer must echo (an answer written before its query was issued cannot carry it).
   The host stamps issue and answer with its own clock (``time.perf_counter``); those stamps are the figures;
3. only then does the host put the run's data files into the folder the sandbox reads them from
   (:attr:`LoadGen.sandbox_data`, empty until now), and send the figures back (``done``) for the worker to
   write into its result files, where the host later finds them unchanged
   (:func:`dynadesk.orchestration.bounds.check_measured`); the worker then runs its prediction pass, and the
   host compares every timed answer with the pass's answer for the same example.

The replay hole (issue 45): when the pass came first, a model could keep the pass's answers keyed by the
input and answer every timed query from that cache at once (seen: 12,316 examples/s for a model whose honest
ceiling is 33, every answer "equal to the pass"). Now no timed input has reached the sandbox before it is
issued; the next cache is the windows' own (an example asked twice), so the host issues each example once
while unseen ones remain (:class:`Fresh`), and where it must ask one again (a small set, a fast model filling
``min_seconds``) an example answered much faster the second time voids the windows (:func:`replay_check`).

Samples (issue 50 item 2): the host orders each test set by length, in the model's tokens where it can count them as the
pass does, else in characters (:mod:`.token_order`), and gives each mode half of its batches (:func:`split_modes`);
batch-1 windows take ``latency_samples`` examples, one from each equal stratum of their half; batched windows its whole
half where one sweep of it fits a window (the pass's own batches, each once), else ``ceil(batched_queries /
batch_size)`` of its batches, one from each stratum, drawn from the examples not yet issued, each trial's pace weighed
by its batches' padded tokens against the half's (:func:`~.loadgen_fresh.length_factor`). The warm-up's speed sizes the
windows (:func:`window_share`), so every width is timed in proportion whatever the load. A window issues its sample
whole, repeated until ``min_seconds`` has passed; batch-1 queries one at a time (a query's latency is issue to answer),
batched ones up to ``BATCHED_IN_FLIGHT`` at a time (the model never waits for the host). A run on several test sets
shares ``min_seconds``, the batch-1 samples, the warm-up and the sweeps among them (:class:`~.loadgen_fresh.RunShare`).
Noise: the worker's own view of other processes' CPU (in-process, see docs/measurement.md) plus the spread of the
host's figures; a noisy measurement is taken again as before (:mod:`dynadesk.evaluator.measurement`).
"""

from __future__ import annotations

import json
import math
import os
import random
import secrets
import shutil
import socket
import stat
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dynadesk.evaluator.measurement import close_attempt, latency, throughput_result
from dynadesk.evaluator.prompts import answer_tokens_bound
from dynadesk.evaluator.schema import PARTS_DIR, Spec
from dynadesk.orchestration.loadgen_fresh import (
    AGAIN,
    LEAD,
    Fresh,
    Service,
    TokenPace,
    hold_to_first_sweep,
    host_order,
    interleave,
    length_factor,
    passes_ahead,
    query_kind,
    read_examples,
    replay_check,
    run_share,
    split_lead,
    split_modes,
    spread_reserve,
    strata,
    trial_phase,
    unjudged_replays,
    vocabulary,
    warm_up_examples,
    window_share,
)
from dynadesk.orchestration.run_dirs import make_run_dir
from dynadesk.orchestration.token_order import SetOrder, order_test_sets

PROTOCOL = "dynadesk-loadgen/2"  # 2: the windows precede the pass and the data (the replay hole)
MAX_LINE = 64 << 20  # one message (a hello with a large set's order, a batch's answers)
CONTAINER_DIR = "/loadgen"  # where the Docker runner mounts the socket's folder
SOCKET_NAME = "s"
WARMUP_S = 1.0  # no warm-up query starts after this long
# batched queries in flight (a window's sample: all of it), one waiting when the model finishes one (2-4: 0.4-0.7x)
BATCHED_IN_FLIGHT = 16


class LoadGenError(RuntimeError):
    """The worker broke the protocol (or the host could not run it): its timed figures are not observed."""


class WorkerStopped(LoadGenError):
    """The worker itself stopped its timed windows (its own error file says why): not the host's refusal."""


def answer_key(prediction: object) -> object:
    """What a query's answer must match in the prediction pass: the label (classification) or the answer text
    (question answering), else the whole prediction. Probabilities may differ in the last bits between a
    batch of one and the pass's padded batch, so they are not compared."""
    if isinstance(prediction, dict):
        for key in ("label", "answer"):
            if key in prediction:
                return prediction[key]
    return json.dumps(prediction, sort_keys=True)


def start_loadgen(spec_file: Path, data_dir: Path, out_dir: Path, model_dir: Path | None = None) -> LoadGen:
    """A run's load generator, listening (the runners start one before the worker)."""
    from dynadesk.errors import EvaluationError

    try:
        return LoadGen(spec_file, data_dir, out_dir, model_dir).start()
    except (OSError, ValueError) as exc:
        raise EvaluationError(f"cannot start the host's load generator for the timed windows: {exc}") from exc


class LoadGen:
    """One run's load generator: ``start()`` before the worker starts, ``close()`` after it ended, then
    :meth:`report` (recorded in the run as ``observed['loadgen']``). ``model_dir``: the model's folder on the
    host, whose tokenizer orders the test sets where the pass sorts by it (:mod:`.token_order`)."""

    def __init__(self, spec_file: Path, data_dir: Path, out_dir: Path, model_dir: Path | None = None):
        self.spec = Spec.read(spec_file)
        self.data_dir, self.out_dir = Path(data_dir), Path(out_dir)
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.orders: dict[str, SetOrder] = {}  # test set -> its examples, order and lengths
        self.tokens: list[int] | None = None  # the test set being measured's token counts, where the host has them
        self.dir = make_run_dir("lg")  # removed by close(); a killed run's by the next run (run_dirs)
        os.chmod(self.dir, 0o711)  # the sandbox user may connect, nobody may list it
        self.path = self.dir / SOCKET_NAME
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.path))
        os.chmod(self.path, 0o777)
        self.listener.listen(1)
        self.listener.settimeout(0.2)
        self.conn: socket.socket | None = None
        self.issuing = False  # the timed windows are on (the memory floor's samples skip them)
        self.windows_over = False  # the worker acknowledged the figures: its prediction pass comes next
        self.pass_over = False  # every dataset's finished predictions are in out/parts (sticky)
        self.sandbox_data = make_run_dir("data")  # the sandbox's data: empty until staged
        os.chmod(self.sandbox_data, 0o755)
        self.inputs = [str(f["name"]) for f in self.spec.task.get("inputs") or [] if isinstance(f, dict)]
        self._rng = random.Random(secrets.token_hex(16))
        self.problems: list[str] = []
        self.datasets: dict[str, Any] = {}
        self.answers: dict[str, dict[str, object]] = {}
        self.finished = False
        s, tests = self.spec.settings, sum(d.role == "test" for d in self.spec.datasets)
        self.share = run_share(s.min_seconds, s.latency_samples, s.warmup, s.trials, tests)  # per test set
        self.pace = TokenPace()  # the run's batched seconds per padded token: sizes its later sets' windows
        self.refused: str | None = None  # why the host refused the windows, when it did (the run's verdict)
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="dynadesk-loadgen", daemon=True)

    def start(self) -> LoadGen:
        """Order the test sets (a tokenizer child on every core, ~1 s) before the worker starts, then listen:
        beside the worker's start its thread choice read the child as other work and took 1 thread (docs)."""
        self.orders = order_test_sets(self.spec, self.data_dir, self.model_dir, self.inputs)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop (the worker has ended): unblock the driver, wait for it, remove the socket's folder."""
        self._closing.set()
        for s in (self.conn, self.listener):
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._thread.join(timeout=10)
        for s in (self.conn, self.listener):
            if s is not None:
                s.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.sandbox_data, ignore_errors=True)

    def counting(self) -> bool:
        """Whether a memory sample taken now belongs to what the worker's memory figure covers: loading (until
        the first warm-up query) and the prediction pass (from the worker's acknowledgement of the figures to
        the last dataset's finished predictions in ``out/parts``; the worker measures after that, so writing
        its files and its environment's report are outside). The runners sample the floor's peak here."""
        if self.issuing or self.pass_over:
            return False
        if self.windows_over and all(self._part_done(ds.file) for ds in self.spec.datasets):
            self.pass_over = True
            return False
        return True

    def _part_done(self, file: str) -> bool:
        try:
            return all(stat.S_ISREG(os.lstat(self.out_dir / PARTS_DIR / name).st_mode)
                       for name in (file, file + ".done.json"))
        except OSError:
            return False

    def _stage_data(self) -> None:
        """Put the run's data files where the sandbox reads them, once no timed query is left to issue (a
        link where the file system allows, else a copy): before this the model has seen none of them."""
        for ds in self.spec.datasets:
            src, dst = self.data_dir / ds.file, self.sandbox_data / ds.file
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
                os.chmod(dst, 0o644)

    def report(self) -> dict[str, Any]:
        problems = list(self.problems)
        if not self.finished and not problems:
            problems.append("the worker never asked for its timed windows (no connection to the host's load "
                            "generator)")
        return {"protocol": PROTOCOL, "finished": self.finished and not problems, "problems": problems[:20],
                "datasets": self.datasets, "answers": self.answers, "refused": self.refused,
                "max_new_tokens": answer_tokens_bound(self.spec.model.get("manifest"))}

    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.conn = conn
            break
        else:
            return
        self.listener.close()  # one worker, one connection: a second one is refused
        conn.settimeout(None)
        self._rfile = conn.makefile("rb")
        try:
            self._drive()
            self.finished = True
        except Exception as exc:  # noqa: BLE001 - any failure voids the windows; the worker must not wait on
            self.problems.append(str(exc) if isinstance(exc, LoadGenError) else f"{type(exc).__name__}: {exc}")
            if isinstance(exc, LoadGenError) and not isinstance(exc, WorkerStopped):
                self.refused = self.problems[-1]  # the host's own finding (a replayed answer, a foreign nonce...)
            self._send({"op": "refuse", "why": self.problems[-1]}, quiet=True)

    def _send(self, message: dict[str, Any], quiet: bool = False) -> None:
        assert self.conn is not None
        try:
            self.conn.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        except OSError:
            if not quiet:
                raise

    def _recv(self) -> dict[str, Any]:
        line = self._rfile.readline(MAX_LINE + 1)
        if not line:
            raise LoadGenError("the worker closed the load generator's connection before its timed windows ended")
        if len(line) > MAX_LINE or not line.endswith(b"\n"):
            raise LoadGenError(f"a message from the worker longer than {MAX_LINE} bytes")
        message = json.loads(line)
        if not isinstance(message, dict):
            raise LoadGenError(f"a message from the worker that is not an object: {line[:80]!r}")
        if message.get("op") == "error":  # the worker failed (its own error file says why)
            raise WorkerStopped(f"the worker stopped its timed windows: {str(message.get('why'))[:300]}")
        return message

    def _hello(self) -> None:
        hello = self._recv()
        if hello.get("hello") != PROTOCOL:
            raise LoadGenError(f"the worker speaks {str(hello.get('hello'))[:40]!r}, the host {PROTOCOL!r}: "
                               "rebuild the image with 'dynadesk image build'")

    def _drive(self) -> None:
        self._hello()
        self.issuing = True  # from the warm-up on: the worker's allocator is the timing one until the pass
        s = self.spec.settings
        for index, ds in enumerate(d for d in self.spec.datasets if d.role == "test"):
            self.warmup = self.share.warmup(index)  # this test set's warm-up queries
            if ds.name in self.orders:  # read (and ordered) before the worker started
                examples, order, how, self.tokens = self.orders[ds.name]
            else:
                examples, self.tokens = read_examples(self.data_dir / ds.file), None
                order, how = host_order(examples, self.inputs), "characters"
            (one, many), words = split_modes(order, s.batch_size), vocabulary(examples, self.inputs)
            issued: set[int] = set()  # both modes': a batch-1 answer must not serve a batched query
            self.answers[ds.name] = {}
            batch1 = self._measure(ds.name, "batch1", examples, Fresh(one, 1, issued), words,
                                   self.share.latency_per_window, 1)
            lat = latency(batch1.pop("per_call_ms"), batch1.pop("per_trial_ms"))
            batched = self._measure(ds.name, "batched", examples, Fresh(many, s.batch_size, issued), words,
                                    math.ceil(s.batched_queries / s.batch_size), BATCHED_IN_FLIGHT)
            batch1["protocol"]["order"] = batched["protocol"]["order"] = how
            batched.pop("per_call_ms")
            batched.pop("per_trial_ms")
            batch1["batch_size"], batched["batch_size"] = 1, s.batch_size
            self.datasets[ds.name] = {"batch1": batch1, "batched": batched, "latency": lat}
        self._stage_data()
        self._send({"op": "done", "datasets": self.datasets})
        ack = self._recv()
        if ack.get("op") != "written":
            raise LoadGenError("the worker did not acknowledge the host's figures")
        self.issuing = False  # the worker gave back what the windows held before it acknowledged
        self.windows_over = True

    def _measure(self, name: str, mode: str, examples: list[dict[str, Any]], pool: Fresh, words: list[str],
                 per_window: int, depth: int) -> dict[str, Any]:
        """Warm-up, trials and retries of one measurement (the shape :func:`measurement.measure` gives); each
        trial on examples not issued before (``pool``), none taken once it has none left."""
        s = self.spec.settings
        attempts: list[dict[str, Any]] = []
        services: list[Service] = []
        started, first_sweep = time.perf_counter(), 0.0
        sweep_max = self.share.sweep_for(self.tokens is not None)  # shared where strata trials are weighed
        warmed = False  # a later token-ordered set's batched windows are sized by the run's pace (TokenPace)
        for attempt in range(s.noise_retries + 1):
            sized = self.pace.each(pool.all_units(), self.tokens) if depth > 1 else None
            warmed = warmed or sized is None
            each = sized or self._warm_up(name, examples, pool, words)
            share, fresh, sweep = window_share(pool, each, per_window, s.trials, depth > 1, self.share.window_s,
                                               sweep_max)
            unseen = sweep and all(pool.is_fresh(u) for u in pool.all_units())  # its first trial sets first_sweep
            trials: list[dict[str, Any]] = []
            per_call: list[float] = []
            per_trial: list[list[float]] = []
            harness_cpu_s = 0.0  # this thread's CPU over the attempt's windows: the harness's, not competition
            for trial in range(s.trials):
                units = pool.units() if fresh else pool.all_units()
                sample = [units[p] for p in strata(len(units), share, trial_phase(trial, s.trials, pool.size))]
                cpu0 = time.thread_time()
                self._send({"op": "window", "set": name, "mode": mode})
                timed: list[tuple[str, float]] = []
                queries, seconds, calls, inside = self._window(name, examples, sample, depth, self.share.window_s,
                                                               pool, timed)
                services += [Service(attempt, kind, each) for kind, each in timed]
                self._send({"op": "end"})
                harness_cpu_s += time.thread_time() - cpu0
                if seconds <= 0:
                    raise LoadGenError(f"a timed window of '{name}' ({mode}) took no time on the host's clock")
                factor = length_factor(sample, pool.all_units(), self.tokens) if depth > 1 and self.tokens and \
                    not sweep else 1.0  # batched strata trials weighed by their lengths (a sweep: the whole half)
                if depth > 1 and self.tokens:
                    self.pace.add(seconds, queries, sample, self.tokens)
                trials.append({"queries": queries, "seconds": seconds, "short": False, "calls": len(calls),
                               "value": queries / seconds * factor, "length_factor": factor, "attempt": attempt,
                               "trial": trial, "sample": [u[0] for u in sample], "worker_seconds": inside})
                per_call += calls
                per_trial.append(calls)
            self._send({"op": "noise", "harness_cpu_s": harness_cpu_s})
            reply = self._recv()
            got = reply.get("noise")
            noise: dict[str, Any] = dict(got) if isinstance(got, dict) else {}
            noise["reasons"] = [str(r)[:200] for r in (noise.get("reasons") or [])][:10]
            first_sweep = float(trials[0]["value"]) if unseen else first_sweep
            last_one = close_attempt(attempts, trials, noise, per_call, per_trial, started)
            if sweep and first_sweep:
                hold_to_first_sweep(attempts[-1], first_sweep)
            if last_one:
                break
        replayed = replay_check(name, mode, services)
        if replayed:
            raise LoadGenError(replayed)
        left_out = unjudged_replays(services)
        attempts = [a for i, a in enumerate(attempts) if i not in left_out]
        last = attempts[-1]
        return throughput_result(attempts, {
            "issued_by": "host", "loadgen": PROTOCOL, "warmup": self.warmup if warmed else 0,
            "per_window": len(last["trials"][0]["sample"]) if last["trials"] else 0,
            "asked_per_window": per_window, "in_flight": depth, "min_seconds": s.min_seconds,
            "window_seconds": self.share.window_s, "trials": s.trials, "sweep_max_s": sweep_max,
            "retries": s.noise_retries, "examples_issued": len(pool.issued), "share": len(pool.order),
            "asked_again": sum(1 for x in services if x.kind == AGAIN), "test_sets": self.share.sets,
            "left_out": [left_out[i] for i in sorted(left_out)], "sized_by": "warm-up" if warmed else "pace"})

    def _warm_up(self, name: str, examples: list[dict[str, Any]], pool: Fresh, words: list[str]) -> float:
        """Untimed queries spread over the widths (``warmup`` of them, at least one, no more after
        ``WARMUP_S``), on inputs of the units' lengths made of random words of the set
        (:func:`warm_up_examples`); the mean seconds of one, which sizes the windows."""
        want = max(1, self.warmup)
        units = pool.all_units()
        spent, done, taken = 0.0, 0, {str(ex.get(k)) for ex in examples for k in self.inputs}  # never drawn
        for p in strata(len(units), want, 0.5):
            salad = warm_up_examples([examples[i] for i in units[p]], self.inputs, words, self._rng, taken)
            spent += self._issue_untimed(name, salad)
            done += 1
            if spent >= WARMUP_S:
                break
        return spent / done

    def _asked(self, example: dict[str, Any]) -> dict[str, Any]:
        """What a query carries of an example: its input fields only (the model answers from them; its id, gold
        label and metadata would let a model key a cache by id or answer with the label)."""
        return {k: example[k] for k in self.inputs if k in example} if self.inputs else example

    def _issue_untimed(self, name: str, batch: list[dict[str, Any]]) -> float:
        """One warm-up query (answers not compared: its inputs are no example's); its seconds on the host."""
        nonce = secrets.token_hex(8)
        issued = time.perf_counter()
        self._send({"op": "query", "nonce": nonce, "examples": [self._asked(ex) for ex in batch]})
        reply = self._recv()
        took = time.perf_counter() - issued
        preds = reply.get("predictions")
        if reply.get("nonce") != nonce or not isinstance(preds, list) or len(preds) != len(batch):
            raise LoadGenError(f"a warm-up answer on '{name}' does not carry its query's nonce or has "
                               f"{len(preds) if isinstance(preds, list) else 'no'} predictions for {len(batch)}")
        return took

    def _window(self, name: str, examples: list[dict[str, Any]], sample: Sequence[list[int]], depth: int,
                min_seconds: float, pool: Fresh, services: list[tuple[str, float]]
                ) -> tuple[int, float, list[float], float]:
        """Issue ``sample`` (whole, repeated until ``min_seconds``: its lead first, the rest spread among the
        repeats or, where one pass more lasts the window, alone; :func:`split_lead`) with ``depth`` queries in
        flight: (examples answered, seconds, per-query ms, the worker's own account of its calls' seconds,
        informational). One in flight: seconds are the sum of the queries' issue-to-answer times; more: the span
        from the first issue to the last answer; the next pass goes out while the worker answers this one's last
        query (waiting left it idle for a round trip to a busy host: 0.8x the pass), and the window ends asking
        each unit as often as the most asked (the lead outweighed the rest: 1.1-1.2x the pass, a fast model).
        Each query's seconds per example, and its kind (:func:`query_kind`), go to ``services``."""
        pending: list[tuple[str, list[int], float, str]] = []
        per_call: list[float] = []
        queries, busy, inside = 0, 0.0, 0.0
        first = last_answer = time.perf_counter()
        lead, reserve = split_lead(sample)
        repeats = list(lead)  # what a pass asks again
        planned: list[list[list[int]]] | None = None  # the reserve's units for each pass ahead
        times_asked: dict[tuple[int, ...], int] = {}  # each unit of the sample
        todo, passes, last_pass = list(lead), 1, False
        ahead = 1 if depth > 1 else 0  # queries still in flight when the next pass goes out
        while True:
            while todo and len(pending) < depth:
                unit = todo.pop(0)
                nonce = secrets.token_hex(8)
                asked = [self._asked(examples[i]) for i in unit]
                message = json.dumps({"op": "query", "nonce": nonce, "examples": asked},
                                     separators=(",", ":")).encode() + b"\n"
                kind = query_kind(pool.is_fresh(unit), passes)
                pool.mark(unit)
                times_asked[tuple(unit)] = times_asked.get(tuple(unit), 0) + 1
                issued = time.perf_counter()
                assert self.conn is not None
                self.conn.sendall(message)
                pending.append((nonce, unit, issued, kind))
            in_flight = ahead if planned is not None else min(ahead, len(lead) - 1)  # a lead's answer sizes it
            if not todo and not last_pass and len(pending) <= in_flight:
                spent = time.perf_counter() - first
                if planned is None:  # the lead is (about) done: the rest of the sample over the passes ahead
                    ahead_passes = passes_ahead(spent * len(lead) / len(per_call), min_seconds)
                    planned = [] if ahead_passes == 1 else spread_reserve(reserve, ahead_passes, self._rng)  # 1:
                    todo = list(reserve) if ahead_passes == 1 else []  # the rest alone (the lead again lengthens)
                if todo:
                    due = todo
                elif spent < min_seconds:
                    due = planned.pop(0) if planned else []
                    todo = interleave(repeats, due, self._rng)
                elif planned:  # the window has lasted: what is left of the sample, once
                    due, planned = [u for units in planned for u in units], []
                    todo = due
                else:  # batched: each unit as often as the most asked, so the figure weighs the widths alike
                    due, last_pass = [], True
                    top = max(times_asked.values())
                    todo = [u for u in repeats for _ in range(top - times_asked[tuple(u)])] if depth > 1 else []
                repeats += due
                passes += 1
                continue
            if not pending:
                break
            reply = self._recv()
            answered = time.perf_counter()
            nonce, unit, issued, kind = pending.pop(0)
            inside += self._check_answer(name, examples, unit, nonce, reply)
            if per_call or kind == LEAD:  # a window's first answer (a woken worker's): as a lead's, not compared
                services.append((kind, (answered - max(issued, last_answer)) / len(unit)))
            per_call.append((answered - issued) * 1000)
            busy += answered - issued
            queries += len(unit)
            last_answer = answered
        return queries, (time.perf_counter() - first if depth > 1 else busy), per_call, inside

    def _check_answer(self, name: str, examples: list[dict[str, Any]], unit: list[int], nonce: str,
                      reply: dict[str, Any]) -> float:
        """Check one answer (nonce, count, the same answer as before for each example); the worker's seconds."""
        if reply.get("nonce") != nonce:
            raise LoadGenError(f"an answer on '{name}' does not carry its query's nonce (written before the "
                               "query was issued, or out of order)")
        preds = reply.get("predictions")
        if not isinstance(preds, list) or len(preds) != len(unit):
            raise LoadGenError(f"an answer on '{name}' has {len(preds) if isinstance(preds, list) else 'no'} "
                               f"predictions for a query of {len(unit)} examples")
        seen = self.answers[name]
        for i, pred in zip(unit, preds):
            key, ex_id = answer_key(pred), str(examples[i].get("id"))
            if ex_id in seen and seen[ex_id] != key:
                raise LoadGenError(f"example '{name}/{ex_id}' was answered {seen[ex_id]!r} and {key!r} in the timed "
                                   "windows")
            seen[ex_id] = key
        took = reply.get("seconds")
        return float(took) if isinstance(took, (int, float)) and not isinstance(took, bool) and 0 <= took < 1e6 \
            else 0.0
