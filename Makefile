# gpuplane: `make help` lists the targets. Each target's `## text` is its help line.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CRD schemas for custom kinds. This example repository commits no schema store
# (.gpuplane/schemas, docs/schema-store.md): it checks against ../shared/crds beside the checkout when
# that is there, strictly, and otherwise warns once per kind it could not check.
CRDS ?= $(wildcard ../shared/crds)
export GPUPLANE_CRDS ?= $(CRDS)
STRICT_SCHEMAS := $(if $(GPUPLANE_CRDS),--strict-schemas,)

.PHONY: help setup setup-dev render render-check test-tools test test-all measure lint types check conformance bench bench-simulate clean

# the target names bold only on a terminal, and never under NO_COLOR (https://no-color.org)
help: ## Show the targets and what they do
	@if [ -t 1 ] && [ -z "$${NO_COLOR:-}" ]; then b='\033[1m' r='\033[0m'; else b= r=; fi; \
	awk -v b="$$b" -v r="$$r" 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / \
		{printf "  %s%-14s%s %s\n", b, $$1, r, $$2}' $(MAKEFILE_LIST)

# `make render` installs what rendering needs; `make test` (and lint, types) add the dev tools
# and PyTorch for the probes' tests. The stamps are redone when pyproject.toml changes.
$(BIN)/gpuplane: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip==26.3
	$(BIN)/python -m pip install --quiet -e .
	@# an editable install leaves gpuplane's own modules uncompiled (and PYTHONDONTWRITEBYTECODE
	@# keeps them so): every command would compile them again, a tenth of a second
	$(BIN)/python -m compileall -q renderer workflows
	@touch $@

$(VENV)/.dev: $(BIN)/gpuplane
	$(BIN)/python -m pip install --quiet -e '.[dev,probes]'
	@touch $@

# IBM's network-config-analyzer, the real NetworkPolicy analyser tests/test_netpol_crosscheck.py
# checks tests/netpol.py against: in its own virtualenv, as it pins PyYAML 6.0.2 and gpuplane 6.0.4
NCA := build/nca
$(NCA)/bin/nca: tests/nca/requirements.txt
	@test -x $(NCA)/bin/python || $(PYTHON) -m venv $(NCA)
	$(NCA)/bin/python -m pip install --quiet --upgrade pip==26.3
	$(NCA)/bin/python -m pip install --quiet -r tests/nca/requirements.txt
	@touch $@

# Mermaid's own parser for tests/test_diagram.py (pinned in tests/mermaid/package-lock.json), where
# npm is here; without it those tests skip (README.md, "Tools the tests drive")
MERMAID := tests/mermaid/node_modules/.package-lock.json
$(MERMAID): tests/mermaid/package-lock.json
	@if command -v npm >/dev/null; then \
		npm ci --prefix tests/mermaid --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm is not installed: the Mermaid diagram tests will skip (README.md)"; fi

setup: $(BIN)/gpuplane ## Create .venv (if needed) with gpuplane and what rendering needs

setup-dev: $(VENV)/.dev ## ... and what the tests, lint and types need (PyTorch for the probes)

render: setup ## Validate and render the platform in this folder into rendered/
	$(BIN)/gpuplane render $(STRICT_SCHEMAS)

render-check: setup ## Exit 1 if rendered/ is not what the inputs render (writes nothing)
	$(BIN)/gpuplane render --check $(STRICT_SCHEMAS)

# the fast tier on every core (pytest-xdist: one worker per core, the tests share no state but
# their own tmp_path); TEST_WORKERS=0 runs it in this one process, as CI's make test-all does
TEST_WORKERS ?= auto

# what the tests need, the three installs side by side: they wait on downloads and the disk more
# than on the CPUs (one after another they took 100 s of a fresh clone's first `make test`)
test-tools:
	@$(MAKE) --no-print-directory -j3 $(VENV)/.dev $(NCA)/bin/nca $(MERMAID)

test: test-tools ## Run the fast tests: every stage, minutes (docs/testing.md)
	$(BIN)/python -m pytest -q -m "not slow" -n $(TEST_WORKERS)

test-all: test-tools ## Run every test, the slow ones too (what CI runs)
	$(BIN)/python -m pytest -q

lint: setup-dev ## ruff lint and format check
	$(BIN)/ruff check renderer tests bench workflows
	$(BIN)/ruff format --check renderer tests bench workflows

types: setup-dev ## mypy --strict on renderer/
	$(BIN)/mypy

check: lint types test-all render-check ## Everything CI cares about: lint, types, all tests, render --check

conformance: setup-dev ## Run the ported Kueue v0.19.2 test tables on the admission engine and the simulator
	$(BIN)/python -m tests.kueue_conformance.report

bench: setup-dev ## Time every stage and command at 1x/2x/4x of two fleet shapes, and simulate
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.simulate

bench-simulate: setup-dev ## Time gpuplane simulate on a seeded synthetic trace at three sizes
	$(BIN)/python -m bench.simulate

measure: ## Time the README's two commands on a fresh clone and write its figures (tools/measure.py)
	$(PYTHON) -m tools.measure $(if $(NOTE),--note "$(NOTE)",)

clean: ## Remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache bench/out
