"""A workspace copied or moved keeps its models; folders outside it are relocated with a digest check."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from support.eval import LABELS, add_test_set
from support.tiny_models import make_tiny_classifier

from dynadesk.workspace import Workspace


def _cli(home: Path, *args: str):
    from dynadesk.cli import cli

    res = CliRunner().invoke(cli, ["--home", str(home), *args])
    res.text = res.output + ("" if res.exception is None else str(res.exception))  # type: ignore[attr-defined]
    return res


def test_cp_a_copy_evaluates_its_models_from_the_new_path(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    folder = make_tiny_classifier(Workspace(home).models_dir / "tiny", LABELS, task="sentiment")
    from dynadesk.models.registry import register_model

    register_model(st, folder, "sentiment", name="tiny")
    add_test_set(st, "set0-test", 12, seed=0, perturbed=False)
    st.close()
    stored = sqlite3.connect(str(home / "dynadesk.db")).execute("SELECT path FROM models").fetchone()[0]
    assert not Path(stored).is_absolute()

    copy = tmp_path / "elsewhere" / "ws-copy"
    copy.parent.mkdir()
    import subprocess

    subprocess.run(["cp", "-a", str(home), str(copy)], check=True)
    shutil.rmtree(home)  # the original is gone: only the copy's folder can serve the model
    res = _cli(copy, "models", "show", "tiny", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["path"] == str(copy / "models" / "tiny")
    res = _cli(copy, "eval", "tiny", "--runner", "local", "--json")
    assert res.exit_code == 0, res.output
    run = json.loads(res.output)
    assert run["status"] == "succeeded", run  # the original folder no longer exists: the copy's was used
    assert Path(run["run_dir"]).resolve().parent.parent == copy.resolve()
    assert "model 'tiny' loaded" in (Path(run["run_dir"]) / "run.log").read_text()


def test_migration_makes_existing_inside_paths_relative(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    folder = make_tiny_classifier(Workspace(home).models_dir / "tiny", LABELS, task="sentiment")
    from dynadesk.models.registry import register_model

    register_model(st, folder, "sentiment", name="tiny")
    st.close()
    con = sqlite3.connect(str(home / "dynadesk.db"))
    con.execute("UPDATE models SET path = ?", [str(folder)])  # as an older version stored it
    con.execute("DELETE FROM _sqlite_migrations WHERE migration_set = 'dynadesk.models' AND name != 'm001_models'")
    con.commit()
    con.close()
    st = Workspace(home).open_store()
    assert st.models.get("tiny").path == str(folder)
    st.close()
    stored = sqlite3.connect(str(home / "dynadesk.db")).execute("SELECT path FROM models").fetchone()[0]
    assert stored == "models/tiny"


def test_models_relocate_checks_the_digest(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    outside = make_tiny_classifier(tmp_path / "lab" / "tiny", LABELS, task="sentiment")
    res = _cli(home, "models", "add", str(outside), "--task", "sentiment", "--name", "tiny")
    assert res.exit_code == 0, res.output
    moved = tmp_path / "new-disk" / "tiny"
    moved.parent.mkdir()
    shutil.move(str(outside), str(moved))
    res = _cli(home, "models", "relocate", "tiny", str(moved))
    assert res.exit_code == 0, res.output
    st = Workspace(home).open_store()
    assert st.models.get("tiny").path == str(moved.resolve())
    st.close()
    # a folder with other content is refused, and the registration keeps its path
    other = make_tiny_classifier(tmp_path / "other", LABELS, task="sentiment", seed=7)
    res = _cli(home, "models", "relocate", "tiny", str(other))
    assert res.exit_code == 1 and "digest" in res.text, res.text
    st = Workspace(home).open_store()
    assert st.models.get("tiny").path == str(moved.resolve())
    st.close()
