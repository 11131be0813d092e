"""Signed score bundles, the offline sync client and the central leaderboard server, one subpackage per layer
(import-linter's ``sync-layers`` contract: a layer imports only those below it):

- :mod:`dynadesk.sync.server` — the leaderboard server (``dynadesk-server``): app, database, ingest, CLI;
- :mod:`dynadesk.sync.client` — make bundles (``create``), upload the queue (``upload``);
- :mod:`dynadesk.sync.rules` — the board's rules: boards over the shared Dynascore, facts, claims, snapshot checks;
- :mod:`dynadesk.sync.format` — the bundle and attestation format (stands alone: errors only).

Nothing here needs Qt or Docker.
"""
