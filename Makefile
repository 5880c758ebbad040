# The two commands of README.md.  Both build the virtual environment from pyproject.toml first,
# so a fresh machine needs nothing but python3 (>= 3.11) and make.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
# Data mirrors, searched in order for <audit>/<file>: the shipped audits' and the extra datasets'.
MIRROR  ?= ../shared/datasets ../shared/datasets-extra
empty   :=
space   := $(empty) $(empty)

.PHONY: results test lint clean

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

## Fetch and verify the raw data, then run the full S0-S4 grid on every shipped audit.
results: $(VENV)/.installed
	$(BIN)/faircode data fetch $(foreach m,$(MIRROR),--mirror $(m))
	$(BIN)/faircode run --out results

## The default test suite (tests marked slow are excluded; `make test PYTEST_ARGS='-m slow'`).
test: $(VENV)/.installed
	@# pytest exits 5 when it collected no test: that must fail, never pass silently.
	FAIRCODE_DATA_MIRROR=$(subst $(space),:,$(abspath $(MIRROR))) $(BIN)/python -m pytest $(PYTEST_ARGS); \
	rc=$$?; if [ $$rc -eq 5 ]; then echo 'no tests were collected' >&2; exit 1; fi; exit $$rc

lint: $(VENV)/.installed
	$(BIN)/ruff check faircode tests bench
	$(BIN)/mypy faircode

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .hypothesis
