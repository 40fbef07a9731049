# dagq — the single entry point for developers and CI.
#   make test    install everything (virtualenv, pip packages, Azurite from npm) and run the whole suite
#   make lint    ruff, ruff format, mypy and the import contracts (lint-imports; docs/architecture.md)
#   make infra-check  the field's tools over infra/ (checkov, kubernetes-validate, cloud-init)
#   make demo    the whole stack on this machine, running examples/pipeline.yaml (KEEP=1: stay up)
#   make screenshots  the dashboard's screenshots in .run/screenshots/ (UPDATE=1: docs/screenshots/)
#   make bench   benchmarks under bench/ (each prints one key=value line)
#   make sim     the deterministic simulation over SEEDS seeds (default 500; SEEDS=10000 for long runs)
#   make soak    the simulation for SOAK_S seconds (default 60) from a rotating start it prints
#   make rbac-check  the end-to-end scenarios under infra/'s role assignments (docs/permissions.md)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
NODE_STAMP := node_modules/.installed-stamp
CONSTRAINTS := constraints.txt
PYTEST_ARGS ?=
# The suite runs in this many pytest processes (pytest-xdist; a test module stays in one process):
# most of its time is spent waiting on subprocesses, Azurite and the browser. 0: one process.
PYTEST_WORKERS ?= 2

.PHONY: install test lint format bench sim soak clean constraints rbac-check

SEEDS ?= 500

install: $(STAMP) $(NODE_STAMP)

# Reproducible installs: every Python package at the version in constraints.txt (the versions the
# suite passed with; the Functions remote build and the worker VMs use the same file), and Azurite
# exactly as package-lock.json says (npm ci). The test and lint tools are pyproject.toml's
# [dependency-groups] (pip >= 25.1 installs them with --group: the pip upgrade comes first).
$(STAMP): pyproject.toml $(CONSTRAINTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) -e ".[functions,cli,worker]" --group test --group lint
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# After changing dependencies in pyproject.toml: install without the pins, run the suite, then
# `make constraints` records what passed (commit constraints.txt with the change).
constraints: $(STAMP)
	{ echo "# Every Python dependency of dagq pinned to the version the test suite passed with."; \
	  echo "# Used by make install, requirements.txt (Functions remote build), worker VMs and images."; \
	  echo "# Regenerate with: make constraints (see Makefile)."; \
	  $(PY) -m pip freeze --exclude-editable | grep -v '^-e '; } > $(CONSTRAINTS)

# The suite runs in a network namespace with only loopback where the machine allows it (installs
# are done by then); elsewhere it runs as it is and the in-process guard watches (tests/support/netns.py).
test: install browser
	$(PY) -m tests.support.netns $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The dashboard's browser tests drive Debian's chromium (never a browser Playwright downloads):
# installed here where it is missing (CI runs as root on a fresh Debian). Where it cannot be, those
# tests are skipped and say why.
.PHONY: browser
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (apt-get) for the dashboard's browser tests"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	      || echo "could not install chromium: the browser tests will be skipped"; \
	  else echo "chromium is missing (as root: apt-get install chromium): the browser tests will be skipped"; fi; }

# Fast (well under a minute on a warm virtualenv): each tool once, nothing installed from outside.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The field's own tools over infra/, offline (tests/infra/offline_checks.py says what each checks);
# CI runs it after make lint (.ci/run).
# checkov lives in a virtualenv of its own: its pins (pycep-parser 0.5.1, packaging < 24) conflict
# with dagq's (constraints-checkov.txt). cloud-init comes from Debian (installed here when missing,
# as root with apt-get, as on CI).
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed-stamp
$(CHECKOV_STAMP): constraints-checkov.txt
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet -c constraints-checkov.txt checkov
	touch $@

.PHONY: infra-check cloud-init
cloud-init:
	@command -v cloud-init >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing cloud-init (apt-get) for make infra-check"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends cloud-init >/dev/null; \
	  else echo "cloud-init is missing: apt-get install cloud-init (as root)"; exit 1; fi; }

infra-check: $(STAMP) $(CHECKOV_STAMP) cloud-init
	$(PY) -m tests.infra.offline_checks --checkov $(CHECKOV_VENV)/bin/checkov \
	  --kubernetes-validate $(VENV)/bin/kubernetes-validate --cloud-init "$$(command -v cloud-init)"

# Every storage call of the end-to-end scenarios, checked against infra/'s role assignments as Azure
# would check it: fails on a refusal (a role the code needs is missing), on a role no call used
# (least privilege) and on a call docs/permissions.md does not list (docs/storage.md "Permissions").
# make test runs the same tests; RBAC_USAGE keeps the run's record for `devtools.permissions docs`.
RBAC_USAGE ?= .run/rbac/usage.jsonl
rbac-check: install
	mkdir -p $(dir $(RBAC_USAGE)) && rm -f $(RBAC_USAGE)
	$(PY) -m tests.infra.permission_model
	DAGQ_RBAC_SCENARIO_USAGE=$(abspath $(RBAC_USAGE)) $(PY) -m tests.support.netns $(PY) -m pytest -q \
	  tests/cli/test_rbac_scenarios.py tests/infra/test_permission_model.py tests/storage/test_rbac_guard.py
	$(PY) -m devtools.permissions check $(RBAC_USAGE)

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	@set -e; for script in bench/bench_*.py; do \
		echo "== $$script"; $(PY) $$script; \
	done

# Every seed is the whole system (API, coordinators, workers, storage faults) on a virtual clock;
# a failing seed prints its replay command (docs/simulation.md).
sim: $(STAMP)
	PYTHONHASHSEED=0 $(PY) -m sim --seeds $(SEEDS)

# Time-boxed: new seeds every run (the start moves every minute and is printed first, so a failing
# seed, or the whole run with SOAK_FIRST=N, replays exactly).
SOAK_S ?= 60
soak: $(STAMP)
	PYTHONHASHSEED=0 $(PY) -m sim --soak $(SOAK_S) $(if $(SOAK_FIRST),--first $(SOAK_FIRST))

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) node_modules .pytest_cache .mypy_cache .ruff_cache .import_linter_cache .run

# The local stack in the background (Azurite + the Functions app + cpu/gpu workers); see
# docs/local-development.md. `make up` twice is harmless; `make down` stops what it started.
.PHONY: up down
up: install
	$(PY) -m devtools.stack up --instances $(or $(INSTANCES),1)

down:
	@test -x $(PY) && $(PY) -m devtools.stack down || echo "nothing to stop"

# The one-command demo: installs what is needed, starts its own local stack (Azurite, the app,
# cpu/gpu workers), runs examples/pipeline.yaml live, prints the outcome, stops everything.
# `make demo KEEP=1` keeps the stack up until Ctrl-C: it prints the dashboard's URL and writes
# .run/demo/stack.env (`. .run/demo/stack.env` points the dagq CLI at it). Each run's logs, outputs
# and model card go to a folder of its own, .run/demo/<UTC date-time>/ (earlier runs are kept).
.PHONY: demo
demo: install
	$(PY) -m devtools.demo $(if $(KEEP),--keep)

# The dashboard's views as PNGs in .run/screenshots/ (a demo stack, a few workflows, headless
# chromium); UPDATE=1 writes them to docs/screenshots/ instead, the ones the README shows. Without
# it no tracked file changes (each run's pixels differ a little: times, ids).
.PHONY: screenshots
screenshots: install browser
	$(PY) -m devtools.screenshots $(if $(UPDATE),--update)

# The dashboard's layout library, vendored (committed) so the app needs no build step and no
# network: `make vendor-ui` after changing its pinned version in package.json.
UI_VENDOR := shared/api/ui/vendor
DAGRE := node_modules/@dagrejs/dagre
.PHONY: vendor-ui
vendor-ui: $(NODE_STAMP)
	sed '/^\/\/# sourceMappingURL=/d' $(DAGRE)/dist/dagre.min.js > $(UI_VENDOR)/dagre.min.js
	cp $(DAGRE)/LICENSE $(UI_VENDOR)/dagre.LICENSE.txt
	cp $(DAGRE)/dist/dagre.min.js.LEGAL.txt $(UI_VENDOR)/dagre.min.js.LEGAL.txt
	cp node_modules/@dagrejs/graphlib/LICENSE $(UI_VENDOR)/graphlib.LICENSE.txt
