# gpuplane: `make help` lists the targets. Each target's `## text` is its help line.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CRD schemas for custom kinds; ../shared/crds beside the checkout when present.
CRDS ?= $(wildcard ../shared/crds)
export GPUPLANE_CRDS ?= $(CRDS)

.PHONY: help setup render render-check test lint types check bench clean

help: ## Show the targets and what they do
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(BIN)/gpuplane: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip==26.3
	$(BIN)/python -m pip install --quiet -e '.[dev,probes]'
	@touch $@

setup: $(BIN)/gpuplane ## Create .venv (if needed) with gpuplane and its pinned dependencies

render: setup ## Validate and render the platform in this folder into rendered/
	$(BIN)/gpuplane render

render-check: setup ## Exit 1 if rendered/ is not what the inputs render (writes nothing)
	$(BIN)/gpuplane render --check

test: setup ## Run the test suite
	$(BIN)/python -m pytest -q

lint: setup ## ruff lint and format check
	$(BIN)/ruff check renderer tests bench workflows
	$(BIN)/ruff format --check renderer tests bench workflows

types: setup ## mypy --strict on renderer/
	$(BIN)/mypy

check: lint types test render-check ## Everything CI cares about: lint, types, tests, render --check

bench: setup ## Render and validate a large synthetic platform; prints objects/s per stage
	$(BIN)/python -m bench.run

clean: ## Remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache bench/out
