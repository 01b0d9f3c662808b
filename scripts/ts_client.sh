#!/usr/bin/env bash
# The TypeScript/JavaScript contract client (clients/ts): installs its npm packages (pinned in
# package-lock.json) and generates its stubs from protos/ with protoc-gen-es into clients/ts/gen
# (not committed: made from the protos each time). Prints the directory.
set -euo pipefail
cd "$(dirname "$0")/.."
ts=clients/ts
command -v node >/dev/null || { echo "ts_client.sh: node is required (Node 20 or later)" >&2; exit 1; }
if [ ! -d "$ts/node_modules/@connectrpc/connect-node" ] || [ "$ts/package-lock.json" -nt "$ts/node_modules/.package-lock.json" ]; then
  (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
rm -rf "$ts/gen"; mkdir -p "$ts/gen"
wkt=$(.venv/bin/python -c 'import grpc_tools,os;print(os.path.join(os.path.dirname(grpc_tools.__file__),"_proto"))')
.venv/bin/python -m grpc_tools.protoc -Iprotos -I"$wkt" \
  --plugin=protoc-gen-es="$ts/node_modules/.bin/protoc-gen-es" \
  --es_out="$ts/gen" --es_opt=target=js+dts,import_extension=js \
  protos/google/api/field_behavior.proto protos/pioneer/v1/*.proto
echo "$ts"
