"""Succeeded runs of the extractive QA task (a span output) with real run folders: the spec, the data, the
predictions, the host's own metric rows (``recompute``) and the host's bootstrap (intervals and compact outcomes in
the profile), so the local board, ``bundle create`` and the public board read them as they read a real QA run
(issue 44: constant answers and abstentions are baselines on a span task too)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dynadesk.datasets import DatasetOrigin, dataset_digest
from dynadesk.store.evaluations import ImageBuild, MetricValue, RunChange, RunSetup, WorkerSettings
from support.sync import IMAGE_EPOCH

QA_SETS = ("qa-wiki-test", "qa-news-test")
CITIES = ("Paris", "Lyon", "Nantes", "Lille", "Nice", "Brest", "Dijon", "Metz", "Caen", "Tours")


def ensure_qa_datasets(store, names=QA_SETS, size: int = 20) -> None:
    """Test sets whose examples each have another answer (a city of the context)."""
    for name in names:
        if store.datasets.exists(name):
            continue
        examples = [{"id": f"{name}-{i}", "context": f"The meeting {i} of {name} was held in {CITIES[i % 10]} in May.",
                     "question": f"Where was meeting {i} held?", "answers": [CITIES[i % 10]]} for i in range(size)]
        store.datasets.add(name, "qa", "test", examples, dataset_digest(examples), {}, DatasetOrigin(source="test"))


def right(example: dict[str, Any]) -> str:
    return str(example["answers"][0])


def qa_model(store, name: str):
    if not store.models.exists(name):
        digest = "sha256:" + hashlib.sha256(name.encode()).hexdigest()
        store.models.add(name, "qa", "extractive", f"/models/{name}", digest, {"task": "qa", "kind": "extractive"})
    return store.models.get(name)


def make_qa_run(store, runs_dir: Path, model: str, answer: Callable[[dict[str, Any]], str],
                throughput: float = 900.0, memory: float = 0.4, robustness: float = 60.0, fairness: float = 80.0
                ) -> int:
    """A succeeded QA run of ``model`` answering ``answer(example)`` on every test set; its robustness sets (one per
    test set) and fairness sets keep ``robustness`` / ``fairness`` percent of the answers (a constant answerer keeps
    them all, as it would)."""
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec
    from dynadesk.orchestration.folder import RunFolder
    from dynadesk.orchestration.recompute import recompute
    from dynadesk.scoring.bootstrap import run_bootstrap
    from dynadesk.tasks import get_task

    ensure_qa_datasets(store)
    m = qa_model(store, model)
    ev = store.evaluations.create(m.id, "qa", RunSetup(worker=WorkerSettings(batch_size=32, seed=13, threads=2)),
                                  runner="docker", sandboxed=True, datasets=list(QA_SETS), status="running")
    store.evaluations.update(ev, RunChange(image_build=ImageBuild(IMAGE_EPOCH, "sha256:" + "ef" * 32)))
    folder = RunFolder(Path(runs_dir) / str(ev))
    for part in (folder.spec_dir, folder.data_dir, folder.out_dir):
        part.mkdir(parents=True, exist_ok=True)
    entries, lines = [], []
    for name in QA_SETS:
        examples = store.datasets.examples(name)
        preds = {e["id"]: answer(e) for e in examples}
        members = [(name, "test", None, None, examples, preds)]
        constant = len({preds[e["id"]] for e in examples}) == 1  # a constant answer never moves
        for kind, suite, target in (("robustness", "case", robustness), ("fairness", "gender", fairness)):
            derived = [{**e, "id": f"{e['id']}~{suite}", "question": e["question"].upper(),
                        "metadata": {"source_id": e["id"]}} for e in examples]
            kept = len(examples) if constant else round(target / 100.0 * len(examples))
            moved = {d["id"]: preds[e["id"]] if n < kept else f"{preds[e['id']]} May"
                     for n, (d, e) in enumerate(zip(derived, examples))}
            members.append((f"{name}~{suite}", "perturbation", kind, suite, derived, moved))
        for member, role, kind, suite, rows, answers in members:
            file = f"d{len(entries):03d}.jsonl"
            with open(folder.data_dir / file, "w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            sha = hashlib.sha256((folder.data_dir / file).read_bytes()).hexdigest()
            entries.append(DatasetSpec(name=member, file=file, sha256=sha, size=len(rows), role=role,
                                       derived_from=name if role == "perturbation" else None,
                                       kind=kind, suite=suite))
            lines += [json.dumps({"dataset": member, "id": r["id"], "prediction": {"answer": answers[r["id"]]}},
                                 sort_keys=True) for r in rows]
    Spec(task=get_task("qa").to_dict(), model={"name": m.name, "digest": m.digest, "manifest": m.manifest},
         datasets=entries, settings=Settings(batch_size=32, seed=13, threads=2)).write(folder.spec_file)
    folder.predictions_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows, _notes = recompute(folder.spec_file, folder.data_dir, folder.predictions_file)
    metrics = [MetricValue(r["dataset"], r["metric"], r["value"], r["unit"], True) for r in rows]
    metrics += [MetricValue("", "throughput", throughput, "examples/s", False),
                MetricValue("", "memory", memory, "GiB", False)]
    digest = "sha256:" + hashlib.sha256(folder.predictions_file.read_bytes()).hexdigest()
    store.evaluations.set_metrics(
        ev, metrics,
        RunChange(image_id="sha256:" + "ab" * 32, evaluator_version="sha256:" + "cd" * 32, run_dir=str(folder.root),
                  predictions_digest=digest,
                  environment={"cpu": "Test CPU", "cores": 2, "python": "3.11.2", "torch": "2.13.0", "gpu": None}),
        status="succeeded")
    boot = run_bootstrap(folder.spec_file, folder.data_dir, folder.predictions_file, digest)
    store.evaluations.update(ev, RunChange(profile={**(store.evaluations.get(ev).profile or {}), **boot}))
    return ev
