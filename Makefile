# DynaDesk — the two set-up commands are `make demo` and `make test`.
# Both do all set-up themselves on a fresh Debian machine and are fast when it is done.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-16)
PYTEST_ARGS ?=
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: venv system-deps docker demo test test-fast test-long lint bench bench-env gui dist screenshots board-screenshots clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing DynaDesk and its dependencies into $(VENV) (torch pinned to the CPU wheel) ..."
	@$(PY) -m pip install -q --disable-pip-version-check --upgrade pip > $(VENV)/install.log 2>&1 || { tail -40 $(VENV)/install.log; exit 1; }
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[gui,server,queue,dev]' >> $(VENV)/install.log 2>&1 || { tail -60 $(VENV)/install.log; exit 1; }
	@rm -f $(VENV)/.installed-*; touch $(STAMP)

venv: $(STAMP)

system-deps:
	@bash packaging/system_deps.sh

docker: system-deps
	@bash packaging/start_docker.sh || { [ "$$CI" = "true" ] && exit 1 || echo "(no Docker daemon: docker tests will be skipped locally, and fail in CI)"; }

demo: venv
	@-bash packaging/system_deps.sh >/dev/null 2>&1 || true
	@-bash packaging/start_docker.sh 2>/dev/null || true
	@$(VENV)/bin/dynadesk demo

# two phases (packaging/run_tests.sh): the I/O-bound tests on pytest-xdist workers, then the `serial` ones alone;
# DYNADESK_TEST_WORKERS=0 runs the whole suite in one process as before

test: venv docker
	@PYTEST=$(VENV)/bin/pytest bash packaging/run_tests.sh $(PYTEST_ARGS)

# the inner loop: no Docker, PostgreSQL, Redis or browser (DEVELOPERS.md, "Tests")
test-fast: venv
	@$(VENV)/bin/pytest -q -m "not integration" $(PYTEST_ARGS)

test-long: venv docker
	@PYTEST=$(VENV)/bin/pytest bash packaging/run_tests.sh --long $(PYTEST_ARGS)

lint: venv
	@bash packaging/lint.sh

# the benchmarks' own environment (packaging/bench_env.sh): .venv plus the reference tools they compare with
bench-env: venv
	@bash packaging/bench_env.sh

bench: venv docker bench-env
	@.venv-bench/bin/python bench/run_all.py

gui: venv
	@$(VENV)/bin/dynadesk gui

screenshots: venv system-deps
	@$(PY) packaging/screenshots.py
	@$(PY) packaging/hub_screenshots.py
	@$(PY) packaging/board_screenshots.py

board-screenshots: venv system-deps
	@$(PY) packaging/board_screenshots.py

dist: venv system-deps
	@$(PY) packaging/build_dist.py

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache
