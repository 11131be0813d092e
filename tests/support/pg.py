"""A throwaway PostgreSQL cluster in a temp folder, for the server tests and the server benchmark.

initdb + start take about 2 s. As root the binaries run as the ``postgres`` OS user (PostgreSQL
refuses to run as root). Password authentication over TCP (so a wrong password can be tested);
``fast=True`` turns fsync off (a test cluster holds nothing worth keeping).
"""

from __future__ import annotations

import glob
import itertools
import os
import secrets
import shutil
import socket
import subprocess
from pathlib import Path

PASSWORD_USER = "postgres"


def pg_bin() -> Path | None:
    """The folder holding initdb and pg_ctl, or None when PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(d, "initdb").exists() and Path(d, "pg_ctl").exists():
            return Path(d)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """One running PostgreSQL server; :meth:`new_database` gives each test its own empty database."""

    def __init__(self, root: Path, *, fast: bool = True, settings: dict[str, str] | None = None):
        bindir = pg_bin()
        if bindir is None:
            raise FileNotFoundError("initdb/pg_ctl not found (packaging/system_deps.sh installs postgresql)")
        self.bindir, self.root = bindir, Path(root)
        self.data, self.sock = self.root / "data", self.root / "sock"
        self.root.mkdir(parents=True, exist_ok=True)
        self.sock.mkdir(exist_ok=True)
        self.password = secrets.token_hex(8)
        pwfile = self.root / "pw"
        pwfile.write_text(self.password)
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.sock, "postgres")
            shutil.chown(pwfile, "postgres")
        self.port = _free_port()
        self._run("initdb", "-D", str(self.data), "-U", PASSWORD_USER, f"--pwfile={pwfile}",
                  "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        opts = {"listen_addresses": "127.0.0.1", "port": str(self.port), "unix_socket_directories": str(self.sock),
                "max_connections": "300", **(settings or {})}
        if fast:
            opts.update({"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"})
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60",
                  "-o", " ".join(f"-c {k}={v}" for k, v in opts.items()), "start")
        self._names = itertools.count(1)

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd="/")
        if out.returncode != 0:
            raise RuntimeError(f"{tool} failed ({out.returncode}): {out.stderr.strip() or out.stdout.strip()}")

    def url(self, dbname: str = "postgres", password: str | None = None) -> str:
        return (f"postgresql://{PASSWORD_USER}:{password or self.password}@127.0.0.1:{self.port}/{dbname}")

    def drop_connections(self, database_url: str) -> None:
        """End every server connection to the database at ``database_url`` (what a restart or a network cut does to
        a client's pooled connections)."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                          [database_url.rsplit("/", 1)[1]])

    def new_database(self, prefix: str = "t") -> str:
        """A fresh empty database; returns its URL."""
        import psycopg

        name = f"{prefix}{next(self._names)}_{os.getpid()}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def restart(self, mode: str = "immediate") -> None:
        """Stop the server (``immediate``: like a crash, no checkpoint) and start it again on the same port."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-l", str(self.root / "log"), "-w", "-t", "60",
                  "restart")  # pg_ctl restart reuses the options the server was started with (postmaster.opts)

    def stop(self) -> None:
        if self.data.exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
