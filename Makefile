# The two commands of README.md.  Both build the virtual environment first, so a fresh machine
# needs nothing but python3 (>= 3.11) and make.  The environment is installed from
# requirements.lock (every package pinned, with hashes), so a fresh machine runs the exact
# versions behind the committed numbers; `make lock` regenerates it from pyproject.toml.
# `make results` is the DVC pipeline (dvc.yaml): its stages run `python`, so .venv/bin goes first
# on PATH; the mirrors are absolute paths because experiments run in a copy under .dvc/tmp/exps/.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
# Data mirrors, searched in order for <audit>/<file>: the shipped audits' and the extra datasets'.
MIRROR  ?= ../shared/datasets ../shared/datasets-extra
empty   :=
space   := $(empty) $(empty)
FAIRCODE_DATA_MIRROR ?= $(subst $(space),:,$(abspath $(MIRROR)))
export FAIRCODE_DATA_MIRROR

.PHONY: results test lint lock clean

$(VENV)/.installed: pyproject.toml requirements.lock
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

## Reproduce results/ with the DVC pipeline: fetch, prepare, fit, evaluate, report and track for
## every audit of params.yaml (only the stages whose code, data or params changed re-run).
results: $(VENV)/.installed
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro

## The default test suite (tests marked slow are excluded; `make test PYTEST_ARGS='-m slow'`):
## about 11 minutes on two cores, one pytest-xdist worker per core (at most 4), each test file on
## one worker (its module and session fixtures built once there); the ten slowest tests are
## listed at the end. `make test PYTEST_ARGS='-n 0'` runs it in one process.
test: $(VENV)/.installed
	@echo "make test: the default suite, about 11 minutes on two cores (longer on a loaded machine)"
	@# pytest exits 5 when it collected no test: that must fail, never pass silently.
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -n auto --maxprocesses 4 \
	    --dist loadfile --durations=10 $(PYTEST_ARGS); \
	rc=$$?; if [ $$rc -eq 5 ]; then echo 'no tests were collected' >&2; exit 1; fi; exit $$rc

## Pin every package of the runtime, pipeline, dev and text-system dependencies, with hashes.
lock:
	$(PY) -m venv .lockenv && .lockenv/bin/pip install --quiet pip-tools
	.lockenv/bin/pip-compile --quiet --allow-unsafe --generate-hashes --strip-extras \
	    --no-emit-index-url --no-emit-find-links --extra dev --extra pipeline --extra text \
	    -o requirements.lock pyproject.toml

lint: $(VENV)/.installed
	$(BIN)/ruff check faircode tests bench
	$(BIN)/mypy faircode

clean:
	rm -rf $(VENV) .lockenv .pytest_cache .mypy_cache .hypothesis
