"""Audit attestations end to end from the CLI, against a real server on loopback.

A submitter evaluates a tiny model (local runner, real worker), signs and syncs the bundle. An
auditor re-runs it with ``dynadesk audit BUNDLE --rerun --attest`` and syncs: the board row says
"reproduced by 1". A second auditor, whose re-run (with another model folder) disagrees, makes it
"disputed". The server refuses attestations from non-auditor keys and about the auditor's own bundle.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner
from support.eval import LABELS, add_test_set, measured_metrics, run_request, setup_workspace
from support.sync import free_port, server_bin, start_server, stop_server
from support.tiny_models import make_tiny_classifier

from dynadesk.cli import cli
from dynadesk.sync.format.attestation import sign_attestation
from dynadesk.sync.format.keys import PRIVATE_NAME, generate_key, load_private_key
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.workspace import Workspace


def dd(home: Path, *args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False)
    return res.exit_code, res.output


def admin(db: Path, *args: str) -> str:
    out = subprocess.run([server_bin(), *args, "--db", str(db)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def auditor(root: Path, name: str, db: Path) -> Path:
    """An auditor's workspace: its own key (registered with the auditor role) and the same public test sets."""
    ws = Workspace(root / name).ensure()
    store = ws.open_store()
    generate_key(ws.keys_dir)
    for i, n in enumerate((16, 8)):
        add_test_set(store, f"set{i}-test", n, seed=i)
    store.close()
    pub = root / f"{name}.pub"
    assert dd(ws.home, "keys", "export", "-o", str(pub))[0] == 0
    assert "auditor" in admin(db, "keys", "add", str(pub), "--name", name, "--role", "auditor")
    return ws.home


def representative_run(evaluate_once, runs: int = 3):
    """Of ``runs`` runs, the one whose measured figures stray least from their medians over the runs.

    An honest claim is what this test audits. A tiny model's figures (~1 ms latencies) move together by 30% from one
    run to the next on this machine, quiet or not (five runs in a row, load 1.4: every latency of one run 30% above
    the run before), and on a shared CI host one run timed in such a spell claimed a p50 60% above what the audit
    then measured twice (1.76 against 1.10 and 1.12 ms): the audit rightly calls that not reproduced. Asking that two
    runs in a row agree within 25% failed in both phases of a clean-clone run; the run nearest the medians is the
    claim a submitter who ran it three times would fairly make. ``runs=1``: the first run, for tests that judge no
    measured figure."""
    made = []
    for _ in range(runs):
        run = evaluate_once()
        assert run.status == "succeeded", run.error
        made.append(run)
    if runs == 1:
        return made[0]
    figures = [measured_metrics(run) for run in made]
    medians = {k: statistics.median(f[k] for f in figures) for k in figures[0]}

    def stray(f: dict) -> float:
        return max(abs(math.log(f[k] / m)) for k, m in medians.items() if m > 0 and f[k] > 0)

    return made[min(range(runs), key=lambda i: stray(figures[i]))]


@pytest.fixture(scope="module")
def world(tmp_path_factory, request):
    from dynadesk.evaluator.threads import wait_until_quiet
    from dynadesk.orchestration.evaluate import evaluate

    root = tmp_path_factory.mktemp("attest")
    db = root / "board.db"
    sub = Workspace(root / "submitter").ensure()
    store = sub.open_store()
    generate_key(sub.keys_dir)
    setup_workspace(store, root / "submitter-data", sizes=(16, 8))
    # half-second windows: the audit re-measures throughput, and 0.1 s windows of a tiny model swing past its
    # tolerance on a loaded CI machine; and a quiet machine, as the audit below will likely have: the serial
    # tests before this one load it on purpose (two clean-clone runs disputed a claim timed as they wound down)
    wait_until_quiet(60.0, 3.0)
    # only the flow's audit judges the measured claims; the other tests (the parallel phase's) take the first run
    audited = any(item.name == "test_the_attestation_flow_from_the_cli" for item in request.session.items)
    request_ = run_request("tiny", batch_size=8, latency_samples=8, warmup=1, min_seconds=0.5)
    run = representative_run(lambda: evaluate(store, sub, request_), runs=3 if audited else 1)
    model_folder = Path(store.models.get("tiny").path)
    store.close()
    pub = root / "submitter.pub"
    assert dd(sub.home, "keys", "export", "-o", str(pub))[0] == 0
    admin(db, "keys", "add", str(pub), "--name", "Submitter Lab")
    admin(db, "datasets", "import-workspace", "--home", str(sub.home))
    port = free_port()
    proc = start_server(db, port)
    url = f"http://127.0.0.1:{port}"
    try:
        code, out = dd(sub.home, "bundle", "create", str(run.id), "--json")
        assert code == 0, out
        bundle_id = json.loads(out)["id"]
        bundle_file = root / "bundle.json"
        bundle_file.write_bytes((sub.bundles_dir / f"{bundle_id}.json").read_bytes())
        code, out = dd(sub.home, "sync", "--server", url, "--json")
        assert code == 0 and json.loads(out)["sent"] == [bundle_id], out
        yield {"root": root, "db": db, "url": url, "bundle_id": bundle_id, "bundle_file": bundle_file,
               "model": model_folder, "submitter": sub.home}
    finally:
        stop_server(proc)


def failing_checks(out: str) -> str:
    """The checks an audit's ``--json`` answer failed on (the whole answer runs to hundreds of lines)."""
    try:
        checks = json.loads(out)["checks"]
    except (ValueError, KeyError, TypeError):
        return out
    return json.dumps([c for c in checks if c.get("fails") or c.get("unreproduced")], indent=1)


def row(world) -> dict:
    answer = requests.get(f"{world['url']}/api/leaderboard/sentiment", timeout=10, params={"audit": "all"}).json()
    # the tiny model may answer one label for every example: then its row is a baseline (issue 44), listed apart
    (r,) = [r for r in answer["rows"] + answer["baselines"] if r["bundle_id"] == world["bundle_id"]]
    return r


def test_the_attestation_flow_from_the_cli(world):
    assert row(world)["audit"] == {"state": "not audited", "attestations": []}
    first = auditor(world["root"], "Auditor One", world["db"])
    code, out = dd(first, "audit", str(world["bundle_file"]), "--rerun", "--runner", "local", "--model",
                   str(world["model"]), "--attest", "--json")
    assert code == 0, failing_checks(out)  # 4 (a measured claim outside tolerance) would sign "disputed"
    att = json.loads(out)["attestation"]
    assert att["verdict"] == "reproduced" and att["bundle_id"] == world["bundle_id"]
    code, out = dd(first, "sync", "--server", world["url"], "--json")
    assert code == 0 and json.loads(out)["attestations_sent"] == [att["id"]], out
    r = row(world)
    assert r["audit"]["state"] == "reproduced by 1"
    (shown,) = r["audit"]["attestations"]
    assert shown["auditor"] == "Auditor One" and shown["verdict"] == "reproduced" and shown["runner"] == "local"
    assert shown["fields"]["predictions.merkle_root"] == "identical" and shown["hardware_class"]
    served = requests.get(world["url"] + shown["url"], timeout=10)
    assert served.status_code == 200 and json.loads(served.content)["payload"]["bundle_id"] == world["bundle_id"]
    log = requests.get(f"{world['url']}/api/log", timeout=10).json()["entries"]
    assert [e["kind"] for e in log][-1] == "attestation" and log[-1]["bundle_id"] == att["id"]
    code, out = dd(first, "sync", "check-log", "--server", world["url"])  # the chain still verifies
    assert code == 0, out

    # a second auditor re-runs with another model folder: the model digest and predictions differ
    second = auditor(world["root"], "Auditor Two", world["db"])
    other_model = make_tiny_classifier(world["root"] / "other-model", LABELS, task="sentiment", seed=1)
    code, out = dd(second, "audit", str(world["bundle_file"]), "--rerun", "--runner", "local", "--model",
                   str(other_model), "--attest", "--json")
    assert code == 1, out  # the audit failed ...
    assert json.loads(out)["attestation"]["verdict"] == "disputed"  # ... and that is what is attested
    code, out = dd(second, "sync", "--server", world["url"])
    assert code == 0, out
    r = row(world)
    assert r["audit"]["state"] == "disputed"
    assert [a["verdict"] for a in r["audit"]["attestations"]] == ["reproduced", "disputed"]


def test_attest_needs_a_rerun(world):
    res = CliRunner().invoke(cli, ["--home", str(world["submitter"]), "audit", str(world["bundle_file"]), "--attest"])
    assert res.exit_code == 2 and "--attest needs --rerun" in res.output


def test_an_auditor_cannot_attest_their_own_bundle(world):
    res = CliRunner().invoke(cli, ["--home", str(world["submitter"]), "audit", str(world["bundle_file"]), "--rerun",
                                   "--runner", "local", "--model", str(world["model"]), "--attest"])
    assert res.exit_code == 1 and "cannot attest their own bundle" in (res.output + str(res.exception))


def _attestation(home: Path, bundle_id: str) -> bytes:
    ws = Workspace(home)
    key = load_private_key(Path(ws.keys_dir) / PRIVATE_NAME)
    from dynadesk.sync.format.keys import key_info

    payload = {"bundle_id": bundle_id, "created_at": utc_now_text(), "verdict": "reproduced",
               "auditor": {"key_fingerprint": key_info(ws.keys_dir).fingerprint},
               "fields": {"signature": "identical"}, "hardware_class": "x", "evaluator_image": None, "runner": "local"}
    return sign_attestation(payload, key).raw


def test_the_server_refuses_attestations_from_submitter_keys_and_about_ones_own_bundle(world):
    post = lambda raw: requests.post(f"{world['url']}/api/attestations", data=raw, timeout=10)  # noqa: E731
    before = row(world)["audit"]
    r = post(_attestation(world["submitter"], world["bundle_id"]))
    assert r.status_code == 403 and r.json()["error"] == "not_auditor", r.text
    home = auditor(world["root"], "Auditor Self", world["db"])
    r = post(_attestation(home, "0" * 64))
    assert r.status_code == 404 and r.json()["error"] == "not_found", r.text
    # the auditor's key also signs a bundle of its own (any key may submit), then attests it
    from dynadesk.sync.format.envelope import parse_bundle, sign_payload
    from dynadesk.sync.format.keys import key_info

    payload = parse_bundle(world["bundle_file"].read_bytes()).payload.to_json()
    payload["submitter"] = {"key_fingerprint": key_info(Workspace(home).keys_dir).fingerprint}
    own = sign_payload(payload, load_private_key(Path(Workspace(home).keys_dir) / PRIVATE_NAME))
    assert requests.post(f"{world['url']}/api/bundles", data=own.raw, timeout=10).status_code == 201
    r = post(_attestation(home, own.id))
    assert r.status_code == 403 and r.json()["error"] == "own_bundle", r.text
    again = _attestation(home, world["bundle_id"])
    assert post(again).status_code == 201
    r = post(again)
    assert r.status_code == 409 and r.json()["error"] == "replay", r.text
    assert len(row(world)["audit"]["attestations"]) == len(before["attestations"]) + 1  # only the valid one
