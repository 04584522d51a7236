# chatmon: `make run` and `make test` do all their set-up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
CONSTRAINTS := -c constraints.txt
STAMP  := $(VENV)/.installed
METRICS_PORT ?= 9464
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install run test lint system-deps clean

install: $(STAMP)

# Re-install when the dependency list or the pins change.
# pip's own notes (index locations, the editable-install banner) go to a log, not to the user;
# on failure the log's tail is shown.
$(STAMP): pyproject.toml constraints.txt
	@echo "setting up $(VENV) (pip log: $(VENV)/install.log) ..."
	@$(PYTHON) -m venv $(VENV)
	@{ $(PIP) install --upgrade pip $(CONSTRAINTS) \
	  && $(PIP) install $(CONSTRAINTS) torch==2.13.0 \
	  && $(PIP) install $(CONSTRAINTS) -e ".[dev]"; } > $(VENV)/install.log 2>&1 \
	  || { tail -n 40 $(VENV)/install.log; echo "pip install failed: see $(VENV)/install.log"; exit 1; }
	@touch $(STAMP)

# Debian packages the integration tests run against (Prometheus, Alertmanager, Chromium).
# Skipped when present; needs root (CI and these machines run as root).
system-deps:
	@if [ -x .ci/system-deps ]; then .ci/system-deps; fi

run: install
	$(VENV)/bin/chatmon db upgrade
	$(VENV)/bin/chatmon run --metrics-port $(METRICS_PORT) examples/transcripts.jsonl
	$(VENV)/bin/chatmon report --out reports/weekly.html

# After the suite, a quick speed smoke run (fresh text, 300 turns): it prints the figures so a
# regression shows in CI's log; it fails only if the pipeline cannot run, never on a timing.
test: install system-deps
	$(PY) -m pytest -q
	$(VENV)/bin/chatmon bench --quick

lint: install
	$(VENV)/bin/ruff check pipeline detectors dashboards tests
	$(VENV)/bin/mypy detectors

clean:
	rm -rf $(VENV) chatmon.db chatmon.db-* examples/*.dlq.jsonl
