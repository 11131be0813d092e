"""``make test`` runs in two phases (packaging/run_tests.sh): every test but the ``serial`` ones on pytest-xdist
workers, then those alone. A renamed test must not slip out of the serial phase unnoticed, and the two phases
together must select every test exactly once."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

from support import REPO

# tests/conftest.py by its path: under pytest-xdist another folder's conftest may own the name "conftest"
_spec = importlib.util.spec_from_file_location("dynadesk_tests_root_conftest", REPO / "tests" / "conftest.py")
assert _spec is not None and _spec.loader is not None
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)


def test_every_serial_entry_names_a_test_that_exists():
    for prefix, why in conftest.SERIAL.items():
        path, _, name = prefix.partition("::")
        target = REPO / path
        assert target.exists(), f"SERIAL names {path}, which does not exist ({why})"
        if name:
            text = target.read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(name)}", text, re.M), f"SERIAL names {prefix}: no such test ({why})"
    for path in conftest.LONGEST_FILES:
        assert (REPO / path).is_file(), f"LONGEST_FILES names {path}, which does not exist"


def _collected(*args: str) -> set[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return {line for line in out.stdout.splitlines() if "::" in line}


def test_the_two_phases_split_the_selection_and_keep_the_callers_arguments():
    files = ["tests/eval/test_eval_request.py", "tests/eval/test_eval_thread_policy.py"]
    every = _collected(*files)
    serial = _collected("--phase", "serial", *files)
    parallel = _collected("--phase", "parallel", *files)
    assert serial and parallel and serial.isdisjoint(parallel) and serial | parallel == every
    assert "tests/eval/test_eval_request.py::test_output_without_newlines_is_handled_in_linear_time_and_the_tail_is" \
           "_kept" in serial
    assert all(t.startswith("tests/eval/test_eval_thread_policy.py::") for t in serial - {
        "tests/eval/test_eval_request.py::test_output_without_newlines_is_handled_in_linear_time_and_the_tail_is_kept"})
    narrowed = _collected("--phase", "serial", "-k", "linear_time", *files)  # -k (PYTEST_ARGS) still applies
    assert len(narrowed) == 1
