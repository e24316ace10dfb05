# Debate Arena: the two commands of the README, the full stack, the benchmarks and the docs.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo demo-local backtest test test-fast serve manage bench docs lint format migrate services clean

# The virtualenv is made once, by $(PYTHON); a change of pyproject.toml installs into it
# again. Made again over itself by another Python (python3.11 from PATH is not always the
# one that made it), a virtualenv mixes that Python's standard library with the first
# one's interpreter and breaks.
$(STAMP): pyproject.toml
	@test -x $(PY) || command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is required ($(PYTHON) not found)"; exit 1; }
	@echo "Installing the project into $(VENV) ..." >&2
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip >&2
	@$(PY) -m pip install --quiet -e '.[dev]' >&2
	@touch $(STAMP)

# One whole debate on the embedded default: SQLite, no Redis, simulated models,
# the bundled dataset, a paper trader.
demo: $(STAMP)
	@env -u DATABASE_URL -u REDIS_URL DJANGO_SETTINGS_MODULE=arena.settings.local \
		$(PY) manage.py migrate --verbosity 0
	@env -u DATABASE_URL -u REDIS_URL DJANGO_SETTINGS_MODULE=arena.settings.local \
		$(PY) manage.py run_debate $(ARGS)

# A backtest on the embedded default: two weeks of BTC at 4h (84 debates of three simulated
# participants over two rounds), the window the command and the backtests page start from
# (2024-08-08 to 2024-08-22); ARGS adds options of manage.py backtest (--json, --every 1h,
# --cache refresh, ...).
backtest: $(STAMP)
	@env -u DATABASE_URL -u REDIS_URL DJANGO_SETTINGS_MODULE=arena.settings.local \
		$(PY) manage.py migrate --verbosity 0
	@env -u DATABASE_URL -u REDIS_URL DJANGO_SETTINGS_MODULE=arena.settings.local \
		$(PY) manage.py backtest --symbol BTC --every 4h --participants bull,bear,analyst \
		--rounds 2 $(ARGS)

# The same demo answered by a real language model on this machine (scripts/local-model:
# llama.cpp's server and a 0.5B model, installed into the user's cache on first use). The
# server keeps running for the next run; the demo's last line says so and how to stop it.
demo-local: $(STAMP)
	@env -u DATABASE_URL -u REDIS_URL DJANGO_SETTINGS_MODULE=arena.settings.local \
		$(PY) manage.py migrate --verbosity 0
	@env -u DATABASE_URL -u REDIS_URL DJANGO_SETTINGS_MODULE=arena.settings.local \
		$(PY) manage.py run_debate --local-model $(ARGS)

# The whole suite, slow end-to-end tests included, on real PostgreSQL and Redis, in
# TEST_WORKERS pytest-xdist processes (0: in this one), each with its own test database,
# Redis database and ports (arena/settings/test.py, tests/ports.py). Work stealing hands
# an idle worker the tests another has not begun, so no worker is left with a long tail.
TEST_WORKERS ?= 3
PARALLEL := -n $(TEST_WORKERS) --dist worksteal

test: $(STAMP) services
	$(VENV)/bin/pytest $(PARALLEL) $(ARGS)

test-fast: $(STAMP) services
	$(VENV)/bin/pytest $(PARALLEL) -m "not slow" $(ARGS)

services:
	@scripts/ensure-services

migrate: $(STAMP)
	$(PY) manage.py migrate

# The full stack's environment, the same for `make serve` and `make manage`: PostgreSQL
# and Redis at 127.0.0.1 unless DATABASE_URL and REDIS_URL name others.
STACK_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/arena
STACK_REDIS_URL ?= redis://127.0.0.1:6379/0
STACK_ENV = DATABASE_URL=$${DATABASE_URL:-$(STACK_DATABASE_URL)} \
	REDIS_URL=$${REDIS_URL:-$(STACK_REDIS_URL)}

# web (uvicorn), worker and beat from the Procfile, on PostgreSQL and Redis; the web
# process listens on PORT (default 8000, the port of the documentation's sessions).
serve: $(STAMP) services
	$(STACK_ENV) \
		sh -c 'psql "$${DATABASE_URL%/*}/postgres" -qtc "CREATE DATABASE $${DATABASE_URL##*/}" 2>/dev/null; \
		$(PY) manage.py migrate && $(VENV)/bin/honcho start --port $${PORT:-8000}'

# manage.py on the database and Redis `make serve` runs on:
# make manage ARGS="createsuperuser".
manage: $(STAMP)
	@$(STACK_ENV) $(PY) manage.py $(ARGS)

bench: $(STAMP) services
	$(PY) -m bench $(ARGS)

# The documentation site (mkdocs.yml, docs/) in site/; --strict fails on any warning, a
# broken link or anchor among them.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
