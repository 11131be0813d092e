"""The Redis broker: URL checks, one connection factory, and the one place redis errors become ours.

The broker carries the Celery messages, the job records, the leases and the content-addressed
blobs (model files, datasets, results), so anyone who can reach it can make workers run
jobs: a URL without a password is refused here, before anything connects.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from dynadesk.errors import BrokerUnavailable, QueueError


class RedisClient(Protocol):
    """What DynaDesk uses of a redis client (:func:`connect` makes one): the typed seam handed to the job,
    blob and worker modules. Only these calls are used; replies are bytes, or what the Lua script returns."""

    def ping(self) -> Any: ...

    def close(self) -> None: ...

    def get(self, name: str, /) -> Any: ...

    def set(self, name: str, value: str | bytes, /, ex: int | None = None, px: int | None = None) -> Any: ...

    def exists(self, *names: str) -> Any: ...

    def expire(self, name: str, time: int, /) -> Any: ...

    def hget(self, name: str, key: str, /) -> Any: ...

    def hgetall(self, name: str, /) -> Any: ...

    def hset(self, name: str, /, *, mapping: dict[Any, Any]) -> Any: ...

    def smembers(self, name: str, /) -> Any: ...

    def zadd(self, name: str, mapping: dict[Any, Any], /) -> Any: ...

    def zrem(self, name: str, /, *values: str) -> Any: ...

    def zrevrange(self, name: str, start: int, end: int, /) -> Any: ...

    def scan_iter(self, match: str | None = None, count: int | None = None) -> Iterator[Any]: ...

    def eval(self, script: str, numkeys: int, /, *keys_and_args: str) -> Any: ...


PREFIX = "dynadesk:"
SCHEMES = ("redis", "rediss")
ENV_VAR = "DYNADESK_BROKER"


@dataclass(frozen=True)
class BrokerURL:
    """A checked ``redis://:PASSWORD@host:port/db`` URL; ``shown`` hides the password (for logs and errors)."""

    url: str
    host: str
    port: int
    db: int

    @property
    def shown(self) -> str:
        scheme = self.url.split(":", 1)[0]
        return f"{scheme}://:***@{self.host}:{self.port}/{self.db}"


def parse_broker(url: str | None) -> BrokerURL:
    """Check a broker URL; a clear :class:`QueueError` names what is wrong (no password, wrong scheme ...)."""
    if not url:
        raise QueueError(f"no broker given: pass --broker redis://:PASSWORD@HOST:6379/0 (or set ${ENV_VAR})")
    try:
        parts = urlsplit(url)
        port = parts.port or 6379
    except ValueError as exc:
        raise QueueError(f"broker URL is malformed ({exc}); expected redis://:PASSWORD@HOST:6379/0") from None
    if parts.scheme not in SCHEMES:
        raise QueueError(f"broker URL must start with redis:// or rediss://, not '{parts.scheme}://'")
    if not parts.hostname:
        raise QueueError("broker URL names no host; expected redis://:PASSWORD@HOST:6379/0")
    if not parts.password:
        raise QueueError(f"broker URL redis://{parts.hostname}:{port} has no password: the broker must require "
                         "one (redis-server --requirepass ...); give it as redis://:PASSWORD@HOST:PORT/0")
    path = parts.path.strip("/") or "0"
    if not path.isdigit():
        raise QueueError(f"broker URL's database must be a number (e.g. /0), not '/{path}'")
    return BrokerURL(url, parts.hostname, port, int(path))


@contextlib.contextmanager
def translated(broker: BrokerURL) -> Iterator[None]:
    """Turn redis-py's errors (and kombu's, which wrap them) into :class:`BrokerUnavailable`."""
    import redis.exceptions as rex

    try:
        yield
    except rex.AuthenticationError:
        raise BrokerUnavailable(f"broker {broker.shown} refused the password; check the URL's password "
                                "(redis-server's requirepass)") from None
    except rex.ResponseError as exc:
        if "NOAUTH" in str(exc) or "WRONGPASS" in str(exc):
            raise BrokerUnavailable(f"broker {broker.shown} refused the password ({exc})") from None
        raise BrokerUnavailable(f"broker {broker.shown} answered an error: {exc}") from None
    except (rex.ConnectionError, rex.TimeoutError, OSError) as exc:
        raise BrokerUnavailable(f"broker {broker.shown} does not answer ({exc}); start redis-server there or "
                                "check the host, port and firewall") from None


def connect(broker: BrokerURL, timeout: float = 10.0) -> RedisClient:
    """A redis client for ``broker``, pinged now so a wrong password or host fails here."""
    import redis

    client = redis.Redis.from_url(broker.url, socket_timeout=timeout, socket_connect_timeout=timeout)
    with translated(broker):
        client.ping()
    return client


def refuse_anonymous(broker: BrokerURL, timeout: float = 10.0) -> None:
    """Connect *without* the password: a broker that lets that client in is refused (:class:`QueueError`), since
    anyone who reaches its port could then queue jobs and forge results. Unreachable brokers are left to
    :func:`connect`, which says so."""
    import redis
    import redis.exceptions as rex

    client = redis.Redis(host=broker.host, port=broker.port, db=broker.db, ssl=broker.url.startswith("rediss:"),
                         socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        client.ping()
    except (rex.AuthenticationError, rex.ResponseError):
        return  # NOAUTH: the password is required
    except (rex.ConnectionError, rex.TimeoutError, OSError):
        return
    finally:
        client.close()
    raise QueueError(f"broker {broker.shown} accepts clients without a password; refusing to use it: set "
                     "redis-server's requirepass (or an ACL user with a password) first")


def key(*parts: str) -> str:
    """``dynadesk:<part>:<part>``: every key the queue writes shares one prefix."""
    return PREFIX + ":".join(parts)
