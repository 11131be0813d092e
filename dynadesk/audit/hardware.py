"""Hardware class and measurement quality of a run, for people and for boards.

The class itself is computed by the evaluator (``environment.json`` carries it, signed
into every bundle); :func:`hardware_class_of` recomputes it from any environment, older
ones included, so boards can group runs by it.
"""

from __future__ import annotations

from typing import Any

from dynadesk.evaluator.environment import hardware_class_label, hardware_class_of

__all__ = ["hardware_class_label", "hardware_class_of", "measurement_lines", "memory_definition"]


def memory_definition(environment: dict[str, Any]) -> str:
    """How a run's ``memory`` was measured (environments from before the field: whole peak RSS)."""
    summary = environment.get("measurement")
    found = summary.get("memory_definition") if isinstance(summary, dict) else None
    return found if isinstance(found, str) else "peak-rss/0"


def measurement_lines(environment: dict[str, Any]) -> list[str]:
    """What ``runs show`` and ``bundle show`` print about where and how cleanly a run was measured."""
    if not environment:
        return []
    lines = [f"hardware class: {hardware_class_label(environment)}"]
    summary = environment.get("measurement")
    if not isinstance(summary, dict):
        return lines + ["measurement: not recorded (made before noise detection)"]
    if summary.get("noisy"):
        lines.append("measurement: NOISY - " + " | ".join(str(x) for x in summary.get("noisy_measurements", [])))
    else:
        lines.append("measurement: clean (no competing CPU load, throttling or steal; trial spread within bounds)")
    lines.append(f"memory: {memory_definition(environment)} (docs/measurement.md; audits compare only within one)")
    thin = summary.get("latency_too_few_samples") or []
    if thin:
        lines.append(f"latency {', '.join(thin)}: too few samples above the percentile to rest on")
    return lines


def weighed_lines(profile: dict[str, Any]) -> list[str]:
    """One line per test set whose batched figure came from strata trials weighed by their lengths (a slow model's
    run on several sets, :func:`dynadesk.orchestration.loadgen_fresh.length_factor`): the figure is then the trials'
    pace on the set's mix of lengths, not their bare examples per second, and a reader comparing it with the
    trials' own counts needs to know. Sets swept whole (factor 1) print nothing."""
    measured = profile.get("measurement") if isinstance(profile, dict) else None
    sets = measured.get("datasets") if isinstance(measured, dict) else None
    lines = []
    for name, modes in (sets if isinstance(sets, dict) else {}).items():
        batched = modes.get("batched") if isinstance(modes, dict) else None
        trials = batched.get("trials") if isinstance(batched, dict) else None
        factors = [t["length_factor"] for t in trials or [] if isinstance(t, dict)
                   and isinstance(t.get("length_factor"), (int, float)) and t["length_factor"] != 1.0]
        if factors:
            lines.append(f"batched {name}: {len(trials or [])} strata trials, weighed by their batches' padded tokens "
                         f"against the set's (factors {min(factors):.2f}-{max(factors):.2f}; docs/measurement.md)")
    return lines
