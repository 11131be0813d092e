#!/usr/bin/env bash
# `make bench`'s environment: the project's virtualenv plus the field's reference tools the benchmarks compare with
# (lm-evaluation-harness for bench_generative.py), never DynaDesk dependencies. `.venv-bench` reads every package of
# `.venv` (a .pth adds its site-packages) and adds only the references, with torch, transformers, tokenizers and
# accelerate held at `.venv`'s versions (an unpinned resolve could pull a CUDA torch). Idempotent: a second run
# that finds lm-eval importable does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=.venv
ENV=.venv-bench
LM_EVAL=lm-eval==0.4.13
if [ -x "$ENV/bin/python" ] && "$ENV/bin/python" -c "import lm_eval, dynadesk" 2>/dev/null; then
    exit 0
fi
"$BASE/bin/python" -m venv "$ENV"
site=$("$ENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
base_site=$("$BASE/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "import site; site.addsitedir('$base_site')" > "$site/zz_dynadesk_base.pth"
"$BASE/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null \
    | grep -iE '^(torch|transformers|tokenizers|accelerate|numpy|safetensors|huggingface.hub)==' > "$ENV/constraints.txt"
echo "bench env: installing $LM_EVAL into $ENV (the reference bench_generative compares with) ..."
"$ENV/bin/python" -m pip install -q --disable-pip-version-check -c "$ENV/constraints.txt" "$LM_EVAL" \
    > "$ENV/install.log" 2>&1 || { tail -30 "$ENV/install.log"; exit 1; }
"$ENV/bin/python" -c "import lm_eval, torch, dynadesk; print('bench env ready: lm-eval', lm_eval.__version__, 'torch', torch.__version__)"
