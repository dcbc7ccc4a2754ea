#!/usr/bin/env bash
# Installs the tools the build and tests use, into .tools/ of the checkout:
#   - buf (npm @bufbuild/buf): protobuf lint and breaking-change checks
#   - a Python virtualenv with grpcio-tools: the generated polyglot client test
#   - @modelcontextprotocol/server-everything (npm): a reference MCP server
#   - protoc-gen-go and protoc-gen-go-grpc (Go module proxy): the Go client of
#     the examples (scripts/generate-clients.sh)
# It is idempotent: what is already installed at the pinned version is kept.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools"
mkdir -p "$tools"

BUF_VERSION="1.75.0"
GRPCIO_TOOLS_VERSION="1.85.1"
EVERYTHING_VERSION="2026.8.31"
PROTOC_GEN_GO_VERSION="v1.36.12"
PROTOC_GEN_GO_GRPC_VERSION="v1.6.2"

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "install-tools: $1 is required" >&2; exit 1; }
}

if [ ! -x "$tools/node_modules/.bin/buf" ] || \
   ! grep -q "\"version\": \"$BUF_VERSION\"" "$tools/node_modules/@bufbuild/buf/package.json" 2>/dev/null; then
  need npm
  echo "install-tools: buf $BUF_VERSION and server-everything $EVERYTHING_VERSION"
  npm install --prefix "$tools" --no-audit --no-fund --silent \
    "@bufbuild/buf@$BUF_VERSION" \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
fi

if [ ! -x "$tools/venv/bin/python" ] || \
   ! "$tools/venv/bin/python" -c "import grpc_tools, grpc_health" >/dev/null 2>&1; then
  need python3
  echo "install-tools: python venv with grpcio-tools and grpcio-health-checking $GRPCIO_TOOLS_VERSION"
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet "grpcio-tools==$GRPCIO_TOOLS_VERSION" "grpcio-health-checking==$GRPCIO_TOOLS_VERSION"
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

echo "install-tools: ready in $tools"
