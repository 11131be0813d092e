"""The model's view (``write_model_view``) and the host's recomputation (``load_gold``) read a spec dataset's file
through one check: a missing file or one whose bytes are not the spec's sha256 is refused with the part's own
error, naming the dataset and the file, before anything is read from it."""

from __future__ import annotations

import hashlib
import json

import pytest

from dynadesk.errors import RunFolderError
from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec
from dynadesk.orchestration.model_view import write_model_view
from dynadesk.orchestration.recompute import ResultMismatch, load_gold
from dynadesk.tasks import get_task


def test_both_readers_refuse_a_missing_or_changed_data_file_naming_it(tmp_path):
    rows = [{"id": "a", "statement": "fine", "label": "positive"}, {"id": "b", "statement": "bad", "label": "negative"}]
    raw = "".join(json.dumps(r) + "\n" for r in rows).encode()
    data = tmp_path / "data"
    data.mkdir()
    ds = DatasetSpec(name="sent-test", file="d000.jsonl", sha256=hashlib.sha256(raw).hexdigest(), size=2,
                     role="test")
    spec = Spec(task=get_task("sentiment").to_dict(), model={"name": "m", "digest": "sha256:0", "manifest": {}},
                settings=Settings(), datasets=[ds])
    path = data / "d000.jsonl"

    with pytest.raises(ResultMismatch, match=f"dataset 'sent-test': cannot read the gold file {path}"):
        load_gold(data, ds)
    with pytest.raises(RunFolderError, match=f"dataset 'sent-test': cannot read the host's data file {path}"):
        write_model_view(spec, data, tmp_path / "view")

    path.write_bytes(raw)
    assert load_gold(data, ds) == rows
    path.write_bytes(raw.replace(b"fine", b"FINE"))
    with pytest.raises(ResultMismatch, match=f"{path} does not match the spec's sha256 {ds.sha256}$"):
        load_gold(data, ds)
    with pytest.raises(RunFolderError, match=f"{path} does not match the spec's sha256 {ds.sha256}; start a new run"):
        write_model_view(spec, data, tmp_path / "view")
