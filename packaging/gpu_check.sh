#!/usr/bin/env bash
# The GPU check: every model kind on CUDA, the profiler's GPU fields and the Docker --gpus path, one table
# (packaging/gpu_check.py says what each row checks). Without a GPU every row says "no GPU" and it exits 0.
# Usage: bash packaging/gpu_check.sh [--device cpu] [--no-docker]; record a GPU machine's table in docs/gpu.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
if [ ! -x "$PYTHON" ]; then
    PYTHON="$(command -v python3)"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >&2 || true
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec "$PYTHON" packaging/gpu_check.py "$@"
