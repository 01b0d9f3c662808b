#!/usr/bin/env bash
# Run a command against a real `pioneer-grpc serve` on a free loopback port.
#   with_server.sh CMD...   exports PIONEER_ADDR, PIONEER_TOKEN, PIONEER_HOME
# The server gets a fresh runtime home and a bearer token; it is stopped with
# SIGTERM afterwards and its exit code must be 0.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py="$root/.venv/bin/python"
port=$("$py" "$root/scripts/free_port.py")
home=$(mktemp -d)
export PIONEER_ADDR="127.0.0.1:$port" PIONEER_TOKEN="contract-$(date +%s)-$$" PIONEER_HOME="$home"
"$root/.venv/bin/pioneer-grpc" serve --listen "$PIONEER_ADDR" --home "$home" --token "$PIONEER_TOKEN" \
  --seed-bootstrap-files ${PIONEER_SERVE_ARGS:-} >"$home/server.log" 2>&1 &
pid=$!
cleanup() {
  if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; fi
  wait "$pid"; status=$?
  if [ "$status" != 0 ]; then echo "with_server: server exited with $status"; tail -n 50 "$home/server.log"; fi
  rm -rf "$home"
}
trap cleanup EXIT
"$py" - "$PIONEER_ADDR" <<'PY'
import sys, time, grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
deadline = time.monotonic() + 60
with grpc.insecure_channel(sys.argv[1]) as ch:
    stub = health_pb2_grpc.HealthStub(ch)
    while True:
        try:
            if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                break
        except grpc.RpcError:
            pass
        if time.monotonic() > deadline:
            sys.exit("with_server: server did not become healthy in 60 s")
        time.sleep(0.1)
PY
"$@"
