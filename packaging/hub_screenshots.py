"""Screenshots of the LAN hub for docs/ (``make screenshots``): a phone-sized annotator's page and the lead's view.

    .venv/bin/python packaging/hub_screenshots.py [--out docs/screenshots]

A scratch workspace with a small bag-of-words sentiment model (trained on the templated data of
``packaging/screenshots.py``), a sentiment round with a few examples and votes, then a real
``dynadesk hub serve`` on loopback photographed by headless Chromium: ``hub_phone_create.png`` and
``hub_phone_validate.png`` at 390x844 (an annotator, keys and label choices visible, nothing preselected),
``hub_phone_guidelines.png`` (what a first sign-in shows) and ``hub_lead.png`` (the lead's table after deciding
a disputed example, two rows open).
Takes under a minute on 2 cores.
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "packaging"))
PHONE = {"width": 390, "height": 844}
CHROMIUM = os.environ.get("DYNADESK_CHROMIUM", "/usr/bin/chromium")


def say(text: str) -> None:
    print(f"[hub_screenshots] {text}", flush=True)


def build(home: Path) -> None:
    """The round the pictures show: a BoW target, two annotators' examples, a few votes (one disputed)."""
    from screenshots import LABELS, demo_examples

    from dynadesk.annotation import ExampleDetails, add_annotator, new_round, submit_example, validate
    from dynadesk.models import register_model
    from dynadesk.models.bow import BowTraining, train_bag_of_words
    from dynadesk.workspace import open_workspace

    ws, store = open_workspace(home)
    try:
        train_bag_of_words(ws.models_dir / "bow", "sentiment", LABELS, ["statement"], demo_examples(150, 1),
                           BowTraining(dim=16, epochs=6))
        register_model(store, ws.models_dir / "bow", "sentiment", name="bow", replace=True)
        for who, role in (("lead", "owner"), ("bob", "annotator"), ("carol", "annotator"), ("dan", "annotator")):
            add_annotator(store, who, role)
        new_round(store, "sentiment", ["bow"], created_by="lead")
        texts = [("bob", "The plot was not bad at all.", "positive"), ("carol", "Hardly a wonderful film.", "negative"),
                 ("bob", "The film was released in May.", "neutral"), ("carol", "I loved how dull it was!", "positive"),
                 ("bob", "Great, another two hours I will never get back.", "negative")]
        made = [submit_example(store, "sentiment", who, {"statement": t}, label,
                               details=ExampleDetails(time_ms=20000))
                for who, t, label in texts]
        validate(store, made[0].uid, "carol", "correct")
        validate(store, made[0].uid, "dan", "flagged", reason="a reader could call it neutral")
        validate(store, made[1].uid, "bob", "correct")
    finally:
        store.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dynadesk(home: Path, *args: str) -> str:
    exe = str(Path(sys.executable).with_name("dynadesk"))
    return subprocess.run([exe, "--home", str(home), *args], check=True, capture_output=True, text=True).stdout


def serve(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    exe = str(Path(sys.executable).with_name("dynadesk"))
    proc = subprocess.Popen([exe, "--home", str(home), "hub", "serve", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/", timeout=1).close()
            return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("dynadesk hub serve did not start within 60 s")


def sign_in(browser, url: str, code: str, viewport: dict[str, int]):  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport=viewport)
    page.goto(url + "/")
    page.fill("#code", code)
    page.keyboard.press("Enter")
    page.wait_for_selector("#app[data-ready]", state="attached")
    if page.input_value("#task") != "sentiment":
        page.select_option("#task", "sentiment")
    page.wait_for_selector("#app[data-ready='sentiment']", state="attached")
    return page


def photograph(home: Path, url: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    code = {n: dynadesk(home, "hub", "invite", n, "--role", r).strip().splitlines()[-1]
            for n, r in (("dan", "annotator"), ("lead", "owner"))}
    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = sign_in(browser, url, code["dan"], PHONE)
        shots.append(out / "hub_phone_guidelines.png")
        page.screenshot(path=str(shots[-1]), full_page=True)
        page.keyboard.press("Escape")
        page.keyboard.type("Not the worst film I have seen this year.")
        page.keyboard.press("Escape")
        page.keyboard.press("3")
        shots.append(out / "hub_phone_create.png")
        page.screenshot(path=str(shots[-1]), full_page=True)
        page.keyboard.press("v")
        page.wait_for_selector("#val-example:not([hidden])")
        shots.append(out / "hub_phone_validate.png")
        page.screenshot(path=str(shots[-1]), full_page=True)
        lead = sign_in(browser, url, code["lead"], {"width": 1280, "height": 800})
        lead.keyboard.press("Escape")
        lead.click("#tab-lead")
        lead.wait_for_selector("#lead-table tbody tr")
        disputed = lead.locator("#lead-table tr[data-state='disputed']").first.get_attribute("data-uid")
        lead.click(f"#lead-table tr[data-uid='{disputed}'] button.open")
        lead.click(f"#lead-table tr[data-detail='{disputed}'] button.decide-correct")  # the lead decides it
        lead.wait_for_selector(f"#lead-table tr[data-uid='{disputed}'][data-state='lead: correct']")
        lead.locator("#lead-table tr[data-state='more votes needed'] button.open").first.click()
        shots.append(out / "hub_lead.png")
        lead.screenshot(path=str(shots[-1]), full_page=True)
        browser.close()
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dynadesk-hub-"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        say("building a workspace with a sentiment round …")
        build(work / "ws")
        proc, url = serve(work / "ws")
        try:
            for shot in photograph(work / "ws", url, args.out):
                say(f"wrote {shot.relative_to(REPO) if shot.is_relative_to(REPO) else shot}")
        finally:
            proc.terminate()
            proc.wait(30)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
