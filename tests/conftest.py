"""Shared fixtures. Offline everywhere; Qt offscreen; Docker and Qt fail (not skip) in CI."""

from __future__ import annotations

import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_addoption(parser):
    parser.addoption("--long", action="store_true", default=False, help="also run slow suites (marked long)")


def pytest_configure(config):
    # Fuzz/crash suites read this to scale their case counts up under --long.
    if config.getoption("--long"):
        os.environ["DYNADESK_LONG"] = "1"


def fuzz_examples(normal: int, long: int) -> int:
    """How many generated cases a fuzz test runs: small in make test, large with --long."""
    return long if os.environ.get("DYNADESK_LONG") == "1" else normal


def pytest_collection_modifyitems(config, items):
    if config.getoption("--long"):
        return
    skip_long = pytest.mark.skip(reason="slow suite: run with --long")
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip_long)


def missing(what: str, how: str):
    """Skip locally, fail in CI: a feature's test never silently passes in CI."""
    msg = f"{what} is not available: {how}"
    if IN_CI:
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh workspace folder, also set as DYNADESK_HOME."""
    h = tmp_path / "ws"
    monkeypatch.setenv("DYNADESK_HOME", str(h))
    return h


@pytest.fixture
def store(home):
    from dynadesk.workspace import Workspace

    st = Workspace(home).open_store()
    yield st
    st.close()


@pytest.fixture(scope="session")
def docker_client():
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no usable daemon
        missing("a Docker daemon", f"{exc}; run packaging/system_deps.sh and start dockerd")
    return client


@pytest.fixture(scope="session")
def require_qt():
    try:
        import PySide6  # noqa: F401
        from PySide6.QtWidgets import QApplication  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        missing("PySide6 (Qt)", f"{exc}; install the [gui] extra and Qt's system libraries")


@pytest.fixture(scope="session")
def require_debootstrap():
    if shutil.which("debootstrap") is None:
        missing("debootstrap", "apt-get install debootstrap")


# --- PostgreSQL for the server tests (issue 23): one cluster per session, one database per test -----------
@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server in a temp folder (tests/_pg.py), stopped and removed when the session ends.
    Not under pytest's tmp_path: that is private to root, and the server runs as the postgres user."""
    import tempfile

    from _pg import Cluster, pg_bin

    if pg_bin() is None:
        missing("PostgreSQL (initdb, pg_ctl)", "run packaging/system_deps.sh (Debian package postgresql)")
    root = tempfile.mkdtemp(prefix="dynadesk-pg-")
    cluster = Cluster(root)
    yield cluster
    cluster.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(postgres):
    """The URL of a fresh, empty PostgreSQL database."""
    return postgres.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_target(request, tmp_path):
    """A server database target on each backend: a SQLite file path, then a PostgreSQL URL."""
    if request.param == "sqlite":
        return tmp_path / "server.db"
    return request.getfixturevalue("pg_url")
# --- end PostgreSQL ---------------------------------------------------------------------------------------
