"""No function in the package takes more than 8 parameters (issue 48 item 8), click commands aside: their parameters
are the command's options. Options that travel together are one frozen value (``BowTraining``, ``RunChange``,
``Weighting`` ...), so a ninth keyword is a sign that such a value is missing. The count is
``packaging/code_metrics.py``'s, the one the closing notes report."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from support import REPO


def _metrics():
    spec = importlib.util.spec_from_file_location("code_metrics", REPO / "packaging" / "code_metrics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_no_package_function_takes_more_than_eight_parameters():
    many = _metrics().measure(REPO).many_params
    assert not many, "group the options that travel together into a frozen dataclass: " + "; ".join(many)


def test_the_count_sees_a_ninth_parameter(tmp_path):
    """The check can fail: a planted nine-parameter function is counted, a click command's options are not."""
    (tmp_path / "dynadesk").mkdir()
    (tmp_path / "dynadesk" / "planted.py").write_text(
        "import click\n\n\n"
        "def nine(a, b, c, d, e, f, g, h, i):\n    return a\n\n\n"
        "def method_like(self, a, b, c, d, e, f, g, h):\n    return a\n\n\n"
        "@click.command()\n"
        "def command(a, b, c, d, e, f, g, h, i):\n    return a\n", encoding="utf-8")
    many = _metrics().measure(tmp_path).many_params
    assert many == ["dynadesk/planted.py:4 nine (9 parameters)"]
    out = subprocess.run([sys.executable, str(REPO / "packaging" / "code_metrics.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "    1  functions with more than 8 parameters" in out
