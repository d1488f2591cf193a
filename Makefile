# Two entry points for a fresh machine: `make demo` and `make test`. Both create .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
export GX_ANALYTICS_ENABLED := false
export POLARS_SKIP_CPU_CHECK := 1
export NO_MKDOCS_2_WARNING := 1

.PHONY: venv demo test lint bench clean lock docs docs-serve

venv: $(STAMP)

# Byte-compiled at install: where PYTHONDONTWRITEBYTECODE is set, every start would otherwise
# compile DuckDB's Python layer (~0.15 s of `tiercast sql`) and ours again.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check "uv>=0.9"
	$(VENV)/bin/uv pip install -q --python $(PY) -c constraints.txt --compile-bytecode -e '.[dev,airflow]'
	$(PY) -m compileall -q -j 0 dags pipelines replay schemas traces >/dev/null
	touch $(STAMP)

# Regenerate the pinned constraints after changing dependencies in pyproject.toml.
lock:
	$(VENV)/bin/uv pip compile -q pyproject.toml --extra dev --extra airflow --python-version 3.11 -o constraints.txt

# warm first: every kernel compiled once, in the cache every entry point finds (replay/numba_cache.py)
demo: $(STAMP)
	$(VENV)/bin/tiercast warm
	$(VENV)/bin/tiercast demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# Tests run on TEST_WORKERS processes (pytest-xdist; one test file stays on one worker, so module
# fixtures are built once), then the `serial` ones (timing and device-throughput assertions) alone.
TEST_WORKERS ?= 3
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(MAKE) --no-print-directory docs
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not serial" --durations=15
	$(PY) -m pytest -q -p no:xdist -m serial

# The docs site (mkdocs.yml): built into site/ with --strict, so a broken link or anchor fails. The
# generated parts (CLI reference, model parameters, seed figures) are made during the build by
# pipelines/docgen.py, from the code; nothing generated is committed.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir site

docs-serve: $(STAMP)
	$(VENV)/bin/mkdocs serve

bench: $(STAMP)
	$(PY) benchmarks/ingest.py
	$(PY) benchmarks/cache.py

# compiled code lives in the venv (.venv/var/tiercast/numba-cache); .numba-cache is where it was before
clean:
	rm -rf $(VENV) .numba-cache tiercast-data tiercast.duckdb reports .pytest_cache site
