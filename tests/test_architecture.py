"""Dependencies point one way: gui -> core -> (evaluator schema, sync); the evaluator stands alone."""

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_import_linter_contracts_hold():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is part of the [dev] extra"
    proc = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = {blocked!r}
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in BLOCKED:
                raise ImportError(f"{{name}} is not available in this environment")
    sys.meta_path.insert(0, Block())
""")


def _run_blocked(blocked: list[str], code: str) -> subprocess.CompletedProcess:
    script = BLOCKER.format(blocked=blocked) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)


def test_evaluator_imports_without_qt_docker_server_or_core_deps():
    """Inside the image only torch, transformers, psutil, nvidia-ml-py (and their deps) exist."""
    proc = _run_blocked(
        ["PySide6", "docker", "fastapi", "uvicorn", "sqlite_utils", "click", "yaml", "requests", "cryptography",
         "rfc8785", "tqdm"],
        """
        import importlib, pkgutil
        import dynadesk.evaluator as ev
        for m in pkgutil.walk_packages(ev.__path__, "dynadesk.evaluator."):
            importlib.import_module(m.name)
        leaked = [n for n in sys.modules if n.startswith("dynadesk.") and not n.startswith("dynadesk.evaluator")]
        assert not leaked, leaked
        print("ok")
        """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_core_package_import_is_light():
    proc = _run_blocked([], """
        import dynadesk, dynadesk.cli, dynadesk.store, dynadesk.tasks
        heavy = [m for m in ("torch", "transformers", "PySide6", "docker", "fastapi") if m in sys.modules]
        assert not heavy, heavy
        print("ok")
        """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr
