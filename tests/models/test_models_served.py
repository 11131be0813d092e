"""Served models (evaluator/openai_served.py, dynadesk/models/served.py): a real ``transformers serve`` process
on loopback serving a tiny causal LM built from a config; registered by URL and model name through the CLI,
predicted live, evaluated on the local runner, bundled (the bundle records the endpoint and the declared model),
audited at an endpoint the auditor names."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from support.eval import add_test_set, run_request
from support.hub import free_port
from support.tiny_models import make_tiny_tokenizer

from dynadesk.errors import ModelError
from dynadesk.evaluator.adapters import AdapterError
from dynadesk.evaluator.openai_served import ServedAdapter, read_endpoint
from dynadesk.sync.format.parts import Served

pytest.importorskip("openai", reason="transformers serve needs transformers[serving] (dev extra)")
SERVE = Path(sys.executable).with_name("transformers")


def make_tiny_causal_lm(path: Path) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = make_tiny_tokenizer(path)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=256,
                                       bos_token_id=2, eos_token_id=3, pad_token_id=0))
    model.save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    """``transformers serve`` on a free loopback port with the tiny LM preloaded: (base URL, model name)."""
    folder = make_tiny_causal_lm(tmp_path_factory.mktemp("lm") / "tiny-lm")
    port = free_port()
    log = open(folder.parent / "serve.log", "wb")
    proc = subprocess.Popen([str(SERVE), "serve", str(folder), "--host", "127.0.0.1", "--port", str(port),
                             "--device", "cpu"], stdout=log, stderr=subprocess.STDOUT, cwd=folder.parent)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (folder.parent / "serve.log").read_text()
            time.sleep(1)
        yield url, str(folder)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_served_register_live_evaluate_bundle_audit(endpoint, tmp_path):
    from dynadesk.audit.audit import AuditOptions, audit_bundle
    from dynadesk.audit.report import DETERMINISTIC, IDENTICAL
    from dynadesk.models import predict_live
    from dynadesk.models.served import register_served
    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.format.keys import generate_key
    from dynadesk.workspace import Workspace

    url, model = endpoint
    ws = Workspace(tmp_path / "ws").ensure()
    weights = "sha256:" + "ab" * 32
    proc = subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(ws.home),
                           "models", "add", "--served", url, "--model", model, "--task", "sentiment",
                           "--name", "served-lm", "--weights-digest", weights, "--json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kind"] == "openai-served"
    store = ws.open_store()
    try:
        generate_key(ws.keys_dir)
        live = predict_live(store, "served-lm", {"statement": "the movie was good"})
        assert live["label"] in ("negative", "neutral", "positive") and abs(sum(live["probs"].values()) - 1) < 1e-9
        for i, n in enumerate((6, 4)):
            add_test_set(store, f"set{i}-test", n, seed=i, perturbed=False)
        run = evaluate(store, ws, run_request("served-lm", runner="local", batch_size=4, latency_samples=4,
                                              warmup=1))
        assert run.status == "succeeded", run.error
        shown = subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home",
                                str(ws.home), "runs", "show", str(run.id)], capture_output=True, text=True)
        assert "runner local (served, NOT sandboxed)" in shown.stdout, shown.stdout + shown.stderr
        with pytest.raises(Exception, match="sandbox \\(no network\\) cannot reach; evaluate it with --runner local"):
            evaluate(store, ws, run_request("served-lm", runner="docker"))
        bundle = create_bundle(ws, store, run.id)
        assert bundle.payload.model.served == Served(url, model, weights)
        assert bundle.payload.to_json()["runner"]["sandboxed"] is False
        # the auditor names an endpoint of their own: the same model and weights digest, another URL, same digest
        record = store.models.get("served-lm")
        theirs = url.replace("127.0.0.1", "localhost")
        again = register_served(store, ws.models_dir, theirs, model, "sentiment", name="served-lm",
                                weights_digest=weights, replace=True)
        assert again.digest == record.digest and read_endpoint(Path(again.path)) == theirs
        report = audit_bundle(store, ws, bundle.raw, AuditOptions(rerun=True, runner="local"))
        assert not report.failures and not report.incomplete, report.failures
        assert store.evaluations.get(report.rerun_id).status == "succeeded"
        det = [c for c in report.checks if c.kind == DETERMINISTIC]
        assert det and all(c.verdict == IDENTICAL for c in det), [c for c in det if c.verdict != IDENTICAL]
    finally:
        store.close()


def test_registration_names_a_model_the_endpoint_does_not_list(endpoint, store, tmp_path):
    from dynadesk.models.served import register_served

    url, model = endpoint
    with pytest.raises(ModelError, match=r"lists no model 'nope' \(it lists .*tiny-lm\); pass --model"):
        register_served(store, tmp_path, url, "nope", "sentiment", name="x")
    with pytest.raises(Exception, match="'endpoint' must be the server's http"):
        register_served(store, tmp_path, "ftp://127.0.0.1/", model, "sentiment", name="x")
    port = free_port()  # nothing listens there
    with pytest.raises(ModelError, match="cannot reach the endpoint"):
        register_served(store, tmp_path, f"http://127.0.0.1:{port}", model, "sentiment", name="x")


def test_an_endpoint_error_is_an_adapter_error_naming_the_endpoint(endpoint):
    url, _ = endpoint
    adapter = ServedAdapter(Path("."), {"inputs": ["statement"], "endpoint": url, "model": "not-served",
                                        "labels": ["a", "b"]})
    with pytest.raises(AdapterError, match=rf"{url}/v1/completions"):
        adapter.predict([{"statement": "hello"}])
    assert shutil.which(str(SERVE))
