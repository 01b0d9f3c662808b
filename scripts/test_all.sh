#!/usr/bin/env bash
# Everything `make test` runs, in order, with PostgreSQL started and removed here.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

for tool in go cargo; do
  command -v "$tool" >/dev/null || { echo "make test: '$tool' is required (Go and Rust contract tests)"; exit 1; }
done

echo "== the fast tier: every use case on the in-memory store, the store port's contract on it"
make --no-print-directory test-fast

echo "== lint: ruff, mypy, buf lint, buf breaking, go vet, clippy"
make --no-print-directory lint go-vet rust-clippy

echo "== generated stubs match protos/ (Python, Go, Rust)"
make --no-print-directory proto-check

# Under /tmp: the postgres user must be able to reach it whatever the clone's parents allow.
pg_dir=$(mktemp -d /tmp/pioneer-pg.XXXXXX)
pg_port=$($PY scripts/free_port.py)
cleanup() { bash scripts/pg.sh stop "$pg_dir" || true; }
trap cleanup EXIT
echo "== PostgreSQL on 127.0.0.1:$pg_port"
PIONEER_TEST_PG_URL=$(bash scripts/pg.sh start "$pg_dir" "$pg_port")
export PIONEER_TEST_PG_URL

echo "== grpcurl (the Python tests call it against a live server)"
make --no-print-directory grpcurl

echo "== Chromium for the console's browser test"
PIONEER_CHROMIUM=$(bash scripts/chromium.sh)
export PIONEER_CHROMIUM

echo "== the TypeScript/JavaScript contract client: npm packages and stubs (clients/ts)"
bash scripts/ts_client.sh >/dev/null

echo "== Python tests (SQLite and PostgreSQL), on both cores"
.venv/bin/pytest -q -p no:cacheprovider -n 2 --dist worksteal

echo "== Go and Rust contract tests against a live server"
make --no-print-directory test-contract

echo "== the Python example agent loop against a live server"
bash scripts/with_server.sh .venv/bin/python examples/agent_loop.py
