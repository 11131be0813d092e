"""Signed score bundles, the offline sync client and the central leaderboard server.

- :mod:`dynadesk.sync.format` — the bundle and attestation format (stands alone: errors only);
- :mod:`dynadesk.sync.client`, :mod:`dynadesk.sync.create` — make bundles, upload the queue;
- :mod:`dynadesk.sync.server` — the leaderboard server (``dynadesk-server``): app, database, ingest, CLI;
- :mod:`dynadesk.sync.board` — server boards over the shared Dynascore.

Client and server depend on the format, never the reverse. Nothing here needs Qt or Docker.
"""
