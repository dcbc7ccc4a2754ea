#!/usr/bin/env bash
# Generates the Python, TypeScript and Go clients of proto/ into the examples
# (examples/python/gen, examples/typescript/src/gen, examples/go/gen), which
# are not committed: CI generates them afresh from the contracts every run.
# Needs scripts/install-tools.sh first (buf, the Go plugins, the Python venv).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools"
cd "$root"

# TypeScript: the example's pinned dependencies (its package-lock.json),
# generator included; installed again when the lock file changes.
lock_sum="$(sha256sum examples/typescript/package-lock.json | cut -d' ' -f1)"
stamp=examples/typescript/node_modules/.installed-lock-sha256
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  need_npm="$(command -v npm || true)"
  [ -n "$need_npm" ] || { echo "generate-clients: npm is required" >&2; exit 1; }
  (cd examples/typescript && npm ci --no-audit --no-fund --silent --ignore-scripts)
  echo "$lock_sum" > "$stamp"
fi

rm -rf examples/go/gen examples/typescript/src/gen examples/python/gen
"$tools/node_modules/.bin/buf" generate --template buf.gen.yaml

# Go: the generated packages form the module switchboard.dev/gen/go that the
# example requires (replaced by this directory in its go.mod).
cat > examples/go/gen/go.mod <<GOMOD
module switchboard.dev/gen/go

go 1.24

require (
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)
GOMOD

# Python: grpcio-tools' own protoc, with the well-known types it ships.
mkdir -p examples/python/gen
well_known="$("$tools/venv/bin/python" -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')"
"$tools/venv/bin/python" -m grpc_tools.protoc -Iproto -I"$well_known" \
  --python_out=examples/python/gen --grpc_python_out=examples/python/gen \
  switchboard/common/v1/common.proto switchboard/mcp/v1/mcp.proto switchboard/mcp/v1/policy.proto switchboard/mcp/v1/audit.proto switchboard/mcp/v1/approvals.proto switchboard/mcp/v1/toolsets.proto switchboard/runs/v1/runs.proto

echo "generate-clients: python, typescript and go clients in examples/*/gen"
