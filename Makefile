# Targets: `make help` lists them.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8400
SERVE_STAMP := $(VENV)/.installed-serve

.DEFAULT_GOAL := help
.PHONY: help venv run test browser lint docs bench fixtures-large clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

# Serving needs the package alone; the tests add their extras (Playwright, schemathesis, ...).
$(SERVE_STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	$(BIN)/python -m compileall -q emulator  # bytecode, as a pip install has: starts 0.1 s faster
	touch $(SERVE_STAMP)

# pytest's bytecode of what it rewrites (below) made once here, as pip makes the packages' own at
# install: on a fresh venv each of `make test`'s workers made all of it again (~7 s of CPU a
# worker). A collection error is left to the test run to report.
$(STAMP): $(SERVE_STAMP)
	$(BIN)/pip install -q -e '.[test]'
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest --collect-only -q -p no:randomly > /dev/null || true
	touch $(STAMP)

venv: $(STAMP) ## create the virtual environment and install the package with its test extras

run: $(SERVE_STAMP) ## serve on 127.0.0.1:8400 (make run PORT=N for another) with the default fixtures (installs what serving needs)
	$(BIN)/emulator serve --port $(PORT)

# Two pytest workers per core (pytest-xdist, in the test extra): the suite waits on servers,
# browsers and deadlines, which left the cores partly idle with one worker per core (on 2
# cores, one run each: 2 workers 528 s, 3 workers 490 s, 4 workers 474 s); with four they are
# busy ~97% of the run, and six were slower (489 s). worksteal: a
# worker that runs out takes the queued tests of a busy one, so the few long tests do not
# end the run alone.
TEST_WORKERS ?= $(shell $(PY) -c 'import os; print(2 * len(os.sched_getaffinity(0)))')
# pytest rewrites the asserts of the test modules and of its plugins' packages (ours, hypothesis,
# schemathesis) and caches them as bytecode, unless PYTHONDONTWRITEBYTECODE is set (as on the
# machines we measure on): then every worker, and every pytest a test starts, compiled them all again
# (collecting the suite: 15 s of CPU against 6 s with the cache; ~90 s of the suite's CPU in all).
test: $(STAMP) browser ## run the whole test suite, two workers per core
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal

# The dashboard's browser tests drive Debian's chromium-headless-shell (Chromium without its
# window and interface: ~40% less CPU than the full browser for the same tests), else chromium;
# without either (and without root and apt to install one) they skip, saying why.
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y -qq
browser: ## install Debian's chromium-headless-shell for the browser tests when it is missing (root and apt)
	@command -v chromium-headless-shell >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& apt-get update -qq && { $(APT_INSTALL) chromium-headless-shell >/dev/null || $(APT_INSTALL) chromium >/dev/null; }; } \
		|| command -v chromium >/dev/null 2>&1 \
		|| echo "no Chromium could be installed: the browser tests will be skipped"

lint: $(STAMP) ## ruff check, ruff format --check and mypy, at the versions pinned in the dev extra
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/ruff check emulator tests scripts
	$(BIN)/ruff format --check emulator tests scripts
	$(BIN)/mypy emulator scripts

docs: $(SERVE_STAMP) ## build the documentation site into build/site (strict: a broken link fails)
	$(BIN)/pip install -q -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(STAMP) ## run the benchmarks (not part of make test)
	$(BIN)/python scripts/bench_api.py
	$(BIN)/python scripts/bench_export.py
	$(BIN)/python scripts/bench_simulation.py
	$(BIN)/python scripts/bench_workspaces.py

fixtures-large: $(STAMP) ## generate 100,000 contacts / 10,000 companies into build/large-fixtures
	$(BIN)/python scripts/generate_fixtures.py --contacts 100000 --companies 10000 --seed 1 --out build/large-fixtures

clean: ## remove the virtual environment
	rm -rf $(VENV)
