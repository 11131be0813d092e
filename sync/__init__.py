"""Signed score bundles, the offline sync client and the central leaderboard server.

Nothing here needs Qt or Docker: the server (``dynadesk-server``) runs on any
machine with the core library, FastAPI and uvicorn.
"""
