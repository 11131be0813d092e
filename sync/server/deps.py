"""What the leaderboard server's routes depend on, as typed ``Annotated`` aliases (the FastAPI reference layout):
one :class:`ServerState` per app, built by :func:`~dynadesk.sync.server.app.create_app` and kept on
``app.state.server``; a route names what it needs (``db: DB``, ``view: View``, ``state: State``) and gets it.

The dependencies are ``async`` functions: FastAPI runs a plain ``def`` dependency in a worker thread, which would
cost every upload a thread hop; these only read an attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

import anyio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi import Depends, Request

from dynadesk.ratelimit import Limiter
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.format.translog import sign_head
from dynadesk.sync.server.board_view import BoardView, OffRequestPath
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.ingest import UploadChecks
from dynadesk.sync.server.pool import UploadPool
from dynadesk.sync.server.task_registry import LiveRules, LiveTasks

__all__ = ["DB", "ServerState", "State", "Tasks", "View"]


@dataclass
class ServerState:
    """One app's database, tasks, board view, upload checks and limits, signing key and clock."""

    db: ServerDB
    tasks: LiveTasks
    rules: LiveRules
    view: BoardView
    off_path: OffRequestPath
    checks: UploadChecks
    upload_pool: UploadPool
    upload_threads: anyio.CapacityLimiter  # each admitted upload waits for the pool in one
    address_limiter: Limiter
    trusted_proxies: frozenset[str]
    server_key: Ed25519PrivateKey
    clock: Callable[[], datetime]

    def head(self) -> dict[str, Any]:
        """The transparency log's current head, signed by the server's key."""
        size, head = self.db.log_head()
        return sign_head(self.server_key, size, head, utc_now_text(self.clock()))


async def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.server
    return state


async def _db(request: Request) -> ServerDB:
    return (await _state(request)).db


async def _view(request: Request) -> BoardView:
    return (await _state(request)).view


async def _tasks(request: Request) -> LiveTasks:
    return (await _state(request)).tasks


State = Annotated[ServerState, Depends(_state)]
DB = Annotated[ServerDB, Depends(_db)]
View = Annotated[BoardView, Depends(_view)]
Tasks = Annotated[LiveTasks, Depends(_tasks)]
