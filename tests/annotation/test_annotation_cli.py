"""Headless annotation through the CLI against the real ``minilm-sentiment`` demo model.

The demo model is built once per module with the zoo's own recipe on a small
training sample (the annotation behaviour, not the model's quality, is under
test here); every test then works in its own fresh workspace.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import REPO

from dynadesk.workspace import Workspace

DYNADESK = [str(Path(sys.executable).parent / "dynadesk")]
TEXTS = ["I loved every minute of this film", "The food was cold and the waiter was rude",
         "It is a book about a city", "What a waste of money, never again", "Best day ever, so happy",
         "The package arrived on Tuesday", "not bad at all, honestly", "I can't say I hated it",
         "The plot was thin but the acting was great"]


@pytest.fixture(scope="module")
def minilm_dir(tmp_path_factory) -> Path:
    """The real minilm-sentiment built by the demo zoo recipe (small sample) in a scratch workspace."""
    from dynadesk.models.zoo import MINILM, ZooConfig, build_demo_zoo
    from dynadesk.recipes import fetch_default_data

    ws = Workspace(tmp_path_factory.mktemp("zoo") / "ws").ensure()
    st = ws.open_store()
    cache = REPO / ".cache" / "downloads"
    cache.mkdir(parents=True, exist_ok=True)
    fetch_default_data(st, cache)
    rows = build_demo_zoo(st, ws, config=ZooConfig(train_per_source=16, dev_per_source=8), only=[MINILM])
    st.close()
    return Path(rows[0]["path"])


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run(home: Path, *args: str, ok: bool = True, stdin: str | None = None) -> Result:
    """``dynadesk --home HOME ARGS`` in this process (the live model stays warm between calls).

    A library error is reported as ``dynadesk`` reports it: exit status 1 and the message."""
    from click.testing import CliRunner

    from dynadesk.cli import cli
    from dynadesk.errors import DynaDeskError

    res = CliRunner().invoke(cli, ["--home", str(home), *args], input=stdin)
    err = ""
    if isinstance(res.exception, DynaDeskError):
        err = f"Error: {res.exception}"
    elif res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    out = Result(res.exit_code, res.stdout, err + getattr(res, "stderr", ""))
    if ok:
        assert out.returncode == 0, f"{args}: {out.stderr}"
    return out


def run_process(home: Path, *args: str) -> subprocess.CompletedProcess:
    """The installed ``dynadesk`` executable in a child process."""
    env = {**os.environ, "DYNADESK_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([*DYNADESK, *args], capture_output=True, text=True, env=env, timeout=600)


def js(home: Path, *args: str):
    return json.loads(run(home, *args, "--json").stdout)


@pytest.fixture
def session_home(tmp_path, minilm_dir) -> Path:
    home = tmp_path / "ws"
    run(home, "models", "add", str(minilm_dir), "--task", "sentiment", "--name", "minilm-sentiment")
    for name in ("a1", "a2", "a3", "v2"):
        run(home, "annotators", "add", name)
    run(home, "annotators", "add", "v1", "--role", "owner")
    run(home, "rounds", "new", "sentiment", "--model", "minilm-sentiment")
    return home


def test_scripted_session_three_create_two_validate(session_home):
    """Must show: a1-a3 create against minilm-sentiment, v1 (owner) and v2 validate; stats match by hand."""
    from dynadesk.models import predict_live

    home = session_home
    st = Workspace(home).open_store()
    said = {t: predict_live(st, "minilm-sentiment", {"statement": t})["label"] for t in TEXTS}
    st.close()
    labels = ["negative", "neutral", "positive"]
    created = []
    for i, text in enumerate(TEXTS):
        who = f"a{i % 3 + 1}"
        # every third example keeps the model's own answer as target (cannot fool it)
        target = said[text] if i % 3 == 0 else next(lab for lab in labels if lab != said[text])
        ex = js(home, "annotate", "create", "sentiment", "--input", f"statement={text}", "--target", target,
                "--annotator", who, "--time-ms", str(1000 * (i + 1)), "--explanation", "scripted")
        assert ex["fooled"] == (said[text] != target) and ex["model_output"]["label"] == said[text]
        assert ex["model_name"] == "minilm-sentiment" and ex["annotator"] == who
        created.append(ex)
    fooled = [ex for ex in created if ex["fooled"]]
    assert len(fooled) == 6

    # v2 votes on everything it is served; v1 (owner, one vote decides) approves all but one fooled example
    queue = js(home, "annotate", "queue", "sentiment", "--annotator", "v2", "--limit", "100")
    assert [ex["fooled"] for ex in queue] == sorted((ex["fooled"] for ex in queue), reverse=True)
    for ex in queue:
        run(home, "annotate", "validate", ex["uid"], "--verdict", "correct", "--annotator", "v2")
    rejected = fooled[1]["uid"]
    for ex in fooled:
        verdict = ["--verdict", "flagged", "--reason", "ambiguous"] if ex["uid"] == rejected else \
            ["--verdict", "correct"]
        out = js(home, "annotate", "validate", ex["uid"], *verdict, "--annotator", "v1")
        assert out["status"]["status"] == ("verified-not-correct" if ex["uid"] == rejected else "verified-correct")
    refused = run(home, "annotate", "validate", created[0]["uid"], "--verdict", "correct", "--annotator", "a1",
                  ok=False)
    assert refused.returncode == 1 and "cannot validate it" in refused.stderr

    [stats] = js(home, "rounds", "stats", "sentiment")
    # by hand: 9 collected, 6 fooled; verified fooled = fooled ones the owner approved = 5
    assert (stats["collected"], stats["fooled"], stats["verified_fooled"]) == (9, 6, 5)
    assert stats["mer"] == pytest.approx(6 / 9) and stats["vmer"] == pytest.approx(5 / 9)
    assert stats["median_time_ms"] == 5000
    per = {a["annotator"]: a for a in stats["annotators"]}
    for who in ("a1", "a2", "a3"):
        mine = [ex for ex in created if ex["annotator"] == who]
        n_fooled = sum(ex["fooled"] for ex in mine)
        n_vf = sum(ex["fooled"] and ex["uid"] != rejected for ex in mine)
        assert per[who]["mer"] == pytest.approx(n_fooled / 3) and per[who]["vmer"] == pytest.approx(n_vf / 3)
    assert per["v1"]["validations_given"] == 6 and per["v2"]["validations_given"] == 9
    text = run(home, "rounds", "stats", "sentiment").stdout
    assert f"MER {100 * 6 / 9:.1f}%" in text and f"vMER {100 * 5 / 9:.1f}%" in text

    # close the loop: register the verified-fooled examples as an evaluation dataset
    reg = js(home, "annotate", "export", "sentiment", "--status", "verified-fooled", "--register", "adv-r1")
    assert reg["size"] == 5
    listed = {d["name"]: d for d in js(home, "data", "list")}
    assert listed["adv-r1"]["digest"] == reg["digest"]
    exported = Path(home) / "r1.jsonl"
    run(home, "annotate", "export", "sentiment", "--status", "verified-fooled", "-o", str(exported))
    d1 = js(home, "data", "import", str(exported), "--task", "sentiment", "--name", "adv-import-1")["digest"]
    d2 = js(home, "data", "import", str(exported), "--task", "sentiment", "--name", "adv-import-2")["digest"]
    assert d1 == d2 == reg["digest"]


def test_listing_commands_have_json(session_home):
    home = session_home
    assert [a["name"] for a in js(home, "annotators", "list")] == ["a1", "a2", "a3", "v1", "v2"]
    assert [a["active"] for a in js(home, "annotators", "list")] == [True, False, False, False, False]
    run(home, "annotators", "use", "a2")
    assert js(home, "annotators", "list")[1]["active"] is True
    [rnd] = js(home, "rounds", "list", "sentiment")
    assert (rnd["number"], rnd["status"], rnd["models"][0]["name"]) == (1, "open", "minilm-sentiment")
    ex = js(home, "annotate", "create", "sentiment", "--input", "statement=meh", "--target", "neutral")
    assert ex["annotator"] == "a2"  # the active one
    assert [e["uid"] for e in js(home, "annotate", "list", "sentiment")] == [ex["uid"]]
    assert js(home, "annotate", "queue", "sentiment", "--annotator", "a1")[0]["uid"] == ex["uid"]
    assert js(home, "annotate", "context", "sentiment") is None
    bad = run(home, "annotate", "create", "sentiment", "--input", "statement=x", "--target", "joy", ok=False)
    assert bad.returncode == 1 and "not one of the task's labels" in bad.stderr


def test_editing_a_stored_model_response_is_reported_by_verify(session_home):
    home = session_home
    made = [js(home, "annotate", "create", "sentiment", "--input", f"statement={t}", "--target", "positive",
               "--annotator", "a1") for t in TEXTS[:3]]
    assert js(home, "annotate", "verify") == {"checked": 3, "edited": [], "held": [], "ok": True}
    victim = made[1]
    forged = dict(victim["model_output"], label="positive" if victim["model_output"]["label"] != "positive"
                  else "negative")
    con = sqlite3.connect(str(home / "dynadesk.db"))
    con.execute("UPDATE annotated_examples SET model_output = ? WHERE uid = ?", [json.dumps(forged), victim["uid"]])
    con.commit()
    con.close()
    proc = run_process(home, "annotate", "verify")  # the real executable: exit status and output
    assert proc.returncode == 1, proc.stderr
    assert f"EDITED {victim['uid']}" in proc.stdout
    assert made[0]["uid"] not in proc.stdout and made[2]["uid"] not in proc.stdout
    assert "1 of 3 examples fail the HMAC check" in proc.stderr
    rep = run(home, "annotate", "verify", "--json", ok=False)
    assert rep.returncode == 1
    assert json.loads(rep.stdout)["edited"] == [victim["uid"]]


def test_kill_9_mid_stream_keeps_every_reported_example(session_home):
    home = session_home
    env = {**os.environ, "DYNADESK_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([*DYNADESK, "annotate", "create", "sentiment", "--batch", "-", "--annotator", "a1"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    lines = [json.dumps({"inputs": {"statement": f"streamed example number {i}"}, "target": "positive",
                         "time_ms": i}) for i in range(400)]  # ~30 KB: fits the pipe buffer, never blocks
    proc.stdin.write("\n".join(lines) + "\n")
    proc.stdin.flush()
    reported = []
    deadline = time.time() + 300
    while len(reported) < 25 and time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        reported.append(line.split("\t")[0].strip())
    assert len(reported) == 25, proc.stderr.read() if proc.poll() is not None else "too slow"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    reported += [ln.split("\t")[0].strip() for ln in proc.stdout.read().splitlines() if ln.strip()]
    assert proc.returncode == -signal.SIGKILL
    con = sqlite3.connect(str(home / "dynadesk.db"))
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = {r[0] for r in con.execute("SELECT uid FROM annotated_examples")}
    con.close()
    assert set(reported) <= stored
    assert len(stored) < 400  # it really was killed mid-stream
    assert js(home, "annotate", "verify")["ok"] is True


def test_pack_and_merge_commands(session_home, tmp_path, minilm_dir):
    home = session_home
    ex = js(home, "annotate", "create", "sentiment", "--input", "statement=packed one", "--target", "neutral",
            "--annotator", "a3")
    run(home, "annotate", "validate", ex["uid"], "--verdict", "correct", "--annotator", "v2")
    pack_file = tmp_path / "machine-a.pack"
    # a3 wrote it, v2 validated it, a1 (active at the time) opened the round
    assert js(home, "annotate", "pack", str(pack_file)) == {"annotators": 3, "rounds": 1, "examples": 1,
                                                             "validations": 1}
    other = tmp_path / "machine-b"
    res = run(other, "annotate", "merge", str(pack_file), ok=False)
    assert res.returncode == 1 and "not trusted" in res.stderr and "annotate trust" in res.stderr
    run(home, "keys", "export", "-o", str(tmp_path / "a.pub"))
    assert js(other, "annotate", "trust", str(tmp_path / "a.pub"))["fingerprint"].startswith("sha256:")
    assert [k["name"] for k in js(other, "annotate", "trusted")] == ["a"]
    rep = js(other, "annotate", "merge", str(pack_file))
    assert rep["responses_checked"] == 0 and rep["responses_unchecked"] == 1 and rep["refused"] == []
    assert (rep["examples_added"], rep["validations_added"], rep["rounds_added"]) == (1, 1, 1)
    # a3 and v2 are not known on machine B: merged held, counted once B's owner accepts them
    assert (rep["examples_held"], rep["validations_held"]) == (1, 1)
    assert js(other, "annotate", "list", "sentiment") == []
    run(other, "annotators", "add", "lead", "--role", "owner")
    assert js(other, "annotate", "accept", "--as", "lead") == {"examples": 1, "validations": 1}
    assert js(other, "annotate", "merge", str(pack_file))["examples_present"] == 1
    [got] = js(other, "annotate", "list", "sentiment")
    assert got["uid"] == ex["uid"] and got["model_output"] == ex["model_output"]
    key_tag = rep["signer"].removeprefix("sha256:")[:16]  # votes from A's pack stay A's: v2@pack:<A's key>
    assert [v["annotator"] for v in got["validations"]] == [f"v2@pack:{key_tag}"]
    assert js(other, "annotate", "verify")["ok"] is True
    broken = tmp_path / "broken.pack"
    broken.write_text(pack_file.read_text()[:100])
    res = run(other, "annotate", "merge", str(broken), ok=False)
    assert res.returncode == 1 and "not valid JSON" in res.stderr


def test_batch_create_reports_bad_lines_and_keeps_the_good_ones(session_home):
    home = session_home
    lines = [json.dumps({"inputs": {"statement": "first good line"}, "target": "positive"}),
             json.dumps({"inputs": {"statement": "bad target"}, "target": "ecstatic"}),
             "{not json",
             json.dumps({"inputs": {"statement": "last good line"}, "target": "negative", "time_ms": 900})]
    res = run(home, "annotate", "create", "sentiment", "--batch", "-", "--annotator", "a2", ok=False,
              stdin="\n".join(lines) + "\n")
    assert res.returncode == 1
    assert "line 2: target 'ecstatic'" in res.stderr and "line 3:" in res.stderr
    assert "2 line(s) were not stored" in res.stderr
    printed = [ln.split("\t")[0] for ln in res.stdout.splitlines()]
    stored = js(home, "annotate", "list", "sentiment")
    assert [e["uid"] for e in stored] == printed and len(printed) == 2
    assert [e["inputs"]["statement"] for e in stored] == ["first good line", "last good line"]
    assert stored[1]["time_ms"] == 900
