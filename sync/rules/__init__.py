"""The board's rules, over the bundle format: which runs a board ranks and how (``board``), the facts a board
stands on (``board_facts``: editions, classes, baselines), its statistics (``board_stats``), the claims a badge is
bound to (``claims``) and the check a client runs on a published snapshot (``snapshot_check``).

Shared by the client (which checks what a server publishes) and the server (which computes it): neither is
imported from here (import-linter's ``sync-layers`` contract).
"""
