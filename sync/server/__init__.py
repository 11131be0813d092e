"""The leaderboard server: FastAPI app, its SQLite database, the upload path and ``dynadesk-server``."""
