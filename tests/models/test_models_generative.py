"""Generative LMs by prompt: a tiny causal LM (GPT-2) and a tiny seq2seq LM (T5), built from configs with random
weights, on a label task (sentiment) and a span task (qa), each through register -> live prediction -> local
evaluation -> signed bundle -> audit re-run; plus the prompt, manifest and scoring rules they rest on."""

from __future__ import annotations

import json
import math

import pytest
from support.eval import LABELS, add_test_set, run_request
from support.tiny_models import MANIFEST_NAME, make_tiny_generative

from dynadesk.datasets import dataset_digest
from dynadesk.errors import ConfigError, ModelError
from dynadesk.evaluator import adapters as ad
from dynadesk.evaluator import prompts
from dynadesk.models.live import predict_live
from dynadesk.models.registry import register_model

CONTEXTS = ["paris is the capital of france", "the river in london was named by people",
            "she wrote a book about berlin", "the mountain was built by children"]


def _qa_set(store, name: str, n: int) -> None:
    rows = []
    for i in range(n):
        ctx = CONTEXTS[i % len(CONTEXTS)]
        words = ctx.split()
        rows.append({"id": f"{name}-{i}", "context": ctx, "question": f"what is {words[i % len(words)]} {i}",
                     "answers": [words[(i + 1) % len(words)]]})
    store.datasets.add(name, "qa", "test", rows, dataset_digest(rows), {})


@pytest.fixture(scope="module")
def ws_store(tmp_path_factory):
    from dynadesk.sync.format.keys import generate_key
    from dynadesk.workspace import Workspace

    tmp = tmp_path_factory.mktemp("gen")
    ws = Workspace(tmp / "ws").ensure()
    store = ws.open_store()
    generate_key(ws.keys_dir)
    add_test_set(store, "sent-test", 12, seed=3)
    _qa_set(store, "qa-test", 8)
    yield tmp, ws, store
    store.close()


CASES = [("causal", "sentiment", "sent-test"), ("seq2seq", "sentiment", "sent-test"),
         ("causal", "qa", "qa-test"), ("seq2seq", "qa", "qa-test")]


@pytest.mark.parametrize(("arch", "task", "dataset"), CASES, ids=[f"{a}-{t}" for a, t, _ in CASES])
def test_register_live_evaluate_bundle_audit(ws_store, arch, task, dataset):
    from dynadesk.audit.audit import AuditOptions, audit_bundle
    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.sync.client.create import create_bundle

    tmp, ws, store = ws_store
    name = f"{arch}-{task}"
    # a user's folder: no manifest; the kind comes from config.json's architectures, the prompt is the default
    folder = make_tiny_generative(tmp / name, arch, task, manifest=False)
    rec = register_model(store, folder, task, name=name)
    assert rec.kind == ("hf-causal-lm" if arch == "causal" else "hf-seq2seq-lm")
    written = json.loads((folder / MANIFEST_NAME).read_text())
    assert written["prompt"]["template"] == prompts.default_template(written["inputs"])
    if task == "sentiment":
        pred = predict_live(store, name, {"statement": "the film was great"})
        assert pred["label"] in LABELS and math.isclose(sum(pred["probs"].values()), 1.0, abs_tol=1e-9)
        best = max(pred["loglikelihoods"].values())
        assert pred["loglikelihoods"][pred["label"]] == best
    else:
        pred = predict_live(store, name, {"context": CONTEXTS[0], "question": "what is the capital"})
        assert isinstance(pred["answer"], str) and "\n" not in pred["answer"]
    run = evaluate(store, ws, run_request(name, [dataset], runner="local", batch_size=4, latency_samples=4,
                                          warmup=1))
    assert run.status == "succeeded", run.error
    values = {(m.metric, m.dataset): m.value for m in run.metrics}
    assert values[("throughput", "")] > 0
    generated = {("tokens_per_second", ""), ("time_to_first_token_ms", "")}
    if task == "qa":  # generation runs: tokens/s and time to first token from the timed windows
        assert all(values[k] > 0 for k in generated)
        assert {m.unit for m in run.metrics if m.metric == "tokens_per_second"} == {"tokens/s"}
    else:  # label tasks are scored, not generated
        assert not generated & set(values)
    bundle = create_bundle(ws, store, run.id)
    # the prompt is part of the signed run: the spec carries the manifest (template, verbalisers, generation)
    assert bundle.payload.to_json()["request"] == run.request
    report = audit_bundle(store, ws, bundle.raw, AuditOptions(rerun=True, runner="local"))
    assert not report.failures and not report.incomplete, report.failures


def test_verbaliser_scores_follow_the_prompt_and_shots(tmp_path):
    """Shots and template change the scores; the same manifest gives the same scores bit for bit."""
    base = make_tiny_generative(tmp_path / "a", "causal", "sentiment", labels=LABELS)
    shots = prompts.draw_shots([{"statement": s, "label": lab} for s, lab in
                                (("i love it", "positive"), ("awful", "negative"), ("ok", "neutral"))], 2, 7,
                               ["statement"], lambda r: f" {r['label']}")
    assert shots == prompts.draw_shots([{"statement": s, "label": lab} for s, lab in
                                        (("i love it", "positive"), ("awful", "negative"), ("ok", "neutral"))],
                                       2, 7, ["statement"], lambda r: f" {r['label']}")
    manifest = json.loads((base / MANIFEST_NAME).read_text())
    one = ad.load_adapter(base).predict([{"statement": "the food was bad"}])[0]
    again = ad.load_adapter(base).predict([{"statement": "the food was bad"}])[0]
    assert one == again
    shot_manifest = {**manifest, "prompt": {**manifest["prompt"], "shots": shots}}
    shot = ad.load_adapter(base, shot_manifest).predict([{"statement": "the food was bad"}])[0]
    assert shot["loglikelihoods"] != one["loglikelihoods"]
    text = prompts.render(shot_manifest["prompt"], {"statement": "the food was bad"})
    assert text.startswith(f"Statement: {shots[0]['statement']}\nAnswer:{shots[0]['target']}\n\n")


def test_batched_scores_equal_one_at_a_time(tmp_path):
    """Right padding and sorting by length change nothing: a batch scores as its examples do alone."""
    folder = make_tiny_generative(tmp_path / "m", "causal", "sentiment", labels=LABELS,
                                  prompt={**prompts.default_prompt(["statement"], LABELS),
                                          "verbalisers": {"negative": " bad", "neutral": " ok ok",
                                                          "positive": " very good"}})
    a = ad.load_adapter(folder)
    batch = [{"statement": s} for s in ("good", "the movie was really very terrible and bad", "ok then")]
    together = a.predict(batch)
    alone = [a.predict([ex])[0] for ex in batch]
    for t, s in zip(together, alone):
        assert t["label"] == s["label"]
        for lab in LABELS:
            assert abs(t["loglikelihoods"][lab] - s["loglikelihoods"][lab]) < 1e-5


def test_shared_prompt_cache_scores_equal_rows(tmp_path):
    """The KV-cache path (long prompts) gives the row path's log-likelihoods, padding and all."""
    a = ad.load_adapter(make_tiny_generative(tmp_path / "m", "causal", "sentiment", labels=LABELS))
    a.cache_min_prompt = 0
    texts = [a.prompt_text({"statement": s}) for s in ("good", "the movie was really very bad and not ok", "ok")]
    verbs = [" negative", " neutral", " positive"]
    cached = a.label_scores(texts, verbs)
    rows = a.loglikelihoods([(t, v) for t in texts for v in verbs])
    assert max(abs(x - y) for x, y in zip(cached, rows)) < 1e-5 and len(set(cached)) > 3


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda m: m.pop("prompt"), "'prompt' must be an object"),
    (lambda m: m["prompt"].update(template="Text: {text}"), "'prompt.template' names ['text']"),
    (lambda m: m["prompt"]["verbalisers"].pop("neutral"), "'prompt.verbalisers' must map every label"),
    (lambda m: m["generation"].update(do_sample=True), "only greedy decoding"),
    (lambda m: m["prompt"].update(shots=[{"statement": "x"}]), "'prompt.shots' must be a list"),
])
def test_bad_generative_manifest_named_in_one_line_at_registration(store, tmp_path, edit, needle):
    folder = make_tiny_generative(tmp_path / "m", "causal", "sentiment", labels=LABELS)
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    edit(manifest)
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(ConfigError) as err:
        register_model(store, folder, "sentiment", name="bad")
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_span_manifest_for_a_label_task_is_refused(store, tmp_path):
    folder = make_tiny_generative(tmp_path / "m", "causal", "sentiment")  # a span manifest (no labels)
    with pytest.raises(ModelError, match="wants labels"):
        register_model(store, folder, "sentiment", name="bad")


def test_generated_answer_cut_at_stop():
    assert prompts.cut_answer(" paris\nQuestion: next", ["\n"]) == "paris"
    assert prompts.cut_answer("  london.  ", ["\n"]) == "london."


def test_generative_runs_in_the_docker_sandbox_as_locally(ws_store, evaluator_image):
    """The evaluator image carries what a generative LM needs: a causal LM on a span task in Docker predicts
    what the local runner predicts, and the run is sandboxed."""
    from dynadesk.orchestration.evaluate import evaluate

    tmp, ws, store = ws_store
    name = "docker-causal-qa"
    register_model(store, make_tiny_generative(tmp / name, "causal", "qa", manifest=False), "qa", name=name)
    runs = [evaluate(store, ws, run_request(name, ["qa-test"], runner=runner, batch_size=4, latency_samples=4,
                                            warmup=1, image=evaluator_image.image_id if runner == "docker" else None))
            for runner in ("docker", "local")]
    assert all(r.status == "succeeded" for r in runs), [r.error for r in runs]
    assert runs[0].sandboxed and runs[0].runner == "docker"
    det = [{(m.metric, m.dataset): m.value for m in r.metrics if m.deterministic} for r in runs]
    assert det[0] == det[1] and ("squad_f1", "qa-test") in det[0]
    assert any(m.metric == "tokens_per_second" for m in runs[0].metrics)


def test_cli_models_add_and_try_a_generative_folder(home, tmp_path):
    """`dynadesk models add` names what a generative folder lacks in one line; `models try` answers live."""
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                               *args], capture_output=True, text=True)

    folder = make_tiny_generative(tmp_path / "t5-qa", "seq2seq", "qa", manifest=False)
    for f in [*folder.glob("tokenizer*"), *folder.glob("vocab*"), *folder.glob("special_tokens*")]:
        f.unlink()
    bad = cli("models", "add", str(folder), "--task", "qa")
    assert bad.returncode != 0 and "missing tokenizer files" in bad.stderr
    assert len([line for line in bad.stderr.splitlines() if line.strip()]) == 1, bad.stderr
    folder = make_tiny_generative(tmp_path / "gpt2-qa", "causal", "qa", manifest=False)
    added = cli("models", "add", str(folder), "--task", "qa", "--name", "gpt2-qa")
    assert added.returncode == 0 and "(hf-causal-lm, task qa)" in added.stdout, added.stderr
    tried = cli("models", "try", "gpt2-qa", "--context", CONTEXTS[0], "--question", "what is the capital")
    assert tried.returncode == 0, tried.stderr
    assert "score" in tried.stdout and ("generated, not in the context" in tried.stdout or "context[" in tried.stdout)


def _label_rows(a, texts, verbs):
    return a.loglikelihoods([(t, v) for t in texts for v in verbs])


def test_packed_rows_score_every_label_as_its_own_row_does(tmp_path):
    """Every label's continuation in one row after its prompt (a 4-D mask, positions restarted): the row path's
    log-likelihoods, over prompts of different lengths (padding) and labels of different lengths."""
    a = ad.load_adapter(make_tiny_generative(tmp_path / "m", "causal", "sentiment", labels=LABELS))
    texts = [a.prompt_text({"statement": s}) for s in ("good", "the movie was really very bad and not ok", "ok",
                                                         "i hated every minute of the film and the food")]
    verbs = [" bad", " ok ok ok", " very good"]
    packed = a.label_scores(texts, verbs)
    assert a._packed().usable is True  # the path taken, after its one check against the rows
    rows = _label_rows(a, texts, verbs)
    assert max(abs(x - y) for x, y in zip(packed, rows)) < 1e-5 and len(set(packed)) == len(packed)


def test_a_model_that_ignores_the_mask_keeps_to_the_rows(tmp_path):
    """A model that reads no 4-D mask (as remote code may) would score every label after the others: the first
    batch's check against the rows finds it and the adapter keeps to the rows, with the rows' scores."""
    a = ad.load_adapter(make_tiny_generative(tmp_path / "m", "causal", "sentiment", labels=LABELS))
    forward = a.model.forward

    def no_mask(*args, attention_mask=None, **kwargs):
        mask = None if attention_mask is not None and attention_mask.dim() == 4 else attention_mask
        return forward(*args, attention_mask=mask, **kwargs)

    a.model.forward = no_mask
    texts = [a.prompt_text({"statement": s}) for s in ("good", "the movie was bad", "ok")]
    verbs = [" bad", " ok ok ok", " very good"]
    got = a.label_scores(texts, verbs)
    assert a._packed().usable is False
    assert got == _label_rows(a, texts, verbs)


def test_encoding_many_pairs_at_once_gives_each_pairs_own_tokens(tmp_path):
    """The batch encoding (one tokenizer call per special-token setting, each context once) is encode_pair's split
    for every request: trailing prompt spaces moved to the continuation, a context already starting with the BOS
    text encoded without a second one, contexts repeated and not."""
    a = ad.load_adapter(make_tiny_generative(tmp_path / "m", "causal", "sentiment", labels=LABELS))
    bos = a.tokenizer.bos_token or ""
    requests = [(c, v) for c in ("Statement: good\nAnswer:", "Statement: bad \nAnswer: ", f"{bos}Answer:", "x")
                for v in (" negative", " neutral ok", "positive")]
    assert a.encode_pairs(requests) == [a.encode_pair(c, v) for c, v in requests]
