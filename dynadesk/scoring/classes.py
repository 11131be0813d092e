"""Which rows a board ranks together: hardware classes (measured figures compare only within one) and the noise
rule (a run whose timed figures were flagged noisy). Shared by the local board (:mod:`dynadesk.scoring.leaderboard`)
and the public board (:mod:`dynadesk.sync.rules.board_facts`); it reads no store, so the server can import it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dynadesk.errors import ValidationError

__all__ = ["ALL_CLASSES", "NOT_COMPARABLE", "choose_hardware_class", "noisy_in_environment", "noisy_left_off"]

ALL_CLASSES = "all"
NOT_COMPARABLE = ("runs of {n} hardware classes are ranked together: their measured metrics (throughput, latency, "
                  "memory) were taken on different machines and are not comparable here")


def noisy_in_environment(environment: Any) -> list[str]:
    """The one noise rule, for a run record's environment and a signed bundle's ``payload.environment`` alike
    (the public board marks and filters with it): the ``measurement`` summary's reasons, [] if quiet."""
    summary = environment.get("measurement") if isinstance(environment, dict) else None
    if not isinstance(summary, dict) or not summary.get("noisy"):
        return []
    return [str(x) for x in summary.get("noisy_measurements") or []] or ["flagged noisy"]


def noisy_left_off(noisy: Mapping[str, list[str]], how: str) -> dict[str, str]:
    """Row -> why it is not ranked, for rows left out because their measured figures were flagged noisy."""
    return {name: f"its measured figures were flagged noisy ({'; '.join(why)}); left out by {how} (re-measure it"
                  " on a quiet machine: dynadesk eval --remeasure RUN)" for name, why in noisy.items()}


def choose_hardware_class(classes: dict[str, int], wanted: str | None) -> str:
    """The class a board ranks: ``wanted`` (a class present, or :data:`ALL_CLASSES`), else by default the
    class with the most models (measured metrics compare only within one class)."""
    if wanted is None:
        return max(sorted(classes), key=lambda c: classes[c]) if classes else ALL_CLASSES
    if wanted != ALL_CLASSES and wanted not in classes:
        present = "; ".join(sorted(classes)) or "none"
        raise ValidationError(f"hardware class '{wanted}' has no runs on this board (classes present: {present}; "
                              f"or '{ALL_CLASSES}')")
    return wanted
