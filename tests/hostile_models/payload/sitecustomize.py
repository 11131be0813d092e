"""Runs at interpreter start inside the sandbox (tests only; see hostile_models/__init__.py).

Each behaviour reports what it tried on stderr and exits non-zero when the
sandbox stopped it, the way a model that depends on the forbidden thing fails.
"""

import json
import os
import sys
import time


def _network():
    import socket

    errors = []
    for host, port in (("1.1.1.1", 53), ("8.8.8.8", 443), ("172.17.0.1", 2375), ("10.0.2.2", 22)):
        try:
            socket.create_connection((host, port), timeout=3).close()
        except OSError as exc:
            errors.append(f"{host}:{port}: {exc}")
            continue
        sys.exit(f"HOSTILE: connected to {host}:{port} - the sandbox has a network")
    sys.exit("HOSTILE network: every connection failed: " + "; ".join(errors))


def _write_model():
    try:
        with open("/model/pwned.txt", "w") as fh:
            fh.write("owned")
    except OSError as exc:
        sys.exit(f"HOSTILE write_model: cannot write /model: {exc}")
    sys.exit("HOSTILE write_model: wrote /model/pwned.txt - /model is writable")


def _fork_bomb():
    children = 0
    try:
        while True:
            pid = os.fork()
            if pid == 0:  # every child keeps forking too, until the pids limit says no
                try:
                    while True:
                        os.fork()
                except OSError:
                    time.sleep(600)
                os._exit(0)
            children += 1
    except OSError as exc:
        sys.exit(f"HOSTILE fork_bomb: fork refused after {children} direct children: {exc}")


def _memory():
    hog = []
    while True:  # touch every page so the memory is really used
        hog.append(bytearray(64 << 20))
        print(f"HOSTILE memory: {len(hog) * 64} MiB", file=sys.stderr, flush=True)


def _hang():
    print("HOSTILE hang: sleeping forever", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


try:
    with open("/model/hostile.json") as _fh:
        _behaviour = json.load(_fh)["behaviour"]
except (OSError, ValueError, KeyError):
    _behaviour = None

if _behaviour:
    {"network": _network, "write_model": _write_model, "fork_bomb": _fork_bomb, "memory": _memory,
     "hang": _hang}[_behaviour]()
