# courtly: the two commands a newcomer needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed
# The oldest Scrapy the add-on supports, beside the newest (the test extra): its own
# directory on PYTHONPATH, sharing the venv's other dependencies (about 6 s to install).
SCRAPY_OLDEST      = $(VENV)/scrapy-oldest
SCRAPY_OLDEST_PINS = 'scrapy==2.13.4' 'twisted==25.5.0'
# The suite runs on TEST_WORKERS worker processes (pytest-xdist): a module (a class, for
# a test class) is one unit, handed out longest first (tests/conftest.py). The default,
# 2, halves the suite's time on two cores; TEST_WORKERS=0 runs it in one process. See
# docs/testing.md for the runs on a loaded machine behind the default, and the budget.
TEST_WORKERS ?= 2

.PHONY: test lint typecheck unit demo bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,bench]'
	rm -rf $(SCRAPY_OLDEST)
	$(PY) -m pip install --quiet --no-deps --target $(SCRAPY_OLDEST) $(SCRAPY_OLDEST_PINS)
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=15 -rs

test: lint typecheck unit

demo: $(STAMP)
	$(PY) -m courtly.demo

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
