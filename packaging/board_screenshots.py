"""Screenshots of the public board for docs/: a real server holding the demo's bundles plus a second submitter's.

    .venv/bin/python packaging/board_screenshots.py [--out docs/screenshots] [--work DIR]

Two workspaces in a scratch folder: the demo submitter (the bundled VADER data, the demo zoo's
bag-of-words and majority baselines, as ``dynadesk demo`` builds them) and a second lab (its own
bag-of-words recipe, same model name, so the board tells the two apart by submitter). Each model is
evaluated with the local runner on the demo's four test sets and their perturbation suites, signed,
and synced to a ``dynadesk-server`` on loopback; headless chromium (Playwright, Debian
``/usr/bin/chromium``) then photographs the board (whole, at 1366x768 as first painted, with a row's details
open, and at phone width) and a model page. Takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("DYNADESK_CHROMIUM", "/usr/bin/chromium")
SDIST_CACHE = REPO / ".cache" / "downloads"
# the board has fitted its columns to the width it has now (sync/static/fit.js records the width it fitted)
FITTED = ("() => { const p = document.querySelector('#task-sentiment');"
          " return p.dataset.fitWidth === String(p.querySelector('.table-wrap').clientWidth); }")


def say(text: str) -> None:
    print(f"[board_screenshots] {text}", flush=True)


def lab(home: Path, models: list[str], config: Any) -> tuple[Any, Any, list[str]]:
    """A workspace with a key, the demo data and suites, the given zoo models evaluated and bundled."""
    from dynadesk.demo import TEST_SETS
    from dynadesk.models.zoo import build_demo_zoo
    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.orchestration.request import RunRequest
    from dynadesk.recipes import fetch_default_data
    from dynadesk.scoring.perturb import generate_suites
    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.format.keys import generate_key
    from dynadesk.workspace import Workspace

    ws = Workspace(home).ensure()
    store = ws.open_store()
    generate_key(ws.keys_dir)
    fetch_default_data(store, SDIST_CACHE, progress=say)
    build_demo_zoo(store, ws, config=config, only=models, progress=say)
    for name in TEST_SETS:
        generate_suites(store, name, seed=0)
    bundles = []
    for model in models:
        say(f"{home.name}: evaluating {model} (local runner)")
        record = evaluate(store, ws, RunRequest(model=model, datasets=tuple(TEST_SETS), runner="local"))
        if record.status != "succeeded":
            raise SystemExit(f"evaluation of {model} ended {record.status}: {record.error}")
        bundles.append(create_bundle(ws, store, record.id).id)
    return ws, store, bundles


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(db_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    server = Path(sys.executable).with_name("dynadesk-server")
    proc = subprocess.Popen([str(server), "serve", "--db", str(db_path), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/api/tasks", timeout=1).close()
            return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("dynadesk-server did not start within 30 s")


def photograph(url: str, model_bundle: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1900, "height": 1050})
        page.goto(url + "/?task=sentiment&expand=perf")
        page.wait_for_selector("#task-sentiment[data-loaded] #board-sentiment tbody tr")
        wide = page.evaluate("() => document.querySelector('#board-sentiment').scrollWidth + 80")
        page.set_viewport_size({"width": max(1600, int(wide)), "height": 1050})  # every column in the picture
        shots.append(out / "board.png")
        page.screenshot(path=str(shots[-1]), full_page=True)
        page.set_viewport_size({"width": 1366, "height": 768})  # what a reader's laptop shows on first paint
        page.goto(url + "/?task=sentiment")
        page.wait_for_selector("#task-sentiment[data-loaded] #board-sentiment tbody tr")
        shots.append(out / "board_1366.png")
        page.screenshot(path=str(shots[-1]))
        page.locator("#board-sentiment tbody tr[data-model] button.row-toggle").first.click()
        shots.append(out / "board_1366_details.png")
        page.screenshot(path=str(shots[-1]))
        page.set_viewport_size({"width": 375, "height": 740})
        page.wait_for_function(FITTED)  # the page measures its columns again for the new width
        shots.append(out / "board_phone.png")
        page.screenshot(path=str(shots[-1]))
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.goto(f"{url}/models/{model_bundle}")
        page.wait_for_selector("#metrics")
        shots.append(out / "board_model.png")
        page.screenshot(path=str(shots[-1]), full_page=True)
        browser.close()
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--work", type=Path, default=None,
                        help="scratch folder, kept (default: a temporary one, removed); one holding board.db from an"
                             " earlier run is photographed again without rebuilding")
    args = parser.parse_args()
    from dynadesk.models.zoo import BOW
    from dynadesk.sync.server.db import ServerDB

    work = args.work or Path(tempfile.mkdtemp(prefix="dynadesk-board-"))
    work.mkdir(parents=True, exist_ok=True)
    db_path = work / "board.db"
    try:
        if not db_path.exists():  # a --work folder from an earlier run is photographed again as it is
            build_server_state(work, db_path)
        db = ServerDB(db_path)
        model_bundle = next(r["bundle_id"] for r in db.board_rows("sentiment")
                            if r["submitter"] == "demo" and r["model"] == BOW)
        db.close()
        proc, url = serve(db_path)
        try:
            shots = photograph(url, model_bundle, args.out)
        finally:
            proc.terminate()
            proc.wait(10)
        for shot in shots:
            say(f"wrote {shot.relative_to(REPO) if shot.is_relative_to(REPO) else shot}")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def build_server_state(work: Path, db_path: Path) -> None:
    """The demo submitter's and a second lab's bundles, accepted by a server database at ``db_path``."""
    from dynadesk.models.zoo import BOW, MAJORITY, ZooConfig
    from dynadesk.sync.client.upload import sync_queue
    from dynadesk.sync.format.keys import key_info
    from dynadesk.sync.server.admin import import_workspace_datasets
    from dynadesk.sync.server.db import ServerDB

    demo_ws, demo_store, _ = lab(work / "demo", [MAJORITY, BOW], ZooConfig())
    other_ws, other_store, _ = lab(work / "second-lab", [BOW],
                                   ZooConfig(bow_dim=32, bow_epochs=3, seed=7, bow_train_per_source=400))
    db = ServerDB(db_path)
    for name, ws in (("demo", demo_ws), ("second lab", other_ws)):
        info = key_info(ws.keys_dir)
        db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), name)
    import_workspace_datasets(db, demo_ws.home)
    db.close()
    proc, url = serve(db_path)
    try:
        for store in (demo_store, other_store):
            report = sync_queue(store, url)
            if not report.ok:
                raise SystemExit(f"sync failed: {report}")
            store.close()
    finally:
        proc.terminate()
        proc.wait(10)

if __name__ == "__main__":
    main()
