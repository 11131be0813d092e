"""The LAN hub at the HTTP level (issue 37): invites, sessions, roles, CSRF, rate limits, expiry, revocation,
request ids, micro-batching and a slow model, on a real hub (uvicorn on loopback) over a real workspace with
tiny real models. No browser: tests/hub/test_hub_browser.py drives the page."""

from __future__ import annotations

import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import requests
from support.hub import QA_PASSAGES, Client, build_workspace, dynadesk, hub_in_thread, hub_process, rid

from dynadesk import annotation as ann
from dynadesk.hub import identity
from dynadesk.hub.limits import Rate
from dynadesk.tasks import get_task
from dynadesk.workspace import Workspace

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A workspace with the tiny models and open rounds, copied per test (building models is the slow part)."""
    root = tmp_path_factory.mktemp("hubapi")
    build_workspace(root / "ws", root / "models")
    return root / "ws"


@pytest.fixture
def home(base, tmp_path) -> Path:
    import shutil

    dst = tmp_path / "ws"
    shutil.copytree(base, dst)
    return dst


def _store(home: Path):
    return Workspace(home).open_store()


def _code(home: Path, name: str, role: str) -> str:
    st = _store(home)
    try:
        return identity.invite(st, name, role).code
    finally:
        st.close()


def _sentiment(client: Client, text: str = "a film i liked", target: str = "positive", **extra) -> requests.Response:
    return client.post("/api/examples", {"task": "sentiment", "inputs": {"statement": text}, "target": target,
                                         "time_ms": 1200, "request_id": rid(text), **extra})


def _examples(home: Path, task: str = "sentiment"):
    st = _store(home)
    try:
        return st.annotation.examples(task)
    finally:
        st.close()


def test_a_code_signs_in_once_and_only_hashes_are_stored(home):
    code = _code(home, "ann", "annotator")
    with hub_in_thread(home) as hub:
        first = requests.post(hub.url + "/api/signin", json={"code": code.lower()}, timeout=30)
        assert first.status_code == 200, first.text
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict"), cookie
        token = first.cookies["dynadesk_hub"]
        assert first.json()["name"] == "ann" and first.json()["role"] == "annotator"
        again = requests.post(hub.url + "/api/signin", json={"code": code}, timeout=30)
        assert again.status_code == 401 and "already used" in again.json()["detail"]
        wrong = requests.post(hub.url + "/api/signin", json={"code": "AAAA-BBBB-CCCC"}, timeout=30)
        assert wrong.status_code == 401
        assert requests.get(hub.url + "/api/me", timeout=30).status_code == 401  # no cookie: not signed in
    dump = "\n".join(sqlite3.connect(home / "dynadesk.db").iterdump())
    assert code.replace("-", "") not in dump and token not in dump
    assert identity.digest(code.replace("-", "")) in dump and identity.digest(token) in dump


def test_roles_are_enforced_by_the_server(home):
    codes = {n: _code(home, n, r) for n, r in (("ann", "annotator"), ("val", "validator"), ("boss", "owner"))}
    st = _store(home)
    ann.add_annotator(st, "localowner", "owner")
    st.close()
    with pytest.raises(Exception, match="is an owner in this workspace"):
        _code(home, "localowner", "annotator")  # a hub role never lends or takes a local role
    with hub_in_thread(home) as hub:
        a, v, boss = (Client(hub.url, codes[n]) for n in ("ann", "val", "boss"))
        refused = _sentiment(v, "validators cannot write")
        assert refused.status_code == 403 and "validator" in refused.json()["detail"]
        made = _sentiment(a, "a film i liked", "negative")
        assert made.status_code == 200, made.text
        ex = made.json()
        assert ex["annotator"] == "ann" and ex["model"] == "tiny-sentiment"
        assert ex["fooled"] == ann.is_fooled(get_task("sentiment"), "negative", ex["model_output"])
        own = a.post("/api/votes", {"uid": ex["uid"], "verdict": "correct", "request_id": rid("own")})
        assert own.status_code == 403 and "cannot validate" in own.json()["detail"]
        shown = v.get("/api/validate/next", task="sentiment").json()["example"]
        assert shown["uid"] == ex["uid"] and "annotator" not in shown  # judged without the writer's name
        ok = v.post("/api/votes", {"uid": ex["uid"], "verdict": "correct", "request_id": rid("v")})
        assert ok.status_code == 200 and ok.json()["status"]["status"] == "unverified"
        twice = v.post("/api/votes", {"uid": ex["uid"], "verdict": "correct", "request_id": rid("v2")})
        assert twice.status_code == 403 and "already validated" in twice.json()["detail"]
        settled = boss.post("/api/votes", {"uid": ex["uid"], "verdict": "correct", "request_id": rid("b")})
        assert settled.json()["status"]["status"] == "verified-correct" and \
            settled.json()["status"]["decided_by"] == "boss"
    [stored] = _examples(home)
    assert stored.annotator == "ann" and [(x.annotator, x.role) for x in stored.validations] == \
        [("val", "annotator"), ("boss", "owner")]


def test_every_writing_route_needs_the_sessions_csrf_token(home):
    codes = [_code(home, n, "annotator") for n in ("ann", "bob")]
    with hub_in_thread(home) as hub:
        a, b = Client(hub.url, codes[0]), Client(hub.url, codes[1])
        made = _sentiment(a).json()
        body = {"task": "sentiment", "inputs": {"statement": "no token"}, "target": "positive", "request_id": rid(1)}
        for headers in ({}, {"X-CSRF-Token": "0" * 64}, {"X-CSRF-Token": b.me["csrf"]}):
            r = a.http.post(hub.url + "/api/examples", json=body, headers=headers, timeout=30)
            assert r.status_code == 403 and "CSRF" in r.json()["detail"], (headers, r.text)
            r = b.http.post(hub.url + "/api/votes", json={"uid": made["uid"], "verdict": "correct",
                                                          "request_id": rid(2)},
                            headers={k: a.me["csrf"] for k in headers}, timeout=30)
            assert r.status_code == 403
            r = a.http.post(hub.url + "/api/signout", json={}, headers=headers, timeout=30)
            assert r.status_code == 403
        cross = requests.post(hub.url + "/api/signin", json={"code": _code(home, "eve", "annotator")},
                              headers={"Origin": "http://evil.example"}, timeout=30)
        assert cross.status_code == 403 and "another site" in cross.json()["detail"]
        assert a.get("/api/me").status_code == 200  # the session still works
    assert [e.inputs["statement"] for e in _examples(home)] == ["a film i liked"]  # nothing else stored
    st = _store(home)
    assert not st.annotation.examples()[0].validations
    st.close()


def test_every_writing_route_is_rate_limited(home):
    codes = [_code(home, n, "annotator") for n in ("ann", "bob", "cat")]
    with hub_in_thread(home, write_rate=Rate.per_window(3, 60), signin_rate=Rate.per_window(3, 60)) as hub:
        a, b = Client(hub.url, codes[0]), Client(hub.url, codes[1])
        texts = [f"statement {i}" for i in range(4)]
        answers = [_sentiment(a, t) for t in texts]
        assert [r.status_code for r in answers] == [200, 200, 200, 429]
        assert int(answers[-1].headers["Retry-After"]) >= 1 and "too many writes" in answers[-1].json()["detail"]
        uids = [r.json()["uid"] for r in answers[:3]]
        votes = [b.post("/api/votes", {"uid": u, "verdict": "correct", "request_id": rid(u)}) for u in uids]
        votes.append(b.post("/api/signout", {}))
        assert [r.status_code for r in votes] == [200, 200, 200, 429]
        # sign-in: three attempts per address, then even a good code waits
        bad = [requests.post(hub.url + "/api/signin", json={"code": "AAAA-BBBB-CCCC"}, timeout=30) for _ in range(1)]
        assert [r.status_code for r in bad] == [401]
        late = requests.post(hub.url + "/api/signin", json={"code": codes[2]}, timeout=30)
        assert late.status_code == 429 and "sign-in attempts" in late.json()["detail"]
    assert len(_examples(home)) == 3


def test_sessions_expire(home):
    code = _code(home, "ann", "annotator")
    with hub_in_thread(home, session_hours=1.5 / 3600) as hub:
        a = Client(hub.url, code)
        assert a.get("/api/me").status_code == 200
        token = a.http.cookies["dynadesk_hub"]
        time.sleep(2.0)
        # the browser drops the cookie at its Max-Age; a client that keeps the token is refused by the server
        stale = {"dynadesk_hub": token}
        me = requests.get(hub.url + "/api/me", cookies=stale, timeout=30)
        assert me.status_code == 401 and "expired" in me.json()["detail"]
        r = requests.post(hub.url + "/api/examples", cookies=stale, headers={"X-CSRF-Token": a.me["csrf"]},
                          json={"task": "sentiment", "inputs": {"statement": "after expiry"}, "target": "positive",
                                "request_id": rid("late")}, timeout=30)
        assert r.status_code == 401 and "expired" in r.json()["detail"]
    assert _examples(home) == []


def test_revoking_ends_sessions_and_codes_at_once(home):
    code, spare = _code(home, "ann", "annotator"), None
    with hub_in_thread(home) as hub:
        a = Client(hub.url, code)
        assert _sentiment(a, "before").status_code == 200
        spare = _code(home, "bob", "annotator")
        out = dynadesk(home, "hub", "revoke", "ann")  # the real CLI, on the database the hub serves
        assert "1 live session(s) ended" in out.stdout
        dynadesk(home, "hub", "revoke", "bob")
        r = _sentiment(a, "after")
        assert r.status_code == 401 and "revoked" in r.json()["detail"]
        assert requests.post(hub.url + "/api/signin", json={"code": spare}, timeout=30).status_code == 401
        again = Client(hub.url, _code(home, "ann", "annotator"))  # a new invite lets them back
        assert _sentiment(again, "back again").status_code == 200
    assert [e.inputs["statement"] for e in _examples(home)] == ["before", "back again"]
    status = dynadesk(home, "hub", "status", "--json").stdout
    assert '"name": "bob"' in status and '"revoked": true' in status


def test_a_retried_request_stores_one_example(home):
    code = _code(home, "ann", "annotator")
    with hub_in_thread(home) as hub:
        a = Client(hub.url, code)
        body = {"task": "sentiment", "inputs": {"statement": "sent twice"}, "target": "neutral", "request_id": rid(7)}
        first, second = a.post("/api/examples", body), a.post("/api/examples", body)
        assert first.status_code == second.status_code == 200
        assert second.json()["uid"] == first.json()["uid"] and second.json()["replayed"] is True
        bad = a.post("/api/examples", {**body, "request_id": "x"})
        assert bad.status_code == 422 and "request_id" in bad.json()["detail"]
    assert len(_examples(home)) == 1


def test_qa_answers_are_spans_of_the_pool_context(home):
    code = _code(home, "ann", "annotator")
    with hub_in_thread(home) as hub:
        a = Client(hub.url, code)
        ctx = a.get("/api/context", task="qa").json()["context"]
        assert ctx["text"] in QA_PASSAGES
        start = ctx["text"].index(" ") + 1
        end = ctx["text"].index(" ", start)
        body = {"task": "qa", "inputs": {"question": "what is the second word?"}, "context_id": ctx["id"],
                "time_ms": 10}
        for span in ({"start": 5, "end": 5}, {"start": -1, "end": 3}, {"start": 0, "end": 10_000}, {"start": "0"}):
            r = a.post("/api/examples", {**body, "answer": span, "request_id": rid(str(span))})
            assert r.status_code == 422 and "answer" in r.json()["detail"], r.text
        ok = a.post("/api/examples", {**body, "answer": {"start": start, "end": end}, "request_id": rid("qa")})
        assert ok.status_code == 200, ok.text
        ex = ok.json()
        assert ex["target"] == ctx["text"][start:end] and ex["inputs"]["context"] == ctx["text"]
        assert ex["fooled"] == ann.is_fooled(get_task("qa"), ex["target"], ex["model_output"])
    [stored] = _examples(home, "qa")
    assert stored.context_id == ctx["id"] and stored.target == ctx["text"][start:end]


def test_concurrent_requests_share_one_forward_pass(home):
    codes = [_code(home, f"p{i}", "annotator") for i in range(8)]
    with hub_in_thread(home, window_s=0.3, max_batch=16) as hub:
        people = [Client(hub.url, c) for c in codes]
        _sentiment(people[0], "warm the model")  # load it first: batching is about the warm model
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda p: _sentiment(p, f"said by {p.me['name']}"), people))
        assert all(r.status_code == 200 for r in answers), [r.text for r in answers]
        sizes = [r.json()["live"]["batch_size"] for r in answers]
        assert max(sizes) > 1, sizes
        status = people[0].get("/api/models").json()
        [row] = [s for s in status if s["model"] == "tiny-sentiment"]
        assert row["answered"] == 9 and row["batches"] < 9
    assert len(_examples(home)) == 9


def test_a_slow_model_blocks_neither_other_models_nor_pages(home):
    codes = [_code(home, n, "annotator") for n in ("slow", "fast")]
    with hub_in_thread(home) as hub:
        st = _store(home)
        batcher = hub.core.pool.for_record(st.models.get("tiny-sentiment"))
        st.close()
        real, release = batcher._run, threading.Event()

        def stuck(batch):  # the real model, made slow: it answers once the test lets it
            release.wait(30)
            return real(batch)

        batcher._run = stuck
        slow, fast = Client(hub.url, codes[0]), Client(hub.url, codes[1])
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(_sentiment, slow, "waits for the slow model")
            time.sleep(0.5)
            t0 = time.monotonic()
            assert fast.get("/api/tasks").status_code == 200
            ctx = fast.get("/api/context", task="qa").json()["context"]
            qa = fast.post("/api/examples", {"task": "qa", "inputs": {"question": "which?"}, "context_id": ctx["id"],
                                             "answer": {"start": 0, "end": 3}, "request_id": rid("fast")})
            took = time.monotonic() - t0
            busy = [s for s in fast.get("/api/models").json() if s["model"] == "tiny-sentiment"][0]
            assert qa.status_code == 200 and took < 10, took
            assert busy["busy"] is True and busy["waiting"] >= 1  # what the page shows as "busy"
            assert not pending.done()
            release.set()
            assert pending.result(timeout=60).status_code == 200


def test_the_page_loads_nothing_from_outside(home):
    with hub_in_thread(home) as hub:
        page = requests.get(hub.url + "/", timeout=30)
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert page.headers["x-frame-options"] == "DENY"
        for path in ("/", "/static/hub.js", "/static/hub.css"):
            text = requests.get(hub.url + path, timeout=30).text
            assert "http://" not in text and "https://" not in text and "//cdn" not in text, path
        assert requests.get(hub.url + "/static/../app.py", timeout=30).status_code == 404
        assert requests.get(hub.url + "/docs", timeout=30).status_code == 404


def test_serve_binds_loopback_unless_lan(home):
    with hub_process(home) as url:
        port = int(url.rsplit(":", 1)[1])
        listening = {c.laddr.ip for c in psutil.net_connections("inet") if c.status == "LISTEN" and
                     c.laddr.port == port}
        assert listening == {"127.0.0.1"}, listening


def test_a_second_store_in_the_process_keeps_the_firsts_locks(tmp_path):
    """Opening a store used to open and close the database file itself, which drops every POSIX lock the
    process's other SQLite connections held: another process then took the database for its own, and
    writes were lost (seen failing: the hub opens a store per worker thread)."""
    home = tmp_path / "ws"
    first = Workspace(home).open_store()
    try:
        identity.invite(first, "amy", "annotator")
        second = Workspace(home).open_store()  # another thread's store, in the same process
        dynadesk(home, "hub", "invite", "bob")  # another process writes, then closes
        identity.invite(first, "cat", "annotator")
        dynadesk(home, "hub", "invite", "dan")
        second.close()
    finally:
        first.close()
    names = [r[0] for r in sqlite3.connect(home / "dynadesk.db").execute("SELECT name FROM hub_invites ORDER BY name")]
    assert names == ["amy", "bob", "cat", "dan"]


def test_a_room_signing_in_at_once_is_let_in(home):
    """30 people press "Sign in" together: each gets a session (seen failing: a read-then-write transaction
    under a deferred BEGIN got "database is locked" at once, a 500, for 13 of 30)."""
    codes = [_code(home, f"p{i:02d}", "annotator") for i in range(30)]
    with hub_in_thread(home, signin_rate=Rate.per_window(1000, 1)) as hub:
        with ThreadPoolExecutor(30) as pool:
            answers = list(pool.map(lambda c: requests.post(hub.url + "/api/signin", json={"code": c}, timeout=120),
                                    codes))
        assert [r.status_code for r in answers] == [200] * 30, [r.text for r in answers if r.status_code != 200]
    st = _store(home)
    try:
        assert len(st.hub.sessions()) == 30
    finally:
        st.close()


EMOTION_YAML = """name: emotion
title: Emotion
description: Which emotion does the statement express?
inputs:
  - name: statement
    description: The text.
output:
  kind: label
  labels: [joy, anger, fear]
metric: macro_f1
fooled_rule:
  kind: label_mismatch
validation:
  votes_needed: 2
"""


def test_every_bundled_task_and_a_workspace_task_works(home, tmp_path):
    """Each bundled task with an open round (NLI's context is typed, QA's comes from the pool) and a task the
    workspace added itself: listed by the hub, an example created and answered by its target model."""
    from support.annotation import NLI_LABELS, build_tiny_models, register
    from support.tiny_models import make_tiny_classifier

    from dynadesk.tasks import load_tasks, parse_task_text

    st = _store(home)
    try:
        models = {"nli": build_tiny_models(tmp_path / "more")["nli"],
                  "hate": make_tiny_classifier(tmp_path / "hate", ["not-hateful", "hateful"], task="hate_speech"),
                  "emo": make_tiny_classifier(tmp_path / "emo", ["joy", "anger", "fear"], task="emotion",
                                              inputs=["statement"])}
        st.tasks.add(parse_task_text(EMOTION_YAML, "emotion.yaml"), EMOTION_YAML)
        for key, task in (("nli", "nli"), ("hate", "hate_speech"), ("emo", "emotion")):
            register(st, models, key, task)
            ann.new_round(st, task, [f"tiny-{key}"])
        bundled = sorted(t for t, v in load_tasks().items() if v.source != "workspace")
    finally:
        st.close()
    code = _code(home, "ann", "annotator")
    with hub_in_thread(home) as hub:
        a = Client(hub.url, code)
        offered = {t["name"]: t for t in a.get("/api/tasks").json()}
        assert set(bundled) <= set(offered) and "emotion" in offered, sorted(offered)
        bodies = {
            "sentiment": {"inputs": {"statement": "fine"}, "target": "neutral"},
            "hate_speech": {"inputs": {"statement": "people from my town are great"}, "target": "not-hateful"},
            "nli": {"inputs": {"context": "a dog runs in the park", "hypothesis": "an animal moves"},
                    "target": NLI_LABELS[0]},
            "emotion": {"inputs": {"statement": "what a day"}, "target": "joy"},
        }
        ctx = a.get("/api/context", task="qa").json()["context"]
        bodies["qa"] = {"inputs": {"question": "what?"}, "context_id": ctx["id"], "answer": {"start": 0, "end": 4}}
        for task in offered:
            r = a.post("/api/examples", {"task": task, "request_id": rid(task), **bodies[task]})
            assert r.status_code == 200, (task, r.text)
            assert r.json()["model"] == offered[task]["targets"][0]
    st = _store(home)
    try:
        assert {t: len(st.annotation.examples(t)) for t in offered} == {t: 1 for t in offered}
    finally:
        st.close()
