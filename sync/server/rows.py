"""Board rows as the server shows them: identity, labels, audit state and dataset versions.

A row belongs to a (submitter key, model) pair. The scoring board keys models by a row id
that no upload can choose or collide with (``<model>@<key fingerprint>``); the display label
(model name, plus the submitter where names are shared) is only a label, put back on the
answer afterwards, so no submitter can remove, replace or hide another's row by picking a name.
"""

from __future__ import annotations

from typing import Any

from dynadesk.sync.server.names import look
from dynadesk.sync.server.values import MetricRule

NOT_AUDITED = "not audited"
DISPUTED = "disputed"


def row_id(model: str, key_fingerprint: str) -> str:
    return f"{model}@{key_fingerprint}"


def identified(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows keyed for scoring by their row id (``model``), with the model's own name in ``model_name``."""
    return [{**r, "model": row_id(r["model"], r["key_fingerprint"]), "model_name": r["model"]} for r in rows]


def labels(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Row id -> display label: the model name, qualified by submitter (and key) wherever another row's name looks
    the same (the same name, or a look-alike by :func:`~dynadesk.sync.server.names.look`: case, script, "rn"/"m")."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[look(r["model_name"])] = counts.get(look(r["model_name"]), 0) + 1
    out = {}
    for r in rows:
        name = r["model_name"]
        out[r["model"]] = (name if counts[look(name)] == 1
                           else f"{name} ({r['submitter']}, {r['key_fingerprint'][7:15]})")
    return out


def audit_state(attestations: list[dict[str, Any]]) -> str:
    """"not audited", "reproduced by N" (N distinct auditors) or "disputed" (any auditor disagreed)."""
    if not attestations:
        return NOT_AUDITED
    if any(a["verdict"] == "disputed" for a in attestations):
        return DISPUTED
    return f"reproduced by {len({a['auditor_fingerprint'] for a in attestations})}"


def dataset_versions(digests: dict[str, str], versions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """For each dataset a row was scored on: the version of that digest and whether it is still current."""
    latest: dict[str, int] = {}
    by_digest: dict[tuple[str, str], int] = {}
    for v in versions:
        latest[v["name"]] = max(latest.get(v["name"], 0), v["version"])
        by_digest[(v["name"], v["digest"])] = v["version"]
    out = {}
    for name, digest in digests.items():
        version = by_digest.get((name, digest))
        out[name] = {"digest": digest, "version": version, "current": version is not None
                     and version == latest.get(name)}
    return out


def present(answer: dict[str, Any], rows: dict[str, dict[str, Any]], shown: dict[str, str],
            rules: dict[str, MetricRule], versions: list[dict[str, Any]]) -> dict[str, Any]:
    """Put identity, labels, registry units, audit state and dataset versions on a scored board answer."""
    for out in answer["rows"]:
        r = rows[out["model"]]
        versions_of = dataset_versions(r.get("datasets") or {}, versions)
        att = r.get("attestations") or []
        out.update({"row_id": out["model"], "model": r["model_name"], "label": shown[out["model"]],
                    "look_alike": shown[out["model"]] != r["model_name"],
                    "audit": {"state": audit_state(att), "attestations": att},
                    "dataset_versions": versions_of,
                    "stale_datasets": sorted(n for n, v in versions_of.items() if not v["current"])})
    for name, spec in answer["metrics"].items():
        if name in rules:
            spec["unit"] = rules[name].unit
    if isinstance(answer.get("left_off"), dict):
        answer["left_off"] = {shown.get(k, k): why for k, why in answer["left_off"].items()}
    notes = answer.get("notes") or []
    for rid, label in shown.items():
        notes = [n.replace(rid, label) if rid in n else n for n in notes]
    answer["notes"] = notes
    return answer
