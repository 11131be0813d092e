"""The suite's shared helpers, imported as ``support`` (``tests/`` is on ``sys.path``: the root conftest's folder).

One module per kind of help: ``support.sync`` (run rows, run folders, servers), ``support.board`` (a served board,
headless chromium), ``support.intervals``, ``support.pg`` (a PostgreSQL cluster), ``support.eval`` (evaluation
workspaces and requests), ``support.annotation``, ``support.gui`` (the app's window), ``support.hub``,
``support.queue`` (redis-server and workers), ``support.tiny_models``, ``support.hostile_models`` (sandbox escapes).
This module holds what every area needs: the suite's folders, ``missing`` and ``fuzz_examples``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

TESTS = Path(__file__).resolve().parents[1]  # tests/
REPO = TESTS.parent
ASSETS = TESTS / "assets"  # static inputs: old database dumps, old bundles, malformed bundles and packs

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(what: str, how: str) -> NoReturn:
    """Skip locally, fail in CI: a feature's test never silently passes in CI."""
    import pytest

    msg = f"{what} is not available: {how}"
    if IN_CI:
        pytest.fail(msg)
    pytest.skip(msg)


def fuzz_examples(normal: int, long: int) -> int:
    """How many generated cases a fuzz test runs: small in make test, large with --long."""
    return long if os.environ.get("DYNADESK_LONG") == "1" else normal
