"""Registry: tree digests, manifests written on add, label mapping, pickle refusal, CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from support.tiny_models import make_tiny_classifier, make_tiny_qa

from dynadesk.errors import AlreadyExistsError, ModelError, NotFoundError, UnsafeModelError
from dynadesk.models import ModelDeclaration, predict_live, register_model, remove_model, tree_digest, verify_model
from dynadesk.models.registry import MANIFEST_NAME

SENT = ["negative", "neutral", "positive"]


def run_cli(*args, home):
    return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home), *args],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory):
    """A classifier as a user has it: config id2label in upper case and another order, no manifest."""
    return make_tiny_classifier(tmp_path_factory.mktemp("user") / "sst-like", SENT, manifest=False,
                                id2label={0: "POSITIVE", 1: "NEGATIVE", 2: "NEUTRAL"})


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


# ---------------------------------------------------------------- digest

def test_tree_digest_is_content_addressed(tmp_path):
    a = tmp_path / "a"
    (a / "sub").mkdir(parents=True)
    (a / "x.txt").write_text("one")
    (a / "sub" / "y.bin").write_bytes(b"\x00\x01")
    d = tree_digest(a)
    assert d.startswith("sha256:") and len(d) == 71
    b = _copy(a, tmp_path / "elsewhere" / "b")
    os.utime(b / "x.txt", (1, 1))  # timestamps and location do not matter
    (b / ".git").mkdir()
    (b / ".git" / "HEAD").write_text("ref")  # VCS folders are not part of the model
    assert tree_digest(b) == d
    (b / "x.txt").write_text("two")
    assert tree_digest(b) != d
    (b / "x.txt").write_text("one")
    (b / "sub" / "y.bin").rename(b / "sub" / "z.bin")  # a rename changes the digest too
    assert tree_digest(b) != d


def test_symlink_outside_the_folder_is_refused(tmp_path):
    outside = tmp_path / "secret.safetensors"
    outside.write_bytes(b"weights")
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "inside.txt").write_text("x")
    (folder / "alias.txt").symlink_to(folder / "inside.txt")  # inside: fine, hashed as a file
    tree_digest(folder)
    (folder / "model.safetensors").symlink_to(outside)
    with pytest.raises(ModelError, match="'model.safetensors' is a symlink to .*outside the model folder"):
        tree_digest(folder)


# ---------------------------------------------------------------- add

def test_add_writes_manifest_with_mapped_labels(store, user_folder, tmp_path):
    folder = _copy(user_folder, tmp_path / "copy")
    rec = register_model(store, folder, "sentiment", name="sst")
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert manifest["kind"] == "hf-sequence-classification" == rec.kind
    assert manifest["labels"] == ["positive", "negative", "neutral"]  # task labels in model output order
    assert manifest["label_map"] == {"POSITIVE": "positive", "NEGATIVE": "negative", "NEUTRAL": "neutral"}
    assert rec.digest == tree_digest(folder)  # the digest covers the manifest
    assert register_model(store, folder, "sentiment", name="sst").id == rec.id  # unchanged folder: no-op
    with pytest.raises(AlreadyExistsError, match="already registered"):
        register_model(store, user_folder, "sentiment", name="sst")
    pred = predict_live(store, "sst", {"statement": "a good film"})
    assert set(pred["probs"]) == set(SENT)


def test_unmappable_labels_are_refused_then_given_explicitly(store, tmp_path):
    folder = make_tiny_classifier(tmp_path / "generic", SENT, manifest=False,
                                  id2label={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(ModelError, match=r"cannot map the model's labels \(LABEL_0, LABEL_1, LABEL_2\).*--labels"):
        register_model(store, folder, "sentiment")
    assert not (folder / MANIFEST_NAME).exists()  # nothing written on refusal
    assert store.models.list() == []
    rec = register_model(store, folder, "sentiment",
                         declared=ModelDeclaration(labels=("neutral", "positive", "negative")))
    assert rec.manifest["labels"] == ["neutral", "positive", "negative"]


def test_wrong_number_of_labels_or_wrong_task(store, tmp_path):
    two = make_tiny_classifier(tmp_path / "two", ["a", "b"], manifest=False)
    with pytest.raises(ModelError, match="has 2 outputs .* task 'sentiment' has 3 labels"):
        register_model(store, two, "sentiment")
    qa = make_tiny_qa(tmp_path / "qa", manifest=False)
    with pytest.raises(ModelError, match="question-answering model cannot serve task 'sentiment'"):
        register_model(store, qa, "sentiment")
    rec = register_model(store, qa, "qa")
    assert rec.manifest == {"task": "qa", "kind": "hf-question-answering", "inputs": ["context", "question"],
                            "context_field": "context", "question_field": "question"}
    with pytest.raises(NotFoundError, match="unknown task 'nope'"):
        register_model(store, qa, "nope")


def test_pickle_only_model_refused_on_the_host(store, tmp_path):
    folder = make_tiny_classifier(tmp_path / "pickled", SENT, pickle_weights=True)
    with pytest.raises(UnsafeModelError) as err:
        register_model(store, folder, "sentiment")
    msg = str(err.value)
    assert "pytorch_model.bin" in msg and "executes arbitrary code" in msg
    assert "safetensors" in msg and "--allow-pickle" in msg and "container" in msg
    assert store.models.list() == []
    rec = register_model(store, folder, "sentiment", allow_pickle=True)
    assert rec.has_pickle
    with pytest.raises(UnsafeModelError, match="runs only inside the evaluation container"):
        predict_live(store, rec.name, {"statement": "hi"})


def test_changed_folder_is_detected(store, tmp_path):
    folder = make_tiny_classifier(tmp_path / "m", SENT)
    rec = register_model(store, folder, "sentiment")
    assert verify_model(rec) == rec.digest
    (folder / "config.json").write_text((folder / "config.json").read_text().replace("32", "33", 1))
    with pytest.raises(ModelError, match="changed since registration.*--replace"):
        verify_model(store.models.get("m"))
    with pytest.raises(ModelError, match="changed since registration"):
        predict_live(store, "m", {"statement": "hello"})


def test_remove_keeps_files_outside_workspace(store, home, tmp_path):
    folder = make_tiny_classifier(tmp_path / "keep", SENT)
    register_model(store, folder, "sentiment")
    with pytest.raises(ModelError, match="not deleting a folder outside"):
        remove_model(store, "keep", delete_files=True, models_dir=home / "models")
    assert store.models.exists("keep")
    remove_model(store, "keep")
    assert not store.models.exists("keep") and folder.exists()
    inside = make_tiny_classifier(home / "models" / "mine", SENT)
    register_model(store, inside, "sentiment")
    remove_model(store, "mine", delete_files=True, models_dir=home / "models")
    assert not inside.exists()


# ---------------------------------------------------------------- CLI

def test_cli_add_list_show_try_remove(home, user_folder, tmp_path):
    folder = _copy(user_folder, tmp_path / "cli-model")
    proc = run_cli("models", "add", str(folder), "--task", "sentiment", "--name", "mine", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["digest"] == tree_digest(folder)
    listed = json.loads(run_cli("models", "list", "--json", home=home).stdout)
    assert [m["name"] for m in listed] == ["mine"]
    shown = json.loads(run_cli("models", "show", "mine", "--verify", "--json", home=home).stdout)
    assert shown["verified"]
    assert {"config.json", "model.safetensors", MANIFEST_NAME} <= {f["path"] for f in shown["files"]}
    tried = run_cli("models", "try", "mine", "--statement", "what a great day", "--json", home=home)
    assert tried.returncode == 0, tried.stderr
    pred = json.loads(tried.stdout)["prediction"]
    assert pred["label"] in SENT and abs(sum(pred["probs"].values()) - 1) < 1e-5
    text = run_cli("models", "try", "mine", "--text", "what a great day", home=home).stdout
    assert text.split()[0] == pred["label"]  # same input, same warm-or-cold prediction
    bad = run_cli("models", "try", "mine", "--hypothesis", "x", home=home)
    assert bad.returncode == 1 and "'statement' is missing" in bad.stderr
    assert "unknown field(s) hypothesis" in bad.stderr
    assert run_cli("models", "remove", "mine", home=home).returncode == 0
    assert json.loads(run_cli("models", "list", "--json", home=home).stdout) == []


def test_cli_pickle_refusal_is_a_clear_error(home, tmp_path):
    folder = make_tiny_classifier(tmp_path / "pk", SENT, pickle_weights=True)
    proc = run_cli("models", "add", str(folder), "--task", "sentiment", home=home)
    assert proc.returncode == 1
    assert "executes arbitrary code" in proc.stderr and "Traceback" not in proc.stderr
