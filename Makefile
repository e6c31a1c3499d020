# courtly: the two commands a newcomer needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed
COMPILED = $(VENV)/.compiled
COMPILED_SOURCES := $(shell sed -n 's/^    "\(src\/courtly\/[a-z_/]*\.py\)",$$/\1/p' setup.py)
# The oldest Scrapy the add-on supports, beside the newest (the test extra): its own
# directory on PYTHONPATH, sharing the venv's other dependencies (about 6 s to install).
SCRAPY_OLDEST      = $(VENV)/scrapy-oldest
SCRAPY_OLDEST_PINS = 'scrapy==2.13.4' 'twisted==25.5.0'
# The suite runs on TEST_WORKERS worker processes (pytest-xdist): a module (a class, for
# a test class) is one unit, handed out longest first (tests/conftest.py). The default,
# 2, halves the suite's time on two cores; TEST_WORKERS=0 runs it in one process. See
# docs/testing.md for the runs on a loaded machine behind the default, and the budget.
TEST_WORKERS ?= 2

.PHONY: test lint typecheck unit unit-pure demo bench clean compile

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip 'setuptools>=77' wheel
	COURTLY_MYPYC=0 $(PY) -m pip install --quiet -e '.[test,bench]'
	rm -rf $(SCRAPY_OLDEST)
	$(PY) -m pip install --quiet --no-deps --target $(SCRAPY_OLDEST) $(SCRAPY_OLDEST_PINS)
	touch $(STAMP)

# The hot modules listed in setup.py, compiled in place by mypyc (about 45 s on two
# cores) once the dependencies they import are installed, and again whenever one changes:
# the suite, the demo and the benchmarks run what a compiled install runs. Without a C
# compiler the same modules run as pure Python (a notice says so; CI requires the compiled
# build). An extension whose generated C did not change is not rebuilt: it is current.
$(COMPILED): $(STAMP) $(COMPILED_SOURCES)
	@if command -v "$${CC:-cc}" >/dev/null 2>&1; then \
	  echo "compiling the hot modules (setup.py) with mypyc"; \
	  COURTLY_MYPYC=1 MYPY_CACHE_DIR=build/mypyc-cache $(PY) setup.py --quiet build_ext --inplace \
	    && find src -name '*.so' -exec touch {} +; \
	else \
	  echo "no C compiler ($${CC:-cc}): courtly runs as pure Python, about 14% more CPU a page"; \
	  find src -name '*.so' -delete; \
	fi
	touch $(COMPILED)

compile: $(COMPILED)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(COMPILED)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=15 -rs

# The compiled modules' own tests (and the store contract on the local stores) once more
# on their pure-Python source, what `pip install .` runs: a copy of src without its
# extensions first on the path (about 30 s).
PURE_TESTS = tests/unit/test_compiled.py tests/unit/url tests/unit/frontier tests/unit/parse \
	tests/unit/test_link_admission.py tests/contract/test_frontier_store.py

unit-pure: $(STAMP)
	rm -rf build/pure && mkdir -p build/pure && cp -r src/courtly build/pure/
	find build/pure -name '*.so' -delete
	COURTLY_REQUIRE_PURE=1 COURTLY_REQUIRE_COMPILED= PYTHONPATH=build/pure $(PY) -m pytest -n $(TEST_WORKERS) \
	  -p no:cacheprovider -k 'not redis' $(PURE_TESTS)

test: lint typecheck unit unit-pure

demo: $(COMPILED)
	$(PY) -m courtly.demo

bench: $(COMPILED)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build
	find src -name '*.so' -delete
