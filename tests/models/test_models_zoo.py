"""The demo zoo: a small build shows the mechanics; the full build (long) shows the quality claims."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from support import REPO

from dynadesk.evaluator.adapters import load_adapter
from dynadesk.evaluator.metrics import macro_f1
from dynadesk.models.registry import tree_digest
from dynadesk.models.zoo import (
    BOW,
    DEMO_MODELS,
    MAJORITY,
    MINILM,
    MINILM3,
    SOURCES,
    ZooConfig,
    build_demo_zoo,
    predict_dataset,
)
from dynadesk.recipes import fetch_default_data
from dynadesk.workspace import Workspace

# Small enough for a test on 2 shared cores, big enough that both trained models beat the majority.
SMALL = ZooConfig(train_per_source=128, batch_size=16, lr=3e-4, max_length=48, dev_per_source=40, bow_epochs=4,
                  bow_train_per_source=500)


def _workspace(root: Path):
    ws = Workspace(root)
    store = ws.open_store()
    cache = REPO / ".cache" / "downloads"  # one real download of the pinned sdist per machine
    cache.mkdir(parents=True, exist_ok=True)
    fetch_default_data(store, cache)
    return ws, store


@pytest.fixture(scope="module")
def small_zoo(tmp_path_factory):
    ws, store = _workspace(tmp_path_factory.mktemp("zoo") / "ws")
    rows = build_demo_zoo(store, ws, config=SMALL)
    yield ws, store, rows
    store.close()


def test_small_build_registers_four_scored_models(small_zoo):
    ws, store, rows = small_zoo
    assert [r["model"] for r in rows] == list(DEMO_MODELS)
    assert {r["status"] for r in rows} == {"built"}
    for row in rows:
        rec = store.models.get(row["model"])
        assert rec.task == "sentiment" and Path(rec.path) == ws.models_dir.resolve() / row["model"]
        assert rec.digest == row["digest"] == tree_digest(Path(rec.path))
        assert rec.info["dev_size"] == 4 * SMALL.dev_per_source
        assert set(rec.info["dev_by_source"]) == set(SOURCES)
        assert 0 <= rec.info["dev_macro_f1"] <= 100 and 0 <= rec.info["dev_accuracy"] <= 100
        assert rec.info["dev_accuracy"] == row["dev_accuracy"]
    # The majority baseline predicts the most frequent label of all train splits.
    counts = Counter(ex["label"] for s in SOURCES for ex in store.datasets.iter_examples(f"vader-{s}-train"))
    majority = load_adapter(Path(store.models.get(MAJORITY).path)).predict([{"statement": "anything"}])[0]
    assert majority["label"] == counts.most_common(1)[0][0]
    # Even a small fine-tune learns something: above the majority baseline on dev.
    scores = {r["model"]: r["dev_macro_f1"] for r in rows}
    assert scores[MINILM] > scores[MAJORITY] and scores[BOW] > scores[MAJORITY]


def test_the_transformers_train_in_bf16_only_where_the_cpu_multiplies_it_and_the_recipe_says_which(small_zoo,
                                                                                                   tmp_path):
    """bf16 autocast took the demo's MiniLM training from 53 to 34 s on a CPU with avx512_bf16 (same dev macro-F1);
    emulated elsewhere, it would be slower than fp32. A model built on one kind of CPU is rebuilt on another."""
    from dynadesk.models.zoo import native_bf16

    flags = "flags\t\t: fpu sse2 avx2 avx512f avx512bw{}\nbugs\t\t: spectre_v1\n"
    cpus = {name: tmp_path / name for name in ("bf16", "amx", "plain", "empty")}
    cpus["bf16"].write_text("processor\t: 0\n" + flags.format(" avx512_bf16") + "\nprocessor\t: 1\n" + flags.format(""))
    cpus["amx"].write_text(flags.format(" amx_tile amx_bf16"))
    cpus["plain"].write_text(flags.format(" avx512_vnni bugs_bf16"))  # a name that merely contains it: no
    cpus["empty"].write_text("")
    assert [native_bf16(str(f)) for f in cpus.values()] == [True, True, False, False]
    assert native_bf16(str(tmp_path / "missing")) is False
    _, store, _ = small_zoo
    for name in (MINILM, MINILM3):
        assert store.models.get(name).info["recipe"]["bf16"] is native_bf16()
    assert "bf16" not in store.models.get(BOW).info["recipe"]


def test_minilm_folders_are_standard_transformers_folders(small_zoo):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    ws, store, _ = small_zoo
    for name, layers in ((MINILM, 6), (MINILM3, 3)):
        folder = Path(store.models.get(name).path)
        assert (folder / "model.safetensors").exists() and not list(folder.glob("*.bin"))
        model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True)
        tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        assert type(model).__name__ == "BertForSequenceClassification"
        assert model.config.id2label == {0: "negative", 1: "neutral", 2: "positive"}
        assert model.config.num_hidden_layers == layers == len(model.bert.encoder.layer)
        assert model.config.hidden_size == 384
        assert tok("I loved it")["input_ids"][0] == tok.cls_token_id


def test_building_again_is_a_no_op_and_repairs_only_what_changed(small_zoo):
    ws, store, rows = small_zoo
    before = {r["model"]: (r["digest"], Path(r["path"]).stat().st_mtime_ns) for r in rows}
    again = build_demo_zoo(store, ws, config=SMALL)
    assert {r["status"] for r in again} == {"up to date"}
    assert {r["model"]: (r["digest"], Path(r["path"]).stat().st_mtime_ns) for r in again} == before
    # Tamper with one model: only that one is rebuilt, and (seeded) it comes back identical.
    bow = Path(store.models.get(BOW).path)
    (bow / "bow-vocab.json").write_text('{"tokens": []}')
    third = {r["model"]: r for r in build_demo_zoo(store, ws, config=SMALL, only=[BOW, MAJORITY])}
    assert third[BOW]["status"] == "built" and third[MAJORITY]["status"] == "up to date"
    assert json.loads((bow / "bow-vocab.json").read_text())["tokens"]
    first_bow = next(r for r in rows if r["model"] == BOW)
    assert third[BOW]["dev_macro_f1"] == pytest.approx(first_bow["dev_macro_f1"])
    # An unregistered but intact build is registered again, not rebuilt.
    store.models.remove(MAJORITY)
    fourth = build_demo_zoo(store, ws, config=SMALL, only=[MAJORITY])
    assert fourth[0]["status"] == "up to date" and store.models.get(MAJORITY).digest == before[MAJORITY][0]


# ---------------------------------------------------------------- the full recipe (slow: minutes on 2 cores)

@pytest.fixture(scope="module")
def full_zoo(tmp_path_factory):
    ws, store = _workspace(tmp_path_factory.mktemp("fullzoo") / "ws")
    rows = build_demo_zoo(store, ws)
    yield ws, store, rows
    store.close()


@pytest.mark.long
def test_full_zoo_minilm_beats_both_baselines_on_every_test_set(full_zoo):
    ws, store, rows = full_zoo
    dev = {r["model"]: r["dev_macro_f1"] for r in rows}
    for name in (MINILM, MINILM3, BOW):
        assert dev[name] > dev[MAJORITY], f"{name} is no better than the majority baseline on dev"
    adapters = {n: load_adapter(Path(store.models.get(n).path)) for n in (MINILM, BOW, MAJORITY)}
    labels = ["negative", "neutral", "positive"]
    for source in SOURCES:
        examples = store.datasets.examples(f"vader-{source}-test")
        golds = [ex["label"] for ex in examples]
        f1 = {n: macro_f1([p["label"] for p in predict_dataset(a, examples, ["statement"])], golds, labels)
              for n, a in adapters.items()}
        assert f1[MINILM] > f1[BOW] and f1[MINILM] > f1[MAJORITY], f"vader-{source}-test: {f1}"


@pytest.mark.long
def test_full_zoo_try_prints_positive(full_zoo):
    ws, _, _ = full_zoo
    proc = subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(ws.home),
                           "models", "try", "minilm-sentiment", "--statement", "I loved every minute of it"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    label, prob = proc.stdout.split()[0], float(proc.stdout.split()[1].strip("()"))
    assert label == "positive" and prob > 0.5


@pytest.mark.long
def test_full_recipe_three_layer_minilm_learns_more_than_the_majority(tmp_path):
    """With 1,000 training examples a source (125 steps, issue 50's first-run cut) at the 6-layer model's learning
    rate, the 3-layer MiniLM came out at dev macro-F1 21.5 beside the majority model's 21.0 (accuracy 46.2 vs 46.1):
    a near-constant predictor sold as a trained model. It needs the larger rate it was given; 10 points above the
    majority is far below what it reaches (~45) and far above a collapse. Minutes on 2 shared cores (2-10)."""
    ws, store = _workspace(tmp_path / "ws")
    dev = {r["model"]: r["dev_macro_f1"] for r in build_demo_zoo(store, ws, only=[MAJORITY, MINILM3])}
    store.close()
    assert dev[MINILM3] > dev[MAJORITY] + 10, dev
