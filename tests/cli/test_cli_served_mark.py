"""``dynadesk runs list`` marks a served model's runs "served, not sandboxed" in its runner column (``runs show``
already says so), beside "(sandbox)" for Docker runs and nothing for local ones."""

from __future__ import annotations

from support.gui import seed_run
from support.hub import dynadesk

from dynadesk.models.served import SERVED_NOTE
from dynadesk.workspace import Workspace

METRICS = dict(perf=80, throughput=100, memory=1, robustness=80, fairness=80)


def test_runs_list_marks_a_served_models_runs(tmp_path):
    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    seed_run(st, "alpha", "sentiment", METRICS)
    seed_run(st, "remote", "sentiment", METRICS)
    st.db.execute("UPDATE models SET kind = 'openai-served' WHERE name = 'remote'")  # as models add --served does
    st.db.conn.commit()
    st.close()
    rows = {line.split()[1]: line for line in dynadesk(home, "runs", "list").stdout.splitlines()[2:] if line.strip()}
    assert f"local ({SERVED_NOTE})" in rows["remote"] and SERVED_NOTE not in rows["alpha"], rows
