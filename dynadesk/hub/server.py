"""Running the hub: uvicorn on loopback, or on every interface with ``--lan`` (HTTPS only).

On a real office network (issue 45 item 5) the hub

- serves **TLS** whenever it listens beyond loopback: the lead's certificate (``--tls-cert``/``--tls-key``) or a
  self-signed one kept in the workspace, whose SHA-256 fingerprint it prints (:mod:`dynadesk.hub.tls`); its
  session cookie is then ``Secure``;
- trusts ``X-Forwarded-For`` only from the one proxy the lead names (``--trusted-proxy``), never by default
  (uvicorn trusts loopback's by default, which let anyone on the machine pick the address the sign-in limit counts);
- bounds **connections** (:func:`guarded_protocol`: over ``max_connections`` a new connection gets a 503 and is
  closed at once, so its descriptor is freed; uvicorn's ``limit_concurrency`` answers 503 at the same count) and
  the **time to send request headers** (a connection that has not sent a whole request head within
  ``header_timeout_s`` is closed: uvicorn has no such timer, so 1,100 idle or trickling connections held their
  descriptors until the process ran out), and header size (h11's limit); the **TLS handshake** has the same
  deadline (:func:`bounded_handshake_server`: uvicorn passes none, so asyncio's 60 s held a connection that
  connected and never finished its handshake, before the request-head deadline could start);
- logs "accept() out of system resource" **once** (:class:`OnceFilter`) instead of on every retry, and raises its
  own soft descriptor limit to the hard one at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynadesk.hub.app import DEFAULT_PER_MODEL, DEFAULT_READ_RATE, DEFAULT_SIGNIN_RATE, DEFAULT_WRITE_RATE, create_app
from dynadesk.hub.batcher import DEFAULT_MAX_BATCH, DEFAULT_WINDOW_S
from dynadesk.hub.identity import DEFAULT_SESSION_HOURS
from dynadesk.hub.limits import Rate
from dynadesk.hub.service import HubCore
from dynadesk.hub.tls import hub_tls

LOOPBACK = "127.0.0.1"
ALL_INTERFACES = "0.0.0.0"  # only with --lan, which the lead chooses
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_HEADER_TIMEOUT_S = 10.0
MAX_HEADER_BYTES = 16 * 1024
TLS_SHUTDOWN_S = 2.0  # a closing TLS connection waits this long for the client's close_notify (asyncio: 30 s)
STARTUP_FAILURE = 3  # uvicorn's exit status when the server did not start
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 5\r\n\r\n"


@dataclass(frozen=True)
class NetOptions:
    """How the hub meets the network: where it listens, TLS files, the trusted proxy, connection and rate limits."""

    lan: bool = False
    port: int = 8765
    tls_cert: Path | None = None
    tls_key: Path | None = None
    trusted_proxy: str | None = None
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    read_rate: Rate = DEFAULT_READ_RATE
    write_rate: Rate = DEFAULT_WRITE_RATE
    signin_rate: Rate = DEFAULT_SIGNIN_RATE


class OnceFilter(logging.Filter):
    """Lets the first record whose message holds ``text`` through, and drops the rest (counted in ``dropped``):
    asyncio logs a full traceback for every failed accept() retry while descriptors are exhausted."""

    def __init__(self, text: str):
        super().__init__()
        self.text = text
        self.seen = False
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if self.text not in record.getMessage():
            return True
        if self.seen:
            self.dropped += 1
            return False
        self.seen = True
        record.msg = f"{record.getMessage()} (logged once: the hub keeps serving and retries; raise 'ulimit -n' " \
                     "or lower --max-connections)"
        record.args = ()
        record.exc_info = None
        return True


def raise_descriptor_limit() -> int:
    """Raise this process's soft open-file limit to its hard limit; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


def guarded_protocol(max_connections: int, header_timeout_s: float) -> type[Any]:
    """uvicorn's h11 protocol with a connection cap and a request-head deadline (see the module's docstring)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _waiting_on: Any = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.write(BUSY)
                transport.close()
                return
            self._arm()

        def _arm(self) -> None:
            """Close the connection unless a new request head (a new cycle) arrives within the deadline."""
            if self._deadline is not None:
                self._deadline.cancel()
            self._waiting_on = self.cycle
            self._deadline = self.loop.call_later(header_timeout_s, self._late)

        def _late(self) -> None:
            if self.cycle is self._waiting_on and not self.transport.is_closing():
                self.transport.close()

        def on_response_complete(self) -> None:
            self._arm()  # the next request on this connection has its own deadline
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

    return GuardedH11Protocol


def bounded_handshake_server(config: Any, handshake_timeout_s: float) -> Any:
    """A ``uvicorn.Server`` for ``config`` whose TLS handshakes must finish within ``handshake_timeout_s``:
    uvicorn calls ``loop.create_server(ssl=...)`` without ``ssl_handshake_timeout``, so asyncio's default (60 s)
    applied. The TLS closing handshake is bounded too (:data:`TLS_SHUTDOWN_S`): a client that went away without
    its ``close_notify`` (``requests`` does) held the hub's stop (SIGTERM, Ctrl-C) for asyncio's 30 s. The
    listening sockets are created with the timeouts; nothing else of uvicorn changes."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            loop = asyncio.get_running_loop()
            real = loop.create_server

            async def create_server(*args: Any, **kwargs: Any) -> asyncio.Server:
                if kwargs.get("ssl") is not None:
                    kwargs.setdefault("ssl_handshake_timeout", handshake_timeout_s)
                    kwargs.setdefault("ssl_shutdown_timeout", TLS_SHUTDOWN_S)
                return await real(*args, **kwargs)

            loop.create_server = create_server  # type: ignore[method-assign]
            try:
                await super().startup(sockets)
            finally:
                del loop.create_server  # the loop's own method again

    return Server(config)


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


def serve(home: Path, *, session_hours: float = DEFAULT_SESSION_HOURS, window_s: float = DEFAULT_WINDOW_S,
          max_batch: int = DEFAULT_MAX_BATCH, per_model: int = DEFAULT_PER_MODEL, net: NetOptions = NetOptions(),
          say: Callable[[str], None] = print) -> None:
    """Serve the hub until interrupted (Ctrl-C / SIGTERM); over TLS with ``net.lan`` or a given certificate."""
    import uvicorn

    lan, port, write_rate = net.lan, net.port, net.write_rate

    logging.getLogger("asyncio").addFilter(OnceFilter("out of system resource"))
    raise_descriptor_limit()
    addresses = lan_addresses() if lan else []
    tls = hub_tls(Path(home), net.tls_cert, net.tls_key, addresses) if lan or net.tls_cert else None
    core = HubCore(Path(home), session_hours=session_hours, window_s=window_s, max_batch=max_batch, say=say)
    app = create_app(core, write_rate=write_rate, signin_rate=net.signin_rate, per_model=per_model,
                     read_rate=net.read_rate, secure_cookies=tls is not None)
    host = ALL_INTERFACES if lan else LOOPBACK
    scheme = "https" if tls else "http"
    warmed = core.warm()
    say(f"DynaDesk hub over {core.workspace.home}")
    say(f"  target models loading: {', '.join(warmed) or 'none (open a round: dynadesk rounds new)'}")
    say(f"  on this machine: {scheme}://{LOOPBACK}:{port}/")
    if tls:
        kind = "self-signed, kept in the workspace" if tls.self_signed else "given"
        say(f"  TLS certificate ({kind}): {tls.cert}")
        say(f"  certificate SHA-256 fingerprint (annotators check it in the browser): {tls.fingerprint}")
    if lan:
        for addr in addresses:
            say(f"  on the network:  {scheme}://{addr}:{port}/")
    else:
        say("  loopback only: others on the network cannot reach it (use --lan)")
    say(f"  limits: {net.max_connections} connections, {net.header_timeout_s:g} s to send a request head, "
        f"reads {net.read_rate} and writes {write_rate} per session; proxy trusted: {net.trusted_proxy or 'none'}")
    say("  invite people with: dynadesk hub invite NAME --role annotator|validator|owner")
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, loop="asyncio",
                            http=guarded_protocol(net.max_connections, net.header_timeout_s),
                            limit_concurrency=net.max_connections, timeout_keep_alive=5,
                            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
                            proxy_headers=net.trusted_proxy is not None, forwarded_allow_ips=net.trusted_proxy or "",
                            ssl_certfile=str(tls.cert) if tls else None, ssl_keyfile=str(tls.key) if tls else None)
    server = bounded_handshake_server(config, net.header_timeout_s)
    with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run: Ctrl-C ends the hub quietly
        server.run()
    if not server.started:  # as uvicorn.run: the port could not be bound (uvicorn has logged why)
        sys.exit(STARTUP_FAILURE)
