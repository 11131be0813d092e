"""The CLI is a thin layer: listing commands speak JSON, errors are clear and exit non-zero."""

import json
import subprocess
import sys

from dynadesk.cli import main


def run_cli(*args, home=None):
    env_home = ["--home", str(home)] if home else []
    return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", *env_home, *args],
                          capture_output=True, text=True)


def test_tasks_list_json_and_table(home):
    proc = run_cli("tasks", "list", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    assert {t["name"] for t in json.loads(proc.stdout)} == {"nli", "sentiment", "hate_speech", "qa"}
    table = run_cli("tasks", "list", home=home).stdout
    assert "macro_f1" in table and "span of context" in table


def test_data_import_list_show_export(home, tmp_path):
    src = tmp_path / "d.csv"
    src.write_text('id,statement,label\n1,"Loved it, truly",positive\n2,meh,neutral\n', encoding="utf-8")
    proc = run_cli("data", "import", str(src), "--task", "sentiment", "--name", "mine", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["size"] == 2
    listed = json.loads(run_cli("data", "list", "--json", home=home).stdout)
    assert [d["name"] for d in listed] == ["mine"]
    assert listed[0]["label_counts"] == {"negative": 0, "neutral": 1, "positive": 1}
    out = tmp_path / "out.jsonl"
    assert run_cli("data", "export", "mine", "-o", str(out), home=home).returncode == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["1", "2"]


def test_bad_import_exits_1_with_line_numbers(home, tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"statement": "x", "label": "nope"}\n{"statement": 3, "label": "positive"}\n')
    proc = run_cli("data", "import", str(src), "--task", "sentiment", home=home)
    assert proc.returncode == 1
    assert "line 1" in proc.stderr and "line 2" in proc.stderr and "nothing was imported" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_dataset_is_a_clear_error(home, capsys):
    try:
        main(["--home", str(home), "data", "show", "nothing-here"])
    except SystemExit as exc:
        assert exc.code == 1
    assert "no dataset named 'nothing-here'" in capsys.readouterr().err
