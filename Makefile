# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint install install-test clean cli-spec

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Byte-compile the package once: the CLI starts on every agent turn, and an environment that
# sets PYTHONDONTWRITEBYTECODE would otherwise recompile memrepo's sources on every call.
$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[claude]'
	$(BIN)/python -m compileall -q memrepo
	touch $@

$(VENV)/.installed-test: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/python -m compileall -q memrepo
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: $(VENV)/.installed
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/mypy memrepo/store memrepo/review memrepo/retrieval memrepo/lifecycle memrepo/api.py \
		memrepo/errors.py memrepo/text.py memrepo/config.py memrepo/resources.py

# Lint first (seconds), then the suite.
test: lint
	$(BIN)/python -m pytest

# The fast path's option table (memrepo/cli/spec.py), generated from the typer declarations:
# run after changing the options of add, search, recall, context or the hook commands.
cli-spec: $(VENV)/.installed
	$(BIN)/python -c 'from memrepo.cli.app import write_spec; write_spec()'

clean:
	rm -rf $(VENV) build dist *.egg-info
