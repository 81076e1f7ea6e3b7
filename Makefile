# The README's commands: `make demo`, `make test`, `make dev`. uv is installed from PyPI if missing.
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
export DAGSTER_HOME := $(CURDIR)/dagster_home
MONTH ?= 2026-10
# `make dev DEV_FLAGS="-p 3001"` for another port; DAGSTER_HOME=... on the command line overrides.
DEV_FLAGS ?= -h 127.0.0.1 -p 3000

# The tests that read the calendar, run again with the clock 400 days ahead (Debian `faketime`):
# a month that is "not yet open" today is an ordinary past month then.
MONTH_SENSITIVE := report_pipeline_tests/intake/test_submit_refusals.py \
	report_pipeline_tests/intake/test_submission.py report_pipeline_tests/intake/test_watch.py \
	report_pipeline_tests/defs/test_overdue.py report_pipeline_tests/defs/test_month_checks.py

.PHONY: setup demo test unit check dev fixtures lint bench demo-production dev-production

# --compile-bytecode: this machine sets PYTHONDONTWRITEBYTECODE, so without .pyc files every process
# (and every new run's sqlite event-log shard, which loads alembic's migrations) compiles from source.
.venv/.synced: pyproject.toml uv.lock Makefile
	@$(UV) --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) sync --locked --quiet --compile-bytecode
	@touch $@

# uv compiles the locked packages, not this project (installed editable: its source is this folder),
# so every process that loads the definitions (the run worker of each launched run, the code server,
# every CLI call) compiled report_pipeline from source: 0.58 s of CPU to import the definitions,
# 0.39 s from .pyc (docs/performance.md, "A UI launch"). Incremental: only stale files are written.
setup: .venv/.synced
	@.venv/bin/python -m compileall -q report_pipeline

fixtures: setup  ## regenerate the committed fixture PDFs (deterministic)
	$(UV) run python -m fixtures.generate --verify

fixtures/pdfs/monthly_report.pdf:
	$(MAKE) fixtures

demo: setup fixtures/pdfs/monthly_report.pdf  ## process the sample monthly report as one partition
	$(UV) run python -m report_pipeline.demo --month $(MONTH)

# Tests run with TMPDIR on tmpfs where there is one: their throwaway Dagster instances are sqlite
# files that fsync on every commit, and on a disk that costs the quick tier about 15 %. Only with
# 4 GiB free there (a container's /dev/shm is often 64 MiB; a whole run leaves ~220 MiB).
# `make check TEST_TMPDIR=/tmp` keeps them on disk.
# Expanded only where used (check, test): other targets never run the df.
TEST_TMPDIR ?= $(shell [ -w /dev/shm ] && [ "$$(df -Pk /dev/shm | awk 'NR == 2 {print $$4}')" \
	-ge 4194304 ] 2>/dev/null && echo /dev/shm || echo "$(or $(TMPDIR),/tmp)")
# And with bytecode written and reused (__pycache__/, git-ignored) where the machine sets
# PYTHONDONTWRITEBYTECODE: else each xdist worker compiles the project and pytest rewrites every
# test module's asserts again (~3 s of CPU a worker), and so does each Python a test starts.
TEST_ENV = PYTHONDONTWRITEBYTECODE= TMPDIR=$(TEST_TMPDIR)
# The tiers are marks declared in the test files (report_pipeline_tests/conftest.py says which).
# The unit tier: pure logic, no fork, no Dagster run, no server, one process, under 30 s.
unit: setup  ## pure logic tests only (no fork, no Dagster run), in under 30 s, while editing
	REPORT_PIPELINE_TEST_TIER=unit $(TEST_ENV) $(UV) run pytest -q -p no:cacheprovider -m "not live and not slow"

# The quick tier: no test that starts a live server, on every core; a worker that runs out of
# tests takes some of another's (worksteal), so one slow file does not end the tier alone.
QUICK := -q -p no:cacheprovider -m "not live" -n auto --dist worksteal
# `make check PYTHON=3.13`: the quick tier on another Python (3.11 to 3.13), in .venv-3.13 from
# the same lock; the interpreter from pyenv when it has one, else python3.13 on PATH.
check:  ## lint and every test that needs no live server, in under 2 minutes
ifdef PYTHON
	$(eval OTHER := $(or $(wildcard $(shell pyenv prefix $(PYTHON) 2>/dev/null)/bin/python$(PYTHON)),python$(PYTHON)))
	UV_PROJECT_ENVIRONMENT=.venv-$(PYTHON) $(UV) sync --locked --quiet --compile-bytecode --python $(OTHER)
	$(TEST_ENV) UV_PROJECT_ENVIRONMENT=.venv-$(PYTHON) $(UV) run --locked --python $(OTHER) pytest $(QUICK)
else
	$(MAKE) setup
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(TEST_ENV) $(UV) run pytest $(QUICK)
endif

test: setup  ## the whole suite, plus lint (installs missing system packages first)
	bash .ci/system-packages
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(TEST_ENV) $(UV) run pytest --durations=15  # and names the 15 slowest tests
	$(TEST_ENV) faketime -f '+400d' $(UV) run pytest -q -p no:cacheprovider $(MONTH_SENSITIVE)

# `env --default-signal`: started with SIGINT ignored (`setsid make dev &` from a script), dagster
# dev would ignore SIGINT and, since it gives SIGTERM SIGINT's handler, SIGTERM too.
dev: setup  ## the Dagster UI on the embedded default (sqlite under dagster_home/)
	env --default-signal=INT,TERM $(UV) run dagster dev -w workspace.yaml $(DEV_FLAGS)

# The production configuration (deploy/production/dagster.yaml, REPORT_PIPELINE_DEPLOYMENT=production)
# on this machine: Postgres from DAGSTER_PG_URL, S3 from REPORT_PIPELINE_S3_BUCKET (+ AWS_ENDPOINT_URL);
# else a throwaway PostgreSQL server and a local moto S3 server for the command's lifetime.
demo-production: setup fixtures/pdfs/monthly_report.pdf  ## the demo on the production configuration
	$(UV) run python -m devstack.deploy_local demo --month $(MONTH)

dev-production: setup  ## the Dagster UI on the production configuration
	env --default-signal=INT,TERM $(UV) run python -m devstack.deploy_local dev $(DEV_FLAGS)

lint: setup
	$(UV) run ruff check --fix .
	$(UV) run ruff format .

bench: setup fixtures/pdfs/monthly_report.pdf  ## pipeline ratios (embedded; Postgres + S3, warm, cold and with S3 latency), janitor scaling, sensor ticks, backfill throughput, a UI launch's click to Success
	$(UV) run python -m bench.run
	$(UV) run python -m bench.production
	$(UV) run python -m bench.s3_latency
	$(UV) run python -m bench.cold
	$(UV) run python -m bench.run_worker
	$(UV) run python -m bench.janitor
	$(UV) run python -m bench.intake_sensor
	$(UV) run python -m bench.backfill --months 12
	$(UV) run python -m bench.ui_launch
