"""bench/bench_roofline.py counts what it claims: the FLOPs of a tiny BERT classifier's pass through the worker equal
the closed form (attention included: torch's counter alone leaves the CPU attention kernel out), padded batches cost
their widest example per row, the GEMM replay does exactly the counted work, and the paired pass is the worker's own
timed pass with the replay beside it."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest
from support import REPO
from support.eval import LABELS
from support.tiny_models import make_tiny_classifier


@pytest.fixture(scope="module")
def roofline():
    spec = importlib.util.spec_from_file_location("bench_roofline_under_test", REPO / "bench" / "bench_roofline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def closed_form(config: dict, tokens: int) -> int:
    """Matmul FLOPs of one example of ``tokens`` tokens: per layer Q, K, V, output (h x h), the two feed-forward
    matrices (h x i), QK^T and PV (tokens x tokens x h); then the pooler (h x h) and the classifier (h x labels)."""
    h, i, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    per_layer = 2 * tokens * (4 * h * h + 2 * h * i) + 2 * 2 * tokens * tokens * h
    return layers * per_layer + 2 * h * h + 2 * h * len(LABELS)


def test_counted_flops_are_the_closed_form_and_the_replay_does_that_work(roofline, tmp_path):
    folder = make_tiny_classifier(tmp_path / "tiny", LABELS)
    config = json.loads((folder / "config.json").read_text())
    examples = [{"id": "0", "statement": "good"}, {"id": "1", "statement": "the film was very very long and bad"},
                {"id": "2", "statement": "the food was bad"}]
    worker = roofline.make_worker(folder, examples, 1)
    try:
        encoded = worker.encoded(examples)
        lengths = [len(e["input_ids"]) for e in encoded]
        assert len(set(lengths)) == 3  # the padded and the useful counts must differ

        padded, gemms = roofline.count_flops(worker.adapter, [encoded])
        assert padded == len(examples) * closed_form(config, max(lengths))
        assert roofline.useful_flops(worker.adapter, encoded) == sum(closed_form(config, n) for n in lengths)
        replays, replay_flops = roofline.gemm_replay(gemms)
        assert replay_flops == padded and len(replays) == 1
        # per layer: 6 linear layers and the two attention matmuls; then the pooler and the classifier
        assert len(gemms[0]) == config["num_hidden_layers"] * 8 + 2

        passed, replayed = roofline.paired_pass(worker, examples, replays)
        assert passed > 0 and replayed > 0
        predicted = roofline.predictions(worker)
        assert sorted(predicted) == ["0", "1", "2"] and all(p["label"] in LABELS for p in predicted.values())
    finally:
        shutil.rmtree(worker.out, ignore_errors=True)
