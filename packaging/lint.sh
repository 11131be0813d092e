#!/usr/bin/env bash
# `make lint`: ruff on the whole tree, import-linter's contracts, then mypy on the installed package layout.
# The top-level folders gui/, evaluator/, sync/ and resources/ are subpackages of dynadesk through committed links
# (dynadesk/gui -> ../gui, ...): mypy and import-linter read the repository as it is. Settings (strict core, looser
# gui/cli) are in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}

echo "ruff check ..."
"$PY" -m ruff check .
echo "import-linter (.importlinter: the dependency rules, layers, no cycles) ..."
"$PY" packaging/lint_imports.py
echo "mypy ..."
# Paths in mypy's report are mapped from the links to the folders they name (dynadesk/gui/x.py -> gui/x.py).
"$PY" -m mypy -p dynadesk 2>&1 | sed -E "s#^dynadesk/(gui|evaluator|sync|resources)/#\1/#"
exit "${PIPESTATUS[0]}"
