"""Load test: two ``dynadesk-server serve`` processes on one PostgreSQL database, six concurrent clients,
~100 uploads (valid ones from two submitters, replays of them, and invalid ones). Every valid bundle
is stored exactly once, the log verifies through either server, and the board equals the board a
SQLite server computes from the same uploads."""

from __future__ import annotations

import queue
import random
import threading
from pathlib import Path

import requests
from support.sync import NO_LIMITS, free_port, make_run, start_server, stop_server, workspace_with_key

from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format.keys import key_info
from dynadesk.sync.format.translog import verify_log
from dynadesk.sync.server.admin import import_workspace_datasets
from dynadesk.sync.server.db import ServerDB

VALID_PER_SUBMITTER, REPLAYS, CLIENTS = 40, 16, 6


def _uploads(tmp_path: Path) -> tuple[list[tuple[str, bytes]], set[str], list[tuple[Path, object]]]:
    """(kind, body) in a fixed shuffled order; the valid bundle ids; the submitters' (workspace, store)."""
    rng = random.Random(23)
    items: list[tuple[str, bytes]] = []
    valid: set[str] = set()
    submitters = []
    for who in ("a", "b"):
        ws, store = workspace_with_key(tmp_path / f"ws-{who}")
        submitters.append((ws, store))
        for i in range(VALID_PER_SUBMITTER):  # 8 models, 5 bundles each: the board keeps the latest of each
            b = create_bundle(ws, store, make_run(store, ws.runs_dir, model=f"{who}-model-{i % 8}",
                                                  perf=rng.uniform(40, 95), throughput=rng.uniform(100, 3000)))
            items.append(("valid", b.raw))
            valid.add(b.id)
    items += [("replay", raw) for _, raw in rng.sample(items, REPLAYS)]
    stranger, stranger_store = workspace_with_key(tmp_path / "ws-stranger")  # a key no server registered
    items.append(("invalid", create_bundle(stranger, stranger_store, make_run(stranger_store, stranger.runs_dir)).raw))
    stranger_store.close()
    raw = items[0][1]
    cut = raw.index(b',"signature":')
    items += [("invalid", raw[:cut] + raw[cut:].replace(b'"value":"', b'"value":"00', 1)),  # malformed signature
              ("invalid", raw.replace(b'"created_at":"20', b'"created_at":"19', 1)),  # payload changed after signing
              ("invalid", b"{}"), ("invalid", b"not json"), ("invalid", raw[: len(raw) // 2])]
    rng.shuffle(items)
    return items, valid, submitters


def _register(db: ServerDB, submitters: list[tuple[Path, object]]) -> None:
    for n, (ws, _store) in enumerate(submitters):
        info = key_info(ws.keys_dir)
        db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), f"lab {n}")
        import_workspace_datasets(db, ws.home)


def _post_all(urls: list[str], items: list[tuple[str, bytes]]) -> list[tuple[str, bytes, int]]:
    """``CLIENTS`` threads, each with its own keep-alive session, taking uploads in turn from one queue."""
    todo: queue.Queue[tuple[int, tuple[str, bytes]]] = queue.Queue()
    for n, item in enumerate(items):
        todo.put((n, item))
    answers: list[tuple[str, bytes, int]] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        with requests.Session() as s:
            while True:
                try:
                    n, (kind, body) = todo.get_nowait()
                except queue.Empty:
                    return
                r = s.post(f"{urls[(n + c) % len(urls)]}/api/bundles", data=body, timeout=60,
                           headers={"Content-Type": "application/json"})
                with lock:
                    answers.append((kind, body, r.status_code))

    threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def _board(url: str) -> dict:
    body = requests.get(f"{url}/api/leaderboard/sentiment", params={"limit": 1000}, timeout=30).json()
    return body


def test_two_servers_on_one_postgresql_store_each_valid_bundle_once_and_match_sqlite(tmp_path, pg_url):
    items, valid, submitters = _uploads(tmp_path)
    pg_admin, sq_admin = ServerDB(pg_url), ServerDB(tmp_path / "board.db")
    for db in (pg_admin, sq_admin):
        _register(db, submitters)
    key = str(tmp_path / "board.server.key")
    ports = [free_port(), free_port()]
    procs = [start_server(pg_url, p, (*NO_LIMITS, "--key", key)) for p in ports]
    sq_port = free_port()
    procs.append(start_server(tmp_path / "board.db", sq_port))
    try:
        pg_urls = [f"http://127.0.0.1:{p}" for p in ports]
        answers = _post_all(pg_urls, items)
        assert len(answers) == len(items)
        created = [body for kind, body, status in answers if status == 201]
        assert all(status == 201 or kind != "valid" or body in created for kind, body, status in answers)
        assert {status for kind, _, status in answers if kind == "invalid"} <= {400, 403, 422}
        assert len(created) == len(valid)  # each valid bundle accepted exactly once, through either server
        assert sum(1 for kind, _, status in answers if status == 409) == REPLAYS
        stored = [b["id"] for b in pg_admin.list_bundles(None, 1000)]
        assert sorted(stored) == sorted(valid) and pg_admin.count_bundles() == len(valid)

        for url in pg_urls:  # both servers sign the same head over the same chain
            log = requests.get(f"{url}/api/log", timeout=30).json()
            pub = bytes.fromhex(requests.get(f"{url}/api/server-key", timeout=30).json()["public_key"])
            verify_log(log["entries"], log["head"], pub)
            assert log["head"]["size"] == len(valid)

        sq_answers = _post_all([f"http://127.0.0.1:{sq_port}"], items)
        assert sorted(s for _, _, s in sq_answers) == sorted(s for _, _, s in answers)
        boards = [_board(u) for u in [*pg_urls, f"http://127.0.0.1:{sq_port}"]]
        assert len(boards[0]["rows"]) == 16
        assert boards[0] == boards[1] == boards[2]
    finally:
        for p in procs:
            stop_server(p)
        pg_admin.close()
        sq_admin.close()
        for _, store in submitters:
            store.close()
