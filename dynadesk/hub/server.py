"""Running the hub: uvicorn on loopback, or on every interface with ``--lan``."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

from dynadesk.hub.app import DEFAULT_PER_MODEL, DEFAULT_SIGNIN_RATE, DEFAULT_WRITE_RATE, create_app
from dynadesk.hub.batcher import DEFAULT_MAX_BATCH, DEFAULT_WINDOW_S
from dynadesk.hub.identity import DEFAULT_SESSION_HOURS
from dynadesk.hub.limits import Rate
from dynadesk.hub.service import HubCore

LOOPBACK = "127.0.0.1"
ALL_INTERFACES = "0.0.0.0"  # only with --lan, which the lead chooses


def lan_addresses() -> list[str]:
    """This machine's IPv4 addresses others on the network can reach (no packet is sent)."""
    found: set[str] = set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            found.add(str(info[4][0]))
    except OSError:
        pass
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))  # UDP connect only picks the outgoing interface
            found.add(s.getsockname()[0])
        except OSError:
            pass
    return sorted(a for a in found if not a.startswith("127."))


def serve(home: Path, *, lan: bool = False, port: int = 8765, session_hours: float = DEFAULT_SESSION_HOURS,
          window_s: float = DEFAULT_WINDOW_S, max_batch: int = DEFAULT_MAX_BATCH,
          write_rate: Rate = DEFAULT_WRITE_RATE, signin_rate: Rate = DEFAULT_SIGNIN_RATE,
          per_model: int = DEFAULT_PER_MODEL, say: Callable[[str], None] = print) -> None:
    """Serve the hub until interrupted (Ctrl-C / SIGTERM)."""
    import uvicorn

    core = HubCore(Path(home), session_hours=session_hours, window_s=window_s, max_batch=max_batch)
    app = create_app(core, write_rate=write_rate, signin_rate=signin_rate, per_model=per_model)
    host = ALL_INTERFACES if lan else LOOPBACK
    warmed = core.warm()
    say(f"DynaDesk hub over {core.workspace.home}")
    say(f"  target models loading: {', '.join(warmed) or 'none (open a round: dynadesk rounds new)'}")
    say(f"  on this machine: http://{LOOPBACK}:{port}/")
    if lan:
        for addr in lan_addresses():
            say(f"  on the network:  http://{addr}:{port}/")
    else:
        say("  loopback only: others on the network cannot reach it (use --lan)")
    say("  invite people with: dynadesk hub invite NAME --role annotator|validator|owner")
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
