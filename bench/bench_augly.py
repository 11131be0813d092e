"""Each ``dynaboard-augly`` family against real AugLy: the same model, the same set, family by family.

    python bench/bench_augly.py [--quick]

Model: a bag-of-words sentiment model trained here on the bundled data's training splits (the demo recipe,
seeded). Set: the four bundled test sets (4,741 statements; ``--quick``: 400 of them). For each family, every
statement is perturbed by DynaDesk's reimplementation (``dynadesk.scoring.augly_suite``) and by AugLy itself
with Dynabench's settings and pre/post-processing (``augly_perturbation.py``: the settings are listed in that
module's docstring), three seeds each; a copy is kept when its text changed, as both keep it. The figure per
family is Dynaboard's robustness: the percentage of kept copies whose prediction equals the prediction on the
original. Goal: every family within 3 points of AugLy's.

AugLy is in the benchmark's environment only (never a dependency of DynaDesk): ``pip install augly==1.0.0
nlpaug==1.1.3`` (AugLy's text extra; AugLy imports python-magic, which needs the system's libmagic1).
Without it one row says so (0 families compared) and why.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/scratch.py, also when loaded by path
from scratch import scratch_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]

from dynadesk.scoring.augly_suite import AUGLY_OPS, postprocess, preprocess  # noqa: E402

GOAL = 3.0
SEEDS = (0, 1, 2)
TEST_SETS = [f"vader-{s}-test" for s in ("movies", "tweets", "amazon", "nyt")]
INSTALL = "pip install augly==1.0.0 nlpaug==1.1.3 (the bench environment only)"


def augly_families() -> dict[str, Callable[[str], str]] | str:
    """Dynabench's twelve AugLy transforms with its settings, or why AugLy cannot be used here."""
    try:
        import augly.text as txtaugs
    except Exception as exc:  # noqa: BLE001 - any import failure (missing package, libmagic) is reported
        return f"AugLy not importable ({type(exc).__name__}: {exc}); {INSTALL}"
    fams: dict[str, Callable[[str], Any]] = {
        "augly_case": lambda t: txtaugs.change_case(t, case="upper", cadence=3.0),
        "augly_contractions": lambda t: txtaugs.contractions(t, aug_p=1.0),
        "augly_punctuation": lambda t: txtaugs.insert_punctuation_chars(t, granularity="all", cadence=10.0,
                                                                         vary_chars=True),
        "augly_whitespace": lambda t: txtaugs.insert_whitespace_chars(t, granularity="all", cadence=10.0,
                                                                       vary_chars=True),
        "augly_zero_width": lambda t: txtaugs.insert_zero_width_chars(t, granularity="all", cadence=10.0,
                                                                       vary_chars=True),
        "augly_fun_fonts": lambda t: txtaugs.replace_fun_fonts(t, vary_fonts=True),
        "augly_similar_unicode": lambda t: txtaugs.replace_similar_unicode_chars(t),
        "augly_upside_down": lambda t: txtaugs.replace_upside_down(t, granularity="word"),
        "augly_char_typos": lambda t: txtaugs.simulate_typos(t, typo_type="charmix"),
        "augly_keyboard_typos": lambda t: txtaugs.simulate_typos(t, typo_type="keyboard"),
        "augly_misspellings": lambda t: txtaugs.simulate_typos(t, typo_type="misspelling"),
        "augly_split_words": lambda t: txtaugs.split_words(t),
    }

    def wrapped(fn: Callable[[str], Any]) -> Callable[[str], str]:
        def run(text: str) -> str:
            out = fn(preprocess(text))
            return postprocess(out[0] if isinstance(out, list) else out)
        return run
    return {name: wrapped(fn) for name, fn in fams.items()}


def _setup(quick: bool) -> tuple[Any, list[str]]:
    """(the trained adapter, the test statements)."""
    from dynadesk.evaluator.adapters import load_adapter
    from dynadesk.models.bow import BowTraining, train_bag_of_words
    from dynadesk.recipes import fetch_default_data
    from dynadesk.workspace import Workspace

    ws = Workspace(scratch_dir("bench-augly-"))
    store = ws.open_store()
    cache = REPO / ".cache" / "downloads"
    cache.mkdir(parents=True, exist_ok=True)
    fetch_default_data(store, cache)
    train = [ex for name in TEST_SETS for ex in store.datasets.examples(name.replace("-test", "-train"))]
    folder = ws.models_dir / "bow"
    train_bag_of_words(folder, "sentiment", ["negative", "neutral", "positive"], ["statement"], train,
                       BowTraining(epochs=4))
    texts = [ex["statement"] for name in TEST_SETS for ex in store.datasets.examples(name)]
    store.close()
    if quick:  # the smoke run of the test suite (DYNADESK_BENCH_SMOKE): smaller again
        texts = random.Random(0).sample(texts, 100 if os.environ.get("DYNADESK_BENCH_SMOKE") == "1" else 400)
    return load_adapter(folder), texts


def _labels(adapter: Any, texts: list[str]) -> list[str]:
    out: list[str] = []
    for i in range(0, len(texts), 256):
        out += [p["label"] for p in adapter.predict([{"statement": t} for t in texts[i:i + 256]])]
    return out


def consistency(adapter: Any, texts: list[str], originals: list[str], perturb: Callable[[str, int, int], str],
                seeds: tuple[int, ...]) -> tuple[float, int]:
    """(% of changed copies predicted as their original, how many copies) over ``seeds``."""
    kept_text, kept_ref = [], []
    for seed in seeds:
        for i, text in enumerate(texts):
            new = perturb(text, seed, i)
            if new != text and new.strip():
                kept_text.append(new)
                kept_ref.append(originals[i])
    if not kept_text:
        return float("nan"), 0
    preds = _labels(adapter, kept_text)
    return 100.0 * sum(p == r for p, r in zip(preds, kept_ref)) / len(preds), len(preds)


def run(quick: bool = False, families: list[str] | None = None) -> list[dict[str, Any]]:
    fams = augly_families()
    if isinstance(fams, str):
        return [{"measure": "dynaboard-augly families compared with real AugLy", "value": 0,
                 "unit": "families compared", "goal": f"each within {GOAL:g} points", "baseline": fams,
                 "ratio": None, "ok": None}]
    import numpy as np

    adapter, texts = _setup(quick)
    originals = _labels(adapter, texts)
    seeds = SEEDS[:1] if quick else SEEDS
    rows = []
    for name, op in AUGLY_OPS.items():
        if families and name not in families:
            continue
        ours, n_ours = consistency(adapter, texts, originals,
                                   lambda t, s, i, op=op: op(t, random.Random(f"bench:{s}:{i}"))[0], seeds)

        def real(t: str, s: int, i: int, fn: Callable[[str], str] = fams[name]) -> str:
            random.seed(f"augly:{s}:{i}")
            np.random.seed((s * 1_000_003 + i) % (2 ** 32))
            return fn(t)
        theirs, n_theirs = consistency(adapter, texts, originals, real, seeds)
        gap = abs(ours - theirs)
        rows.append({"measure": f"{name}: robustness, DynaDesk {ours:.1f} ({n_ours} copies) vs AugLy",
                     "value": round(gap, 2), "unit": "points", "goal": f"<= {GOAL:g}",
                     "baseline": f"AugLy {theirs:.1f} ({n_theirs} copies)", "ratio": None, "ok": gap <= GOAL})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="400 statements, one seed")
    ap.add_argument("--family", action="append", default=[], help="only this family (repeatable)")
    args = ap.parse_args()
    for row in run(quick=args.quick, families=args.family):
        print(f"{row['measure']:<78} {row['value']!s:>6} {row['unit']}  goal {row['goal']}  {row['baseline']}"
              f"  {'ok' if row['ok'] else 'MISS' if row['ok'] is False else '-'}")


if __name__ == "__main__":
    main()
