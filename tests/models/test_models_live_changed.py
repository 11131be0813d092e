"""A warm live model serves a registration only while its folder is what was registered.

CI (xdist, one worker running several files): `predict_live` on a model whose config had just been edited answered
instead of refusing, because another test in the same process had loaded a model with the same digest and the
warm cache, keyed by digest, skipped the folder check. The same hole lets a folder be edited under a running
annotation session: the first prediction verified it, later ones never looked again.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest
from support.tiny_models import make_tiny_classifier

from dynadesk.errors import ModelError
from dynadesk.models import predict_live, register_model
from dynadesk.models.live import LivePredictor

SENT = ["negative", "neutral", "positive"]


def _edit_same_size(path, keep_times: bool = False) -> None:
    before = path.stat()
    path.write_text(path.read_text().replace("32", "33", 1))
    if keep_times:  # an editor that puts the timestamps back: the ctime still moves
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_an_edit_under_a_warm_model_is_refused_at_the_next_prediction(store, tmp_path):
    folder = make_tiny_classifier(tmp_path / "m", SENT)
    register_model(store, folder, "sentiment")
    assert "label" in predict_live(store, "m", {"statement": "hello"})  # warm
    _edit_same_size(folder / "config.json")  # same size, within the same timestamp tick
    with pytest.raises(ModelError, match="changed since registration"):
        predict_live(store, "m", {"statement": "hello"})


def test_a_warm_copy_loaded_from_another_folder_does_not_vouch_for_this_one(store, tmp_path):
    first = make_tiny_classifier(tmp_path / "a", SENT)
    register_model(store, first, "sentiment", name="a")
    predictor = LivePredictor()
    predictor.predict(store.models.get("a"), {"statement": "hello"})  # the digest is now warm
    second = tmp_path / "b"
    shutil.copytree(first, second)
    register_model(store, second, "sentiment", name="b")
    _edit_same_size(second / "config.json")
    with pytest.raises(ModelError, match="model 'b': files in .* changed since registration"):
        predictor.predict(store.models.get("b"), {"statement": "hello"})
    assert "label" in predictor.predict(store.models.get("a"), {"statement": "hello"})  # the other is untouched


def test_a_settled_folder_edited_with_its_timestamps_put_back_is_refused(store, tmp_path):
    folder = make_tiny_classifier(tmp_path / "m", SENT)
    old = time.time_ns() - 60_000_000_000
    for path in folder.iterdir():
        os.utime(path, ns=(old, old))
    register_model(store, folder, "sentiment")
    predictor = LivePredictor()
    predictor.predict(store.models.get("m"), {"statement": "hello"})
    time.sleep(0.01)
    _edit_same_size(folder / "config.json", keep_times=True)
    with pytest.raises(ModelError, match="changed since registration"):
        predictor.predict(store.models.get("m"), {"statement": "hello"})
