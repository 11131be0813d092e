"""The image cache keeps the newest few archives: one ~1.3 GB archive per evaluator version filled this machine's
disk in a day (every test run after it failed with ENOSPC)."""

from __future__ import annotations

import os

from dynadesk.orchestration.image import KEEP_ARCHIVES, REPOSITORY, prune_archives


def test_only_the_newest_archives_stay_and_nothing_else_is_touched(tmp_path):
    archives = []
    for i in range(KEEP_ARCHIVES + 3):
        path = tmp_path / f"{REPOSITORY}-{i:016x}.tar"
        path.write_bytes(b"x")
        os.utime(path, ns=(i * 10**9, i * 10**9))
        archives.append(path)
    other = tmp_path / "0123456789abcdef.json"  # a build record: kept, its image rebuilds when asked
    other.write_text("{}")
    gone = prune_archives(tmp_path)
    assert sorted(gone) == sorted(archives[:3])
    assert sorted(p for p in tmp_path.iterdir()) == sorted([other, *archives[3:]])
    assert prune_archives(tmp_path) == []
