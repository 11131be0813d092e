"""Both command-line programs, ``dynadesk`` and ``dynadesk-server``, run their click trees through one
``dynadesk.commandline.run_command``: a library error is one ``Error:`` line with status 1 (no traceback), a usage
error click's message with status 2, ``--help`` status 0, Ctrl-C at a prompt status 130 (the desktop program says
"Aborted."). Run as real subprocesses, as a user runs them."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAMS = {"dynadesk": "from dynadesk.cli import main; main()",
            "dynadesk-server": "from dynadesk.sync.server.cli import main; main()"}


def run(program: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROGRAMS[program], *args], capture_output=True, text=True,
                          input=stdin, timeout=120)


@pytest.mark.parametrize("program, args, word", [
    ("dynadesk", ["models", "show", "nosuch"], "no model named 'nosuch'"),
    ("dynadesk-server", ["keys", "list", "--db", "{missing}/server.db"], "server database"),
])
def test_a_library_error_is_one_line_with_status_1(program, args, word, tmp_path):
    args = [a.format(missing=tmp_path / "no-such-folder") for a in args]
    home = ["--home", str(tmp_path / "ws")] if program == "dynadesk" else []
    done = run(program, *home, *args)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and word in lines[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_usage_errors_and_help_keep_their_statuses(program):
    bad = run(program, "--no-such-option")
    assert bad.returncode == 2 and "No such option '--no-such-option'" in bad.stderr
    assert "Traceback" not in bad.stderr
    shown = run(program, "--help")
    assert shown.returncode == 0 and f"Usage: {program}" in shown.stdout


def test_an_abort_at_a_prompt_is_status_130_and_says_aborted(tmp_path, monkeypatch):
    monkeypatch.delenv("DYNADESK_KEY_PASSPHRASE", raising=False)
    done = run("dynadesk", "--home", str(tmp_path / "ws"), "keys", "init", "--passphrase")  # stdin ends: an abort
    assert done.returncode == 130
    assert done.stderr.rstrip().endswith("Aborted.") and "Traceback" not in done.stderr
    assert not any((tmp_path / "ws" / "keys").iterdir())  # no key was written
