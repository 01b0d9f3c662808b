#!/usr/bin/env bash
# Everything `make test` runs, in order, with PostgreSQL started and removed here.
# Every suite runs even when one before it failed; the run fails at the end, naming each failed one.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

failed=()
# step NAME CMD...: runs CMD; a failure is recorded under NAME and the next step runs all the same.
step() {
  local name=$1
  shift
  echo "== $name"
  if ! "$@"; then
    echo "-- FAILED: $name"
    failed+=("$name")
  fi
}

missing=()
for tool in go cargo; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "make test: ${missing[*]} missing (the Go and Rust contract tests need go and cargo)"
  failed+=("tools: ${missing[*]} missing")
fi

step "the fast tier: every use case on the in-memory store, the store port's contract on it" \
  make --no-print-directory test-fast

step "lint: ruff, mypy, buf lint, buf breaking, go vet, clippy" make --no-print-directory lint go-vet rust-clippy

step "generated stubs match protos/ (Python, Go, Rust)" make --no-print-directory proto-check

# Under /tmp: the postgres user must be able to reach it whatever the clone's parents allow.
pg_dir=$(mktemp -d /tmp/pioneer-pg.XXXXXX)
pg_port=$($PY scripts/free_port.py)
cleanup() { bash scripts/pg.sh stop "$pg_dir" || true; }
trap cleanup EXIT
echo "== PostgreSQL on 127.0.0.1:$pg_port"
if PIONEER_TEST_PG_URL=$(bash scripts/pg.sh start "$pg_dir" "$pg_port"); then
  export PIONEER_TEST_PG_URL
else
  echo "-- FAILED: PostgreSQL did not start (the PostgreSQL tests fail or skip)"
  failed+=("PostgreSQL start")
fi

step "grpcurl (the Python tests call it against a live server)" make --no-print-directory grpcurl

echo "== Chromium for the console's browser test"
if PIONEER_CHROMIUM=$(bash scripts/chromium.sh); then
  export PIONEER_CHROMIUM
else
  echo "-- FAILED: no Chromium (the console's browser test fails or skips)"
  failed+=("Chromium")
fi

step "the TypeScript/JavaScript contract client: npm packages and stubs (clients/ts)" \
  bash -c 'bash scripts/ts_client.sh >/dev/null'

step "Python tests (SQLite and PostgreSQL), on both cores" \
  .venv/bin/pytest -q -p no:cacheprovider -n 2 --dist worksteal

step "Go and Rust contract tests against a live server" make --no-print-directory test-contract

step "the Python example agent loop against a live server" \
  bash scripts/with_server.sh .venv/bin/python examples/agent_loop.py

if ((${#failed[@]})); then
  echo "== make test FAILED: ${#failed[@]} of its parts failed:"
  printf '   - %s\n' "${failed[@]}"
  exit 1
fi
echo "== make test passed: every part"
