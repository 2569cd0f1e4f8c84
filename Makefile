VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# pytest-xdist workers of `make test` (and test-fast, test-slow): two, the cores of CI's machine;
# much of the suite waits on subprocesses, servers and sockets. `make test JOBS=0`: one process.
JOBS ?= 2
XDIST := -n $(JOBS) --dist loadgroup

.PHONY: demo test test-fast test-slow lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/ruff format --check src tests bench examples

typecheck: $(STAMP)
	$(VENV)/bin/mypy src

test: lint typecheck
	$(PY) -m pytest $(XDIST) -W error --cov=tether --cov-report=term --cov-fail-under=90 -q

# Everything but the tests marked slow: the loop to run while editing (lint and types apart).
test-fast: $(STAMP)
	$(PY) -m pytest $(XDIST) -q -p no:cacheprovider -m "not slow"

test-slow: $(STAMP)
	$(PY) -m pytest $(XDIST) -q -p no:cacheprovider -m slow

bench: $(STAMP)
	$(PY) bench/dispatch.py
	$(PY) bench/shell.py
	$(PY) bench/import_time.py
	$(PY) bench/history.py
	$(PY) bench/history_queries.py
	$(PY) bench/process.py
	$(PY) bench/journal.py
	$(PY) bench/extension_points.py
	$(PY) bench/tools.py
	$(PY) bench/model_hooks.py
	$(PY) bench/mcp_tools.py
	$(PY) bench/executors.py
	$(PY) bench/telemetry.py
	$(PY) bench/eval.py
	$(PY) bench/cluster.py
	$(PY) bench/scale.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage
