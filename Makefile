# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint install install-test clean

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
	$(BIN)/mypy memrepo

# Lint first (seconds), then the suite.
test: lint
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build dist *.egg-info
