#!/usr/bin/env bash
# `make lint`: ruff on the whole tree, import-linter's contracts, then mypy on the installed package layout.
# setup.py maps gui/, evaluator/, sync/ and resources/ onto dynadesk.*; static tools walk folders,
# so mypy reads a symlink tree (build/typecheck/dynadesk/{gui,evaluator,sync,resources} -> the folders)
# in which every module has its import name. Settings (strict core, looser gui/cli) are in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}

TREE=build/typecheck
rm -rf "$TREE"
mkdir -p "$TREE/dynadesk"
for entry in dynadesk/*; do
    case "$(basename "$entry")" in __pycache__) continue ;; esac
    ln -s "$PWD/$entry" "$TREE/dynadesk/$(basename "$entry")"
done
for folder in gui evaluator sync resources; do
    ln -s "$PWD/$folder" "$TREE/dynadesk/$folder"
done

echo "ruff check ..."
"$PY" -m ruff check .
echo "import-linter (.importlinter: the dependency rules, layers, no cycles) ..."
"$PY" packaging/lint_imports.py
echo "mypy ..."
# Paths in mypy's report are mapped back from the symlink tree to the repository's folders.
MYPYPATH="$TREE" "$PY" -m mypy -p dynadesk 2>&1 \
    | sed -E "s#^$TREE/dynadesk/(gui|evaluator|sync|resources)/#\1/#; s#^$TREE/##"
exit "${PIPESTATUS[0]}"
