"""The demo's leaderboard server (``make demo`` steps 7-8): a real ``dynadesk-server`` on loopback with the demo's
key and test sets registered, and the sync that fills its board. Split from :mod:`dynadesk.demo`, which re-exports
these names."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.errors import DynaDeskError

if TYPE_CHECKING:
    from dynadesk.demo_steps import Steps
    from dynadesk.store import Store
    from dynadesk.workspace import Workspace


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", "from dynadesk.sync.server.cli import main; main()", *args]


def start_server(workspace: Workspace, step: Steps) -> tuple[subprocess.Popen[Any], str, Path]:
    from dynadesk.demo import TASK, TEST_SETS  # the demo's constants (it imports this module)
    from dynadesk.errors import SyncError
    from dynadesk.sync.client.upload import SyncClient

    db = Path(workspace.home) / "server" / "board.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    pub = Path(workspace.keys_dir) / "demo-submitter.pub"
    from dynadesk.sync.format.keys import PRIVATE_NAME, load_private_key, public_pem

    pub.write_bytes(public_pem(load_private_key(Path(workspace.keys_dir) / PRIVATE_NAME)))
    from dynadesk.store import Store

    admin = [["keys", "add", "--db", str(db), str(pub), "--name", "demo lab"]]
    store = Store.open(workspace.db_path)
    for name in TEST_SETS:  # exactly the four test sets the demo's bundles report
        d = store.datasets.get(name)
        admin.append(["datasets", "add", "--db", str(db), "--task", TASK, "--name", name, "--digest", d.digest,
                      "--size", str(d.size), "--split", "test", "--replace"])
    store.close()
    for args in admin:
        proc = subprocess.run(server_cmd(*args), capture_output=True, text=True)
        if proc.returncode != 0 and "already" not in (proc.stdout + proc.stderr):
            raise DynaDeskError(f"dynadesk-server {' '.join(args[:2])} failed: {proc.stderr.strip()[-500:]}")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(server_cmd("serve", "--db", str(db), "--port", str(port)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            err = server.stderr.read()[-800:] if server.stderr else ""
            raise DynaDeskError(f"the leaderboard server exited: {err}")
        try:
            SyncClient(url, retries=0, timeout=1).get_json("/api/tasks")
            break
        except SyncError:
            time.sleep(0.3)
    else:
        server.kill()
        raise DynaDeskError("the leaderboard server did not answer within 60 s")
    step.note(f"dynadesk-server listening on {url} (database {db}; key registered; datasets registered)")
    return server, url, db


def sync_and_show(store: Store, url: str, step: Steps) -> None:
    from dynadesk.demo import TASK
    from dynadesk.sync.client.upload import SyncClient, sync_queue

    report = sync_queue(store, url)
    if not report.ok:
        raise DynaDeskError(f"sync failed: {report.error}")
    step.note(f"sync: {len(report.sent)} sent, {len(report.already)} already on the server, "
              f"{len(report.rejected)} rejected {report.rejected or ''}")
    board = SyncClient(url).get_json(f"/api/leaderboard/{TASK}", expect=dict)  # printed once its rates are frozen
    if not board.get("rows"):
        raise DynaDeskError(f"the server's board is empty: {json.dumps(board)[:300]}")
