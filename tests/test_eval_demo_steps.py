"""The demo's per-step cost report (issue 39): wall and CPU seconds of the process, its children, its containers
(the containers' share on a real daemon: tests/test_eval_docker.py)."""

from __future__ import annotations

import subprocess
import sys
import time

from dynadesk.demo import Steps
from dynadesk.orchestration.observe import container_cpu_seconds


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_each_step_reports_its_own_cpu_and_the_table_sums_them():
    lines: list[str] = []
    steps = Steps(lines.append, 3)
    steps.start("in process")
    _burn(0.3)
    steps.start("child process")
    subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                    "while time.process_time() < end: pass"], check=True)
    steps.start("sleeping")
    time.sleep(0.3)
    steps.summary()
    own, child, idle = steps.times
    assert own.cpu_self >= 0.28 and own.cpu_children == 0 and own.cpu_containers == 0
    assert child.cpu_children >= 0.28 and child.cpu_self < 0.25
    assert idle.wall >= 0.3 and idle.cpu < 0.1
    assert sum(1 for line in lines if line.strip().startswith(("step 1:", "step 2:", "step 3:"))) == 3
    total = next(line for line in lines if line.strip().startswith("total"))
    wall, cpu = (float(x) for x in total.split()[1:3])
    assert abs(cpu - round(sum(t.cpu for t in steps.times), 1)) <= 0.11 and wall >= 0.9
    assert any("load average" in line for line in lines)


def test_no_cgroup_no_figure(tmp_path):
    assert container_cpu_seconds("0" * 64, root=tmp_path) is None
    v1 = tmp_path / "cpuacct" / "docker" / ("a" * 64)
    v1.mkdir(parents=True)
    (v1 / "cpuacct.usage").write_text("2500000000\n")
    assert container_cpu_seconds("a" * 64, root=tmp_path) == 2.5
