# The two commands of README.md.  Both build the virtual environment from pyproject.toml first,
# so a fresh machine needs nothing but python3 (>= 3.11) and make.
# `make results` is the DVC pipeline (dvc.yaml): its stages run `python`, so .venv/bin goes first
# on PATH; the mirror is an absolute path because experiments run in a copy under .dvc/tmp/exps/.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
MIRROR  ?= ../shared/datasets
FAIRCODE_DATA_MIRROR ?= $(abspath $(MIRROR))
export FAIRCODE_DATA_MIRROR

.PHONY: results test lint clean

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,pipeline]'
	touch $@

## Reproduce results/ with the DVC pipeline: fetch, prepare, fit, evaluate for every audit of
## params.yaml (only the stages whose code, data or params changed re-run).
results: $(VENV)/.installed
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro

## The default test suite (tests marked slow are excluded; `make test PYTEST_ARGS='-m slow'`).
test: $(VENV)/.installed
	@# pytest exits 5 when it collected no test: that must fail, never pass silently.
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest $(PYTEST_ARGS); \
	rc=$$?; if [ $$rc -eq 5 ]; then echo 'no tests were collected' >&2; exit 1; fi; exit $$rc

lint: $(VENV)/.installed
	$(BIN)/ruff check faircode tests bench
	$(BIN)/mypy faircode

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .hypothesis
