"""Fixtures every area shares. Offline everywhere; Qt offscreen; Docker and Qt fail (not skip) in CI.

The suite's layout (DEVELOPERS.md, "Tests"): ``tests/<area>/test_<area>_<topic>.py``, an area's own fixtures in
``tests/<area>/conftest.py``, shared helpers in the ``support`` package (``tests/support/``), static inputs in
``tests/assets/``. Here: the workspace fixtures, the real services (Docker and the evaluator image, PostgreSQL,
redis-server, headless chromium) and the ``integration`` marker that every test using one of them gets.
"""

from __future__ import annotations

import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The CLI fits its tables to COLUMNS, else 120 when stdout is no terminal; tests expect the latter in every process,
# and pytest-xdist's workers start with COLUMNS=80 set (a narrower board drops columns the tests look for).
os.environ.pop("COLUMNS", None)

import pytest
from support import missing
from support.cpu_report import pytest_runtest_protocol  # noqa: F401 - a hook: DYNADESK_TEST_CPU_REPORT
from support.xdist_scheduler import pytest_xdist_make_scheduler  # noqa: F401 - a hook: loadfile survives a crash

# A test that uses one of these fixtures talks to a real service the suite starts (or the shared Docker daemon):
# it is marked ``integration``, so ``pytest -m "not integration"`` is the fast inner loop.
INTEGRATION_FIXTURES = frozenset({"docker_client", "evaluator_image", "postgres", "pg_url", "redis_server", "browser"})
INTEGRATION_MARKERS = frozenset({"docker", "browser"})

# Tests that time something or load the machine on purpose: ``make test`` runs them in a second, serial phase, after
# the rest ran in parallel (packaging/run_tests.sh), so no other test's work skews their clocks and their CPU hogs
# skew no other test. A node id prefix (a folder, a file or one test) and why. ``@pytest.mark.serial`` marks one too.
SERIAL = {
    "tests/measure/": "timed windows, noise flags beside CPU hogs, runners compared by their clocks",
    "tests/eval/test_eval_thread_policy.py": "starts busy loops and reads the cores left free",
    "tests/reliability/test_reliability_load.py": "a load test bounded by the wall clock",
    "tests/eval/test_eval_run_record_scale.py::test_the_migration_stays_near_linear": "a ratio of two timings",
    "tests/eval/test_eval_request.py::test_output_without_newlines_is_handled_in_linear_time": "64 MiB in < 5 s",
    "tests/server/test_server_adversarial.py::test_a_large_non_canonical_body_without_a_key": "one POST < 0.2 s",
    "tests/hub/test_hub_browser.py::test_a_late_answer_to_the_pages_first_session_check": "the order of two requests",
    "tests/eval/test_eval_docker.py::test_hanging_model_times_out": "the model must reach its hang within 20 s",
    "tests/sync/test_sync_attest.py::test_the_attestation_flow_from_the_cli": "the audit re-measures throughput",
    "tests/gui/test_gui_stall.py::test_no_page_stalls_the_gui_thread": "GUI-thread gaps of 100 ms",
    "tests/hub/test_hub_lan.py": "handshake and header timeouts of seconds",
}
PHASES = ("all", "parallel", "serial")
# The longest files of a parallel run (minutes each: the bench smoke runs every benchmark, which judges no speed
# goal; an image rebuild; whole workflows through Docker): handed out first, so none starts last.
LONGEST_FILES = ("tests/bench/test_bench_smoke.py", "tests/eval/test_eval_docker.py",
                 "tests/eval/test_eval_demo_steps.py", "tests/tasks/test_tasks_e2e.py",
                 "tests/queue/test_queue_docs.py", "tests/gui/test_gui_evaluate.py")


def pytest_addoption(parser):
    parser.addoption("--long", action="store_true", default=False, help="also run slow suites (marked long)")
    parser.addoption("--phase", choices=PHASES, default="all",
                     help="parallel: every test but the serial ones (for pytest -n); serial: only those (make test)")


def pytest_configure(config):
    # Fuzz/crash suites read this to scale their case counts up under --long.
    if config.getoption("--long"):
        os.environ["DYNADESK_LONG"] = "1"
    if os.environ.get("PYTEST_XDIST_WORKER") and config.getoption("--phase") == "parallel":
        _torch_shares_the_cores()


def _torch_shares_the_cores() -> None:
    """A parallel-phase worker loads torch as the product's own processes do beside other work (the demo's
    training beside its image build): passive OpenMP waiting, threads for the cores free. The tests that train or
    predict in-process (the zoo, round targets, live predictions) otherwise ran torch's default, both threads
    spinning on 2 cores that four workers share: the small zoo's fixture took 165 s of a parallel phase (15 s
    alone) and, beside three busy loops, 99.6 s and 71.7 CPU-s against 45.1 s and 21.8 CPU-s waiting passively.
    The serial phase's tests time things on a quiet machine and keep the default."""
    from dynadesk.evaluator.threads import load_torch

    load_torch(others_beside=True)


def _uses_a_service(item) -> bool:
    """Docker, PostgreSQL, Redis or a browser: by fixture, by marker, or a backend parameter named postgresql
    (fixtures such as ``db_target`` take the PostgreSQL database with ``request.getfixturevalue``)."""
    if INTEGRATION_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    if any(item.get_closest_marker(name) is not None for name in INTEGRATION_MARKERS):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "postgresql" in callspec.params.values()


def _is_serial(item) -> bool:
    return item.get_closest_marker("serial") is not None or any(item.nodeid.startswith(p) for p in SERIAL)


def _keep_phase(config, items) -> None:
    """``--phase parallel`` / ``--phase serial``: deselect the other phase's tests (reported as deselected)."""
    phase = config.getoption("--phase")
    if phase == "all":
        return
    keep, drop = [], []
    for item in items:
        (keep if _is_serial(item) == (phase == "serial") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_collection_modifyitems(config, items):
    integration, serial = pytest.mark.integration, pytest.mark.serial
    for item in items:
        if item.get_closest_marker("integration") is None and _uses_a_service(item):
            item.add_marker(integration)
        if item.get_closest_marker("serial") is None and _is_serial(item):
            item.add_marker(serial)
    _keep_phase(config, items)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _heavy_files_first(items)
    if config.getoption("--long"):
        return
    skip_long = pytest.mark.skip(reason="slow suite: run with --long")
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip_long)


def _heavy_files_first(items) -> None:
    """On pytest-xdist workers (``--dist loadfile`` hands out files in this order): the longest files, those that run
    Docker, those with other services, then the rest, so no long file starts last while the other workers idle.
    Within a file the order stays; every worker sorts the same collection the same way."""
    weight: dict[str, int] = {}
    for item in items:
        w = 3 if item.nodeid.startswith(LONGEST_FILES) else \
            2 if "docker" in item.keywords or "evaluator_image" in getattr(item, "fixturenames", ()) else \
            1 if "integration" in item.keywords else 0
        weight[item.nodeid.split("::")[0]] = max(w, weight.get(item.nodeid.split("::")[0], 0))
    items.sort(key=lambda item: -weight[item.nodeid.split("::")[0]])  # stable: files and tests keep their order


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


@pytest.fixture(autouse=True)
def _cycles_collected_on_the_gui_thread(request):
    """A Qt test runs as the app does (dynadesk.gui.collector): Python's cycle collection on the GUI thread only,
    never on a job's pool thread where a Qt object in a cycle would be destroyed on the wrong thread; at the end
    one collection here, so nothing of the test is freed later on another test's thread."""
    if "qtbot" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("qapp")
    from dynadesk.gui.collector import GuiThreadCollector

    collector = GuiThreadCollector().start()
    yield
    collector.stop()


@pytest.fixture(scope="session")
def require_debootstrap():
    if shutil.which("debootstrap") is None:
        missing("debootstrap", "apt-get install debootstrap")


# --- PostgreSQL for the server tests (issue 23): one cluster per session, one database per test -----------
@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server in a temp folder (tests/support/pg.py), stopped and removed when the session ends.
    Not under pytest's tmp_path: that is private to root, and the server runs as the postgres user."""
    import tempfile

    from support.pg import Cluster, pg_bin

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


# --- the evaluator image, redis-server and headless chromium ------------------------------------------------
@pytest.fixture(scope="session")
def evaluator_image(docker_client, require_debootstrap):
    """The offline-built evaluator image, built (or found by its input digest in the repo's cache) once a session;
    tests run it by Id, so a re-tag cannot swap it."""
    from support.eval import IMAGE_CACHE

    from dynadesk.orchestration.image import build_image

    return build_image(IMAGE_CACHE, client=docker_client)


@pytest.fixture
def redis_server(tmp_path):
    """A password-protected redis-server of this test's own (a fresh broker: jobs and leases never carry over)."""
    from support.queue import serve_redis

    yield from serve_redis(tmp_path)


@pytest.fixture
def browser():
    """Headless Debian chromium through Playwright (missing pieces skip locally, fail in CI)."""
    from support.board import chromium

    yield from chromium()
