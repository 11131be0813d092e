"""A stand-in worker for the host's load generator: it speaks the real protocol over the host's real socket and
answers each query after a time the test sets from the query's texts (a model whose cost the test knows)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from dynadesk.orchestration.loadgen import PROTOCOL, LoadGen


def answer_queries(lg: LoadGen, seconds_for: Callable[[list[str]], float], label: str,
                   field: str = "statement") -> None:
    """The worker's side: each query sleeps ``seconds_for(its texts)`` and answers ``label`` for every example; no
    noise reported; the figures acknowledged."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(lg.path))
    rfile = sock.makefile("rb")

    def send(message: dict[str, Any]) -> None:
        sock.sendall(json.dumps(message).encode() + b"\n")

    send({"hello": PROTOCOL})
    while line := rfile.readline():
        m = json.loads(line)
        if m.get("op") == "query":
            time.sleep(seconds_for([ex[field] for ex in m["examples"]]))
            send({"nonce": m["nonce"], "predictions": [{"label": label}] * len(m["examples"]), "seconds": 0.0})
        elif m.get("op") == "noise":
            send({"noise": {"reasons": []}})
        elif m.get("op") == "done":
            send({"op": "written"})
            break
    sock.close()


def run_to_end(lg: LoadGen, seconds_for: Callable[[list[str]], float], label: str,
               timeout_s: float = 120) -> dict[str, Any]:
    """Run the stand-in against a started load generator to its end; the host's report (finished)."""
    worker = threading.Thread(target=answer_queries, args=(lg, seconds_for, label), daemon=True)
    worker.start()
    worker.join(timeout=timeout_s)
    lg._thread.join(timeout=60)
    lg.close()
    report = lg.report()
    assert report["finished"], report["problems"]
    return report
