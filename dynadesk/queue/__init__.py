"""Evaluation across machines: a Redis broker, Celery workers (one per machine), jobs with leases.

``broker`` checks URLs and translates redis errors; ``transfer`` moves files by sha256;
``jobs`` holds job records and leases; ``tasks`` the Celery app; ``worker`` runs jobs in the
machine's Docker; ``coordinator`` enqueues runs and stores their results. See docs/queue.md.
"""
