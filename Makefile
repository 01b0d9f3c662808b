# pioneer-grpc. Every target installs what it needs; `make run` and `make test`
# are the two commands a fresh machine needs.
SHELL := /bin/bash
ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
PY := $(VENV)/bin/python
BUF := $(VENV)/bin/buf
TOOLS_BIN := $(ROOT)/.tools/bin
STAMP := $(VENV)/.installed-stamp
CONTRACT_IMAGE := protos/contract-image.binpb
export PATH := $(TOOLS_BIN):$(VENV)/bin:/usr/local/go/bin:$(HOME)/.cargo/bin:$(PATH)

.PHONY: help venv run test test-python test-contract proto proto-check proto-check-python \
        contract-image lint bench bench-telemetry soak pg-start pg-stop clean

help:
	@echo "make run    start the server (SQLite under ~/.pioneer, 127.0.0.1:50051)"
	@echo "make test   every test: lint, buf, stubs, Python (SQLite+PostgreSQL), Go and Rust contract tests"
	@echo "make proto  regenerate Python, Go and Rust stubs from protos/"
	@echo "make lint   ruff, mypy --strict, import contracts, buf lint, buf breaking"
	@echo "make bench  throughput and latency ratios against an echo RPC; telemetry on against off"
	@echo "make soak   PrepareTurn, AppendEntries and 100 watchers for SOAK_SECONDS (default 1800) on SQLite,"
	@echo "            then PostgreSQL (SOAK_BACKENDS); RSS over time, flat within 10% after warm-up or exit 1"

# Says what it does: the first install takes minutes, and silence looks like a hang.
$(STAMP): pyproject.toml
	@echo "== installing pioneer-grpc and its dependencies into .venv (the first time takes a few minutes)"
	@test -x $(PY) || { echo "-- python3 -m venv .venv"; python3 -m venv $(VENV); }
	@echo "-- upgrading pip"
	@$(PY) -m pip install -q --upgrade pip
	@echo "-- pip install -e '.[dev]': one line per package fetched"
	@set -o pipefail; $(PY) -m pip install -e '.[dev]' 2>&1 | tee $(VENV)/pip-install.log \
		| { grep --line-buffered -E '^(Collecting|Successfully installed|ERROR)' || true; } \
		|| { echo "pip install failed: the last lines of .venv/pip-install.log follow"; \
		     tail -n 30 $(VENV)/pip-install.log; exit 1; }
	@touch $@
	@echo "== installed"

venv: $(STAMP)

run: $(STAMP)
	@echo "== starting the server (Ctrl-C stops it)"
	$(VENV)/bin/pioneer-grpc serve

proto: $(STAMP) go-proto rust-proto
	$(PY) scripts/gen_python_stubs.py

proto-check-python: $(STAMP)
	@tmp=$$(mktemp -d); $(PY) scripts/gen_python_stubs.py --out $$tmp; \
	if diff -r -x __pycache__ -x __init__.py $$tmp pioneer_grpc/v1; then rm -rf $$tmp; \
	else rm -rf $$tmp; echo "committed Python stubs differ from protos/: run 'make proto'"; exit 1; fi

proto-check: proto-check-python go-proto-check rust-proto-check

# A deliberate contract break regenerates the image in the same commit.
contract-image: $(STAMP)
	$(BUF) build -o $(CONTRACT_IMAGE)

lint: $(STAMP)
	$(VENV)/bin/ruff check pioneer_grpc tests scripts examples
	$(VENV)/bin/mypy pioneer_grpc
	$(VENV)/bin/lint-imports --no-cache
	$(BUF) lint
	$(BUF) breaking --against $(CONTRACT_IMAGE)

test: $(STAMP)
	bash scripts/test_all.sh

test-python: $(STAMP)
	$(VENV)/bin/pytest -q

test-contract: $(STAMP)
	bash scripts/with_server.sh $(MAKE) --no-print-directory go-test rust-test

bench: $(STAMP) go-load
	$(PY) scripts/bench.py
	$(PY) scripts/bench_telemetry.py
	$(PY) scripts/bench_tokenizers.py

# PrepareTurn with tracing and metrics on against off (also part of `make bench`).
bench-telemetry: $(STAMP) go-load
	$(PY) scripts/bench_telemetry.py

SOAK_SECONDS ?= 1800
soak: $(STAMP)
	$(PY) scripts/soak.py --seconds $(SOAK_SECONDS)

clean:
	rm -rf $(VENV) .tools clients/rust/target .pg

include clients/go/go.mk
include clients/rust/rust.mk
