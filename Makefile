# pioneer-grpc. Every target installs what it needs; `make run` and `make test`
# are the two commands a fresh machine needs.
SHELL := /bin/bash
ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
PY := $(VENV)/bin/python
BUF := $(VENV)/bin/buf
TOOLS_BIN := $(ROOT)/.tools/bin
STAMP := $(VENV)/.installed-stamp
RUNTIME_STAMP := $(VENV)/.runtime-stamp
GRPCURL := $(TOOLS_BIN)/grpcurl
GRPCURL_VERSION ?= v1.9.4
CONTRACT_IMAGE := protos/contract-image.binpb
export PATH := $(TOOLS_BIN):$(VENV)/bin:/usr/local/go/bin:$(HOME)/.cargo/bin:$(PATH)

.PHONY: help venv run test test-fast test-python test-contract proto proto-check proto-check-python \
        contract-image lint bench bench-telemetry soak clean grpcurl mutate

help:
	@echo "make help: this list. The two commands:"
	@echo "  make run             start the server (SQLite under ~/.pioneer, 127.0.0.1:50051); installs only"
	@echo "                       the server's own dependencies into .venv"
	@echo "  make test            every test: lint, buf, stubs, Python (SQLite+PostgreSQL), Go and Rust contract tests"
	@echo "Parts of make test:"
	@echo "  make test-fast       the fast tier, first in make test (under a minute): every use case on the"
	@echo "                       in-memory store, the store port's contract on it, the small unit tests"
	@echo "  make test-python     the Python tests alone, on both cores (SQLite; PostgreSQL too when"
	@echo "                       PIONEER_TEST_PG_URL is set)"
	@echo "  make test-contract   the Go and Rust contract tests against a server started for them"
	@echo "  make lint            ruff, mypy --strict, import contracts, buf lint, buf breaking"
	@echo "  make proto-check     the committed Python, Go and Rust stubs match protos/ (proto-check-python: Python only)"
	@echo "Building:"
	@echo "  make venv            .venv with the server and the dev tools (pytest, ruff, mypy, provider SDKs)"
	@echo "  make proto           regenerate Python, Go and Rust stubs and the Python client's methods from protos/"
	@echo "  make contract-image  record the contract buf breaking compares against (after a deliberate break)"
	@echo "  make grpcurl         install grpcurl into .tools/bin (Go module proxy), for docs/walkthrough.md"
	@echo "  make clean           remove .venv, .tools, clients/rust/target and .pg"
	@echo "Measuring:"
	@echo "  make bench           throughput and latency ratios against an echo RPC; telemetry on against off;"
	@echo "                       --http-listen (no page open) and kept rounds against neither; what each"
	@echo "                       provider's prompt cache serves of a long loop's bodies, and what they cost;"
	@echo "                       16 loops' PrepareTurn p99 while retention sweeps 10,000 expired threads"
	@echo "  make bench-telemetry PrepareTurn with tracing and metrics on against off (part of make bench)"
	@echo "  make soak            PrepareTurn, AppendEntries and 100 watchers for SOAK_SECONDS (default 1800) on"
	@echo "                       SQLite, then PostgreSQL (SOAK_BACKENDS); RSS flat within 10% after warm-up or exit 1"
	@echo "  make mutate          mutation testing (mutmut) of history/ and providers/ with their unit tests;"
	@echo "                       prints the counts, exit 1 when over 10% survive (docs/mutation.md; not in make test);"
	@echo "                       MUTANTS='pioneer_grpc.history*' runs one package"
	@echo "Go client (clients/go/go.mk): go-test (GO_TEST_FLAGS), go-vet, go-build, go-proto, go-proto-check,"
	@echo "  go-tools, go-load, go-agentloop"
	@echo "Rust client (clients/rust/rust.mk): rust-test, rust-clippy, rust-fmt, rust-proto, rust-proto-check,"
	@echo "  rust-example, rust-clean"

# Says what it does: the first install takes minutes, and silence looks like a hang.
# $(call INSTALL,extras): pip install -e '.$(extras)' into .venv, one line per package fetched.
define INSTALL
	@echo "== installing pioneer-grpc$(1) into .venv (the first time takes a few minutes)"
	@test -x $(PY) || { echo "-- python3 -m venv .venv"; python3 -m venv $(VENV); }
	@echo "-- upgrading pip"
	@$(PY) -m pip install -q --upgrade pip
	@echo "-- pip install -e '.$(1)': one line per package fetched"
	@set -o pipefail; $(PY) -m pip install -e '.$(1)' 2>&1 | tee $(VENV)/pip-install.log \
		| { grep --line-buffered -E '^(Collecting|Successfully installed|ERROR)' || true; } \
		|| { echo "pip install failed: the last lines of .venv/pip-install.log follow"; \
		     tail -n 30 $(VENV)/pip-install.log; exit 1; }
	@echo "== installed"
endef

# The server and the dev tools (tests, linters, provider SDKs); the server's alone come with them.
$(STAMP): pyproject.toml
	$(call INSTALL,[dev])
	@touch $@ $(RUNTIME_STAMP)

# The server's own dependencies only: what `make run` needs.
$(RUNTIME_STAMP): pyproject.toml
	$(call INSTALL,)
	@touch $@

venv: $(STAMP)

run: $(RUNTIME_STAMP)
	@echo "== starting the server (Ctrl-C stops it; the command is .venv/bin/pioneer-grpc)"
	$(VENV)/bin/pioneer-grpc serve

proto: $(STAMP) go-proto rust-proto
	$(PY) scripts/gen_python_stubs.py
	$(PY) scripts/gen_client_methods.py

proto-check-python: $(STAMP)
	@tmp=$$(mktemp -d); $(PY) scripts/gen_python_stubs.py --out $$tmp; \
	if diff -r -x __pycache__ -x __init__.py $$tmp pioneer_grpc/v1; then rm -rf $$tmp; \
	else rm -rf $$tmp; echo "committed Python stubs differ from protos/: run 'make proto'"; exit 1; fi
	@tmp=$$(mktemp); $(PY) scripts/gen_client_methods.py --out $$tmp; \
	if diff -u pioneer_grpc/client/calls.py $$tmp; then rm -f $$tmp; \
	else rm -f $$tmp; echo "pioneer_grpc/client/calls.py differs from the services: run 'make proto'"; exit 1; fi

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

# The use cases on the in-memory store (tests/fast), the port's contract on it, the small unit tests:
# no server, no database, no subprocess.
FAST_TESTS := tests/fast tests/store/contract tests/models tests/test_remembered.py tests/test_no_identity_keys.py
test-fast: $(STAMP)
	$(VENV)/bin/pytest -q -p no:cacheprovider $(FAST_TESTS) -k "not sqlite and not postgres"

# Both cores: tests are shared out as the workers free up, and an idle one takes over the other's
# queue (worksteal), so a slow test near the end does not leave a core waiting.
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist worksteal
test-python: $(STAMP)
	@if command -v go >/dev/null; then $(MAKE) --no-print-directory grpcurl; \
	else echo "-- no Go on this machine: the grpcurl tests (README, walkthrough, error details) will skip"; fi
	$(VENV)/bin/pytest -q $(PYTEST_PARALLEL)

test-contract: $(STAMP)
	bash scripts/with_server.sh $(MAKE) --no-print-directory go-test rust-test

bench: $(STAMP) go-load
	$(PY) scripts/bench.py
	$(PY) scripts/bench_cache.py
	$(PY) scripts/bench_telemetry.py
	$(PY) scripts/bench_tokenizers.py
	$(PY) scripts/bench_console.py
	$(PY) scripts/bench_console_scale.py
	$(PY) scripts/bench_retention.py

# PrepareTurn with tracing and metrics on against off (also part of `make bench`).
bench-telemetry: $(STAMP) go-load
	$(PY) scripts/bench_telemetry.py

SOAK_SECONDS ?= 1800
soak: $(STAMP)
	$(PY) scripts/soak.py --seconds $(SOAK_SECONDS)

# Mutation testing (docs/mutation.md): a fresh run every time, so the numbers are those of this tree.
# MUTATE_CHILDREN: parallel test processes; MUTANTS: mutant names or globs to run alone (one package:
# MUTANTS='pioneer_grpc.history*'), the others stay unchecked. Not part of `make test`.
MUTATE_CHILDREN ?= 2
MUTANTS ?=
mutate: $(STAMP)
	rm -rf mutants
	@echo "== mutmut run: history/ and providers/ against their unit tests ([tool.mutmut] in pyproject.toml)"
	@mkdir -p mutants; start=$$(date +%s); set -o pipefail -f; \
	$(VENV)/bin/mutmut run --max-children $(MUTATE_CHILDREN) $(MUTANTS) | tr '\r' '\n' > mutants/run.log \
		|| { tail -n 40 mutants/run.log; echo "mutmut failed: mutants/run.log holds its output"; exit 1; }; \
	echo "== took $$(( $$(date +%s) - start )) s; the last progress line: $$(tail -n 1 mutants/run.log)"
	$(PY) scripts/mutation_summary.py

# grpcurl for the walkthrough and the reflection test, from the Go module proxy. Installs only
# when missing or another version, so a changed pin reinstalls.
grpcurl:
	@mkdir -p $(TOOLS_BIN)
	@if ! go version -m $(GRPCURL) 2>/dev/null | grep -qE "^\s+mod\s+github.com/fullstorydev/grpcurl\s+$(GRPCURL_VERSION)\s"; then \
		echo "installing grpcurl $(GRPCURL_VERSION) into $(TOOLS_BIN)"; \
		GOBIN=$(TOOLS_BIN) go install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION); \
	fi

clean:
	rm -rf $(VENV) .tools clients/rust/target .pg

include clients/go/go.mk
include clients/rust/rust.mk
