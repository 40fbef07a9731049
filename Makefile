# dagq — the single entry point for developers and CI.
#   make test    install everything (virtualenv, pip packages, Azurite from npm) and run the whole suite
#   make lint    ruff + mypy
#   make bench   benchmarks under bench/ (each prints one key=value line)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
NODE_STAMP := node_modules/.installed-stamp
PYTEST_ARGS ?=

.PHONY: install test lint format bench clean

install: $(STAMP) $(NODE_STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[functions,cli,test,lint]"
	touch $@

$(NODE_STAMP): package.json
	npm install --no-audit --no-fund --loglevel=error
	touch $@

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	@set -e; for script in bench/bench_*.py; do \
		echo "== $$script"; $(PY) $$script; \
	done

clean:
	rm -rf $(VENV) node_modules .pytest_cache .mypy_cache .ruff_cache .run

# The local stack in the background (Azurite + the Functions app + cpu/gpu workers); see
# docs/local-development.md. `make up` twice is harmless; `make down` stops what it started.
.PHONY: up down
up: install
	$(PY) -m devtools.stack up

down:
	@test -x $(PY) && $(PY) -m devtools.stack down || echo "nothing to stop"

# The one-command demo: installs what is needed, starts its own local stack (Azurite, the app,
# cpu/gpu workers), runs examples/pipeline.yaml live, prints the outcome, stops everything.
.PHONY: demo
demo: install
	$(PY) -m devtools.demo
