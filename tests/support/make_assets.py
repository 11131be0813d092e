"""Writes the malformed bundles and packs of tests/assets/malformed/ (from tests/: ``python -m support.make_assets``).

The files are committed: the tests read them, they do not build them. Regenerate only when a file's case no longer
fits the format (say so in the commit); each file is a valid document, made by the product's own code, with one
thing broken, so its test names one error. Cases that need a fresh signature over a changed field stay in the
tests that sign them (tests/sync/test_sync_bundle.py).
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

from support import ASSETS

MALFORMED = ASSETS / "malformed"


def _flip_hex(s: str) -> str:
    return s[:-1] + ("0" if s[-1] != "0" else "1")


def write_bundles(folder: Path, work: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from dynadesk.canonical import canonical_bytes
    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.format.keys import public_raw
    from support.sync import make_run, workspace_with_key

    ws, store = workspace_with_key(work / "ws")
    bundle = create_bundle(ws, store, make_run(store, ws.runs_dir, datasets=("vader-movies-test",)))
    store.close()
    doc = json.loads(bundle.raw)

    def resealed(mutate) -> bytes:  # the old signature over an edited payload: what a hand edit gives
        d = copy.deepcopy(doc)
        mutate(d["payload"])
        return canonical_bytes(d)

    other_key = public_raw(Ed25519PrivateKey.generate()).hex()
    files = {
        "bundle_valid.json": bundle.raw,
        "bundle_truncated.json": bundle.raw[: len(bundle.raw) // 2],
        "bundle_not_canonical.json": json.dumps(doc, indent=1).encode(),
        "bundle_python_json.json": json.dumps(doc, sort_keys=True).encode(),  # sorted keys, but Python's spacing
        "bundle_version_3.json": canonical_bytes(dict(doc, version=3)),
        "bundle_format_other.json": canonical_bytes(dict(doc, format="other")),
        "bundle_algorithm_rsa.json": canonical_bytes(dict(doc, signature=dict(doc["signature"], algorithm="rsa"))),
        "bundle_signature_flipped.json": canonical_bytes(
            dict(doc, signature=dict(doc["signature"], value=_flip_hex(doc["signature"]["value"])))),
        "bundle_key_swapped.json": canonical_bytes(dict(doc, signature=dict(doc["signature"], public_key=other_key))),
        "bundle_payload_no_task.json": resealed(lambda p: p.pop("task")),
        "bundle_payload_unknown_field.json": resealed(lambda p: p.update(extra=1)),
        "bundle_payload_metric_text.json": resealed(lambda p: p["metrics"][0].update(value="high")),
    }
    for name, raw in files.items():
        (folder / name).write_bytes(raw)


def write_packs(folder: Path, work: Path) -> None:
    from dynadesk import annotation as ann
    from dynadesk.workspace import Workspace

    store = Workspace(work / "packer").open_store()
    ann.pack(store, work / "good.pack")  # an empty pack: the header, the signature and the origin are enough
    store.close()
    text = (work / "good.pack").read_text(encoding="utf-8")
    body = json.loads(text)
    origin = body["origin"]
    v1 = {k: v for k, v in body.items() if k not in ("signer", "signature")}
    files = {
        "pack_truncated.pack": text[: len(text) // 2].encode(),
        "pack_other_format.pack": json.dumps({"format": "zip"}).encode(),
        "pack_version_1_unsigned.pack": json.dumps(dict(v1, version=1)).encode(),
        "pack_version_9.pack": json.dumps(dict(body, version=9)).encode(),
        "pack_not_utf8.pack": text.replace(origin, origin + "\udcff").encode("utf-8", "surrogateescape"),
        "pack_edited.pack": text.replace(origin, origin + "0").encode(),
        "pack_unsigned.pack": json.dumps(v1).encode(),
    }
    for name, raw in files.items():
        (folder / name).write_bytes(raw)


def main() -> None:
    MALFORMED.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        write_bundles(MALFORMED, Path(tmp))
        write_packs(MALFORMED, Path(tmp))
    print(f"wrote {len(list(MALFORMED.iterdir()))} files in {MALFORMED}")


if __name__ == "__main__":
    main()
