"""`make test`'s parallel phase ends when a worker crashes: the crash is reported, naming the test, and every other
test still runs. Stock pytest-xdist 3.8.0 waited for ever there (a clean-clone CI run sat until its 90-minute limit
after a segfault); tests/support/xdist_scheduler.py is the fix, used by the suite through tests/conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _suite(folder: Path) -> None:
    for name in "abcde":  # finished files a crashed worker had run
        (folder / f"test_{name}.py").write_text("def test_1():\n    pass\n\ndef test_2():\n    pass\n")
    (folder / "test_z.py").write_text(
        "import os\n\ndef test_1():\n    pass\n\ndef test_crash():\n    os._exit(1)\n\ndef test_after():\n    pass\n")
    (folder / "pytest.ini").write_text("[pytest]\n")


def _run(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                           "--dist", "loadfile", "."], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_crashed_worker_is_reported_and_the_rest_of_the_suite_runs(tmp_path):
    _suite(tmp_path)
    # the hook as tests/conftest.py takes it: imported into a conftest
    (tmp_path / "conftest.py").write_text("from support.xdist_scheduler import pytest_xdist_make_scheduler\n")
    done = _run(tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "worker 'gw" in out and "crashed while running 'test_z.py::test_crash'" in out
    # the test after the crash ran once, on the replacement worker; the crashed one was not run again
    assert "1 failed, 12 passed" in out
    assert out.count("node down") == 1


def test_the_suites_conftest_takes_the_hook(request):
    from support import xdist_scheduler

    conftest = request.config.pluginmanager.get_plugin(str(TESTS / "conftest.py"))
    assert conftest is not None
    assert conftest.pytest_xdist_make_scheduler is xdist_scheduler.pytest_xdist_make_scheduler
