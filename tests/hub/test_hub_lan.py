"""The hub on a real office network (issue 45 item 5), as `dynadesk hub serve` subprocesses on loopback.

Seen on the old code first: `--lan` served plain HTTP with a cookie that was not Secure; X-Forwarded-For from
loopback picked the address the sign-in limit counts; reads had no limit; 1,100 slow connections under a
1024-descriptor limit made the hub log "accept() out of system resource" in a loop (tens of MB) and stop answering;
two warm-up threads raced on transformers' lazy import and printed a traceback at every start.
Floods go to loopback only, bounded in count (1,100) and time (seconds).
"""

from __future__ import annotations

import hashlib
import os
import resource
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from support.hub import build_workspace, free_port, invite

from dynadesk.workspace import Workspace

STOP_WITHIN_S = 10  # one TLS client left without its close_notify held the stop for asyncio's 30 s


@contextmanager
def hub(home: Path, log: Path, *extra: str, nofile: int | None = None, scheme: str = "http") -> Iterator[str]:
    """`dynadesk hub serve` on a free port, its output into ``log``; ``nofile`` caps its descriptors (soft = hard,
    as on a machine whose limit is that). Yields the base URL once the port accepts connections."""
    port = free_port()
    exe = str(Path(sys.executable).with_name("dynadesk"))

    def cap() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe, "--home", str(home), "hub", "serve", "--port", str(port), *extra],
                                stdout=out, stderr=subprocess.STDOUT, env=env, preexec_fn=cap)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the hub did not listen within 60 s"
                time.sleep(0.2)
        yield f"{scheme}://127.0.0.1:{port}"
    finally:
        proc.terminate()
        late = False
        try:  # a stop asked for (SIGTERM, Ctrl-C) is prompt, whatever the connections had done
            proc.wait(timeout=STOP_WITHIN_S)
        except subprocess.TimeoutExpired:
            late = True
            proc.kill()
            proc.wait()
    assert not late, f"the hub did not stop within {STOP_WITHIN_S} s of SIGTERM"


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    """A workspace with no round open (no model to load): the network cases need none."""
    home = tmp_path / "home"
    Workspace(home).open_store().close()
    return home


def _fingerprint(pem_or_der: bytes) -> str:
    der = ssl.PEM_cert_to_DER_cert(pem_or_der.decode()) if pem_or_der.startswith(b"-----") else pem_or_der
    return hashlib.sha256(der).hexdigest().upper()


def test_lan_serves_https_only_with_a_fingerprint_to_check_and_a_secure_cookie(bare: Path, tmp_path: Path):
    log = tmp_path / "hub.log"
    code = invite(bare, "ann", "annotator")
    with hub(bare, log, "--lan", scheme="https") as url:
        port = int(url.rsplit(":", 1)[1])
        with pytest.raises(requests.RequestException):  # plain HTTP is not served at all
            requests.get(url.replace("https:", "http:") + "/", timeout=5)
        cert = bare / "hub" / "tls" / "hub-cert.pem"
        assert oct((bare / "hub" / "tls" / "hub-key.pem").stat().st_mode & 0o777) == "0o600"
        deadline = time.monotonic() + 30
        while "fingerprint" not in log.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.2)
        printed = log.read_text().split("fingerprint (annotators check it in the browser): ")[1].split()[0]
        served = ssl.get_server_certificate(("127.0.0.1", port)).encode()
        assert printed.replace(":", "") == _fingerprint(cert.read_bytes()) == _fingerprint(served)
        r = requests.post(url + "/api/signin", json={"code": code}, verify=str(cert), timeout=30)
        assert r.status_code == 200, r.text
        cookie = r.headers["set-cookie"].lower()
        assert "secure" in cookie and "httponly" in cookie and "samesite=strict" in cookie
    with hub(bare, log, "--lan", scheme="https"):  # the next start keeps the same certificate
        deadline = time.monotonic() + 30
        while "fingerprint" not in log.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert printed in log.read_text()


def test_the_leads_certificate_is_used_and_a_half_pair_is_refused(bare: Path, tmp_path: Path):
    from dynadesk.hub.tls import make_self_signed

    given = make_self_signed(tmp_path / "lead", ["127.0.0.1"])
    log = tmp_path / "hub.log"
    with hub(bare, log, "--lan", "--tls-cert", str(given.cert), "--tls-key", str(given.key), scheme="https") as url:
        port = int(url.rsplit(":", 1)[1])
        served = ssl.get_server_certificate(("127.0.0.1", port)).encode()
        assert _fingerprint(served) == given.fingerprint.replace(":", "")
    exe = str(Path(sys.executable).with_name("dynadesk"))
    res = subprocess.run([exe, "--home", str(bare), "hub", "serve", "--lan", "--tls-cert", str(given.cert)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "give both --tls-cert and --tls-key" in res.stderr
    assert "Traceback" not in res.stderr


def test_x_forwarded_for_from_loopback_does_not_pick_the_sign_in_address(bare: Path, tmp_path: Path):
    with hub(bare, tmp_path / "hub.log", "--signin-rate", "3/600") as url:
        answers = [requests.post(url + "/api/signin", json={"code": "wrong"}, timeout=10,
                                 headers={"X-Forwarded-For": f"10.0.0.{i}"}).status_code for i in range(5)]
    assert answers[:3] == [401, 401, 401] and answers[3:] == [429, 429], answers
    # a proxy the lead names is believed: each forwarded address has its own allowance
    with hub(bare, tmp_path / "hub2.log", "--signin-rate", "3/600", "--trusted-proxy", "127.0.0.1") as url:
        answers = [requests.post(url + "/api/signin", json={"code": "wrong"}, timeout=10,
                                 headers={"X-Forwarded-For": f"10.0.0.{i}"}).status_code for i in range(5)]
    assert answers == [401] * 5, answers


def test_reads_are_limited_per_session(bare: Path, tmp_path: Path):
    a, b = invite(bare, "ann", "annotator"), invite(bare, "val", "validator")
    with hub(bare, tmp_path / "hub.log", "--read-rate", "5/600") as url:
        first, second = requests.Session(), requests.Session()
        assert first.post(url + "/api/signin", json={"code": a}, timeout=10).status_code == 200
        assert second.post(url + "/api/signin", json={"code": b}, timeout=10).status_code == 200
        got = [first.get(url + "/api/tasks", timeout=10) for _ in range(7)]
        assert [r.status_code for r in got] == [200] * 5 + [429, 429]
        assert int(got[-1].headers["Retry-After"]) > 0 and "reads from this session" in got[-1].json()["detail"]
        assert second.get(url + "/api/tasks", timeout=10).status_code == 200  # another session is not starved


def _slow_connections(port: int, n: int) -> list[socket.socket]:
    """``n`` connections that each send half a request head and then nothing."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        except OSError:
            s.close()
            continue
        socks.append(s)
    return socks


def _closed_by_peer(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        return s.recv(4096) == b"" or True  # EOF, or the 503 the cap answers before closing
    except BlockingIOError:
        return False
    except OSError:
        return True


def _answers(url: str) -> bool:
    try:
        return requests.get(url + "/", timeout=3).status_code == 200
    except requests.RequestException:
        return False


@pytest.mark.parametrize("extra", [(), ("--max-connections", "1000")])
def test_a_slow_connection_flood_is_bounded_and_logged_once(bare: Path, tmp_path: Path, extra: tuple[str, ...]):
    """1,100 slow connections with 1,024 descriptors: with the defaults the hub never runs out (a cap of 256, a
    10-second deadline for a request head); with a cap above the descriptor limit it runs out, says so once, and
    recovers when the deadline frees the descriptors."""
    log = tmp_path / "hub.log"
    with hub(bare, log, *extra, "--header-timeout", "3", nofile=1024) as url:
        assert _answers(url)
        port = int(url.rsplit(":", 1)[1])
        start = time.monotonic()
        socks = _slow_connections(port, 1100)
        try:
            deadline = start + 12
            while not (_answers(url) and all(_closed_by_peer(s) for s in socks)):
                assert time.monotonic() < deadline, (f"still held after 12 s: "
                                                     f"{sum(not _closed_by_peer(s) for s in socks)} connections")
                time.sleep(0.5)
            time.sleep(1)
            text = log.read_text(errors="replace")
            assert log.stat().st_size < 20_000, text[-2000:]
            assert text.count("out of system resource") <= 1
            if extra:
                assert text.count("out of system resource") == 1 and "logged once" in text
        finally:
            for s in socks:
                s.close()


@pytest.mark.parametrize("greeting", [b"", bytes.fromhex("16030100c8010000c40303")],
                         ids=["nothing", "half-a-client-hello"])
def test_a_connection_stuck_in_the_tls_handshake_is_closed_within_the_header_timeout(bare: Path, tmp_path: Path,
                                                                                   greeting: bytes):
    """Seen on the old code: a connection to the `--lan` hub that never finished its TLS handshake (it sent
    nothing, or half a ClientHello) held its descriptor for asyncio's 60 s, whatever `--header-timeout` said
    (uvicorn passes no handshake timeout, and its request-head deadline starts after the handshake). Now the
    handshake has the header timeout too; other clients are served meanwhile."""
    log = tmp_path / "hub.log"
    with hub(bare, log, "--lan", "--header-timeout", "2", scheme="https") as url:
        port = int(url.rsplit(":", 1)[1])
        stuck = []
        for _ in range(40):
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(greeting) if greeting else None
            stuck.append(s)
        start = time.monotonic()
        try:
            assert requests.get(url + "/", verify=False, timeout=5).status_code == 200  # served meanwhile
            while not all(_closed_by_peer(s) for s in stuck):
                assert time.monotonic() - start < 6, (f"{sum(not _closed_by_peer(s) for s in stuck)} handshakes "
                                                      "still held 6 s after they stalled (header timeout 2 s)")
                time.sleep(0.25)
        finally:
            for s in stuck:
                s.close()


def test_warm_up_threads_do_not_race_on_the_lazy_import(tmp_path: Path):
    home = tmp_path / "home"
    build_workspace(home, tmp_path / "models")  # two targets (sentiment and QA), both transformers models
    log = tmp_path / "hub.log"
    with hub(home, log) as url:
        assert _answers(url)
        deadline = time.monotonic() + 60  # the race showed while both loaded: wait until the hub says they did
        while sum(log.read_text(errors="replace").count(x) for x in (" ready (loaded in ", " did not load: ")) < 2:
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
    text = log.read_text(errors="replace")
    assert "tiny-qa, tiny-sentiment" in text
    assert "target model tiny-qa ready" in text and "target model tiny-sentiment ready" in text, text[-3000:]
    assert "Traceback" not in text and "has no attribute" not in text, text[-3000:]


RACE = """
import sys, threading
from pathlib import Path
from dynadesk.models.live import LivePredictor
from dynadesk.workspace import Workspace
store = Workspace(Path(sys.argv[1])).open_store()
records = [store.models.get(n) for n in ("tiny-sentiment", "tiny-qa")] * 3
gate = threading.Barrier(len(records))
failed = []
def load(record):
    gate.wait()
    try:
        LivePredictor(capacity=1).warm(record)
    except Exception as exc:  # the race shows as AttributeError from transformers' lazy module
        failed.append(f"{type(exc).__name__}: {exc}")
threads = [threading.Thread(target=load, args=(r,)) for r in records]
[t.start() for t in threads]
[t.join() for t in threads]
print("FAILED" if failed else "OK", failed[:1])
"""


def test_model_loads_started_together_do_not_race(tmp_path: Path):
    """Six warm-ups released at once by a barrier, in a fresh process (transformers not yet imported)."""
    home = tmp_path / "home"
    build_workspace(home, tmp_path / "models")
    res = subprocess.run([sys.executable, "-c", RACE, str(home)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    assert res.returncode == 0 and res.stdout.startswith("OK"), res.stdout + res.stderr[-2000:]
