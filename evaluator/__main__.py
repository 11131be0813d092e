"""``python -m dynadesk.evaluator run --spec /spec/spec.json --out /out [--model /model] [--data /data]
[--loadgen /loadgen/s]``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynadesk.evaluator",
                                     description="DynaDesk evaluation worker (runs in the sandbox).")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="evaluate one spec")
    run.add_argument("--spec", type=Path, default=Path("/spec/spec.json"))
    run.add_argument("--out", type=Path, default=Path("/out"))
    run.add_argument("--model", type=Path, default=Path("/model"))
    run.add_argument("--data", type=Path, default=Path("/data"))
    run.add_argument("--loadgen", type=Path, default=None, help="the host's socket: it issues the timed queries")
    sub.add_parser("version", help="print the schema and evaluator code versions")
    args = parser.parse_args(argv)
    if args.command == "run":  # before torch allocates anything: memory is measured under this setting
        from dynadesk.evaluator.allocator import fix_malloc

        fix_malloc()
    # Must precede CUDA initialisation for deterministic cuBLAS; offline always.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.command == "version":
        from dynadesk.evaluator.schema import SCHEMA_VERSION, evaluator_version

        print(f"schema {SCHEMA_VERSION}\nevaluator {evaluator_version()}")
        return 0
    from dynadesk.evaluator.worker import main_run

    return main_run(args.spec, args.out, args.model, args.data, args.loadgen)


if __name__ == "__main__":
    sys.exit(main())
