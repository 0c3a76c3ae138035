# Two entry points for users: `make e2e` (the main job; until the suite lands,
# `make cluster`) and `make test` (the project's own tests). Both install first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test lint cluster clean

install: $(STAMP)

# New top-level packages change the package map computed by setup.py: reinstall then too.
$(STAMP): pyproject.toml setup.py $(wildcard */__init__.py)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/pytest -n 2 --dist loadfile $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

cluster: $(STAMP)
	$(BIN)/nrop-cluster up $(CLUSTER_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
