# r2med: `make demo` sets up and runs the main job; `make test` sets up and runs the whole suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# CPU build of torch (lies on this machine's disk); override for a CUDA build: make test TORCH_SPEC=torch
TORCH_SPEC ?= torch==2.13.0
EXTRAS ?= dev,dense,llm,scale,lucene,rerank,mteb,plot,bright,serve

.PHONY: demo test lint install install-dev bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q "$(TORCH_SPEC)"
	$(BIN)/pip install -q -e ".[$(EXTRAS)]"
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(BIN)/r2med demo

# Tests run on every core (pytest-xdist; an idle worker takes queued tests from a busy one, and the slowest
# tests are handed out first: tests/conftest.py); PYTEST_WORKERS=0 runs them in one process.
PYTEST_WORKERS ?= auto

# Lint: ruff's checks and formatting (pyproject.toml [tool.ruff]), then mypy (strict on all of src/r2med: [tool.mypy])
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/bm25_speed.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
