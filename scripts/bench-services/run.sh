#!/usr/bin/env bash
# A team's own services as tools, per call (BENCHMARKS.md, "gRPC and OpenAPI integrations"):
# the example inventory service's GetItem called directly with h2load beside the same method
# called through mcp-service's ExecuteTool, and the example pets API's GET /v1/pets/{id} called
# directly with wrk beside ExecuteTool of getPet; release builds, SQLite, audit on, 1 and 16
# callers, side by side in each round. Every answer is checked: h2load and wrk count answers
# other than 2xx, and mcp-service's metrics count ExecuteTool's gRPC status codes.
#
#   bash scripts/bench-services/run.sh ROUNDS SECS [RELEASE_DIR]
#
# RELEASE_DIR (default target/release) holds mcp-service, example-grpc-service,
# example-mcp-server and switchboard-token (`make bench-services` builds them). Needs h2load,
# wrk and curl (Debian: nghttp2-client wrk curl). Env: OUT (default target/bench-services).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/scripts/bench-services"
rounds=${1:?rounds}; secs=${2:?seconds per run}; bin="$(realpath "${3:-$root/target/release}")"
out="$(realpath -m "${OUT:-$root/target/bench-services}")"; mkdir -p "$out"; cd "$out"
for tool in h2load wrk curl; do
  command -v $tool >/dev/null || { echo "needs $tool (Debian: nghttp2-client wrk curl)" >&2; exit 1; }
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P_SVC=$(free_port); P_API=$(free_port); P_GRPC=$(free_port); P_MET=$(free_port)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
"$bin/example-grpc-service" --listen 127.0.0.1:$P_SVC 2>svc.log & pids+=($!); PID_SVC=$!
"$bin/example-mcp-server" --transport api --listen 127.0.0.1:$P_API 2>api.log & pids+=($!); PID_API=$!
secret=bench-secret-of-at-least-32-bytes-0123456789
rm -rf mcpdata
SWITCHBOARD_JWT_SECRET=$secret SWITCHBOARD_DEV_MODE=true SWITCHBOARD_OUTBOUND_ALLOW=127.0.0.1/32 \
  SWITCHBOARD_ORG_RATE_LIMIT=100000000 SWITCHBOARD_ORG_RATE_BURST=100000000 \
  SWITCHBOARD_ORG_CONCURRENCY_LIMIT=4096 SWITCHBOARD_METRICS_ADDR=127.0.0.1:$P_MET \
  SWITCHBOARD_DATA_DIR="$out/mcpdata" RUST_LOG=warn \
  "$bin/mcp-service" --listen 127.0.0.1:$P_GRPC >mcp.log 2>&1 & pids+=($!); PID_SB=$!
for _ in $(seq 1 150); do
  curl -s -o /dev/null http://127.0.0.1:$P_MET/metrics && curl -s -o document.json http://127.0.0.1:$P_API/openapi.json && break
  sleep 0.2
done
TOK=$(SWITCHBOARD_JWT_SECRET=$secret "$bin/switchboard-token" --org bench --user bench --role admin | tail -1)
grpc_post() { # PATH BODY OUT
  curl -s --http2-prior-knowledge -H 'content-type: application/grpc' -H 'te: trailers' \
    -H "authorization: Bearer $TOK" --data-binary @"$2" -o "$3" "http://127.0.0.1:$P_GRPC$1"; }
python3 "$here/bodies.py" create "$out" "http://127.0.0.1:$P_SVC" "http://127.0.0.1:$P_API/v1"
for kind in grpc openapi; do
  grpc_post /switchboard.mcp.v1.McpService/CreateIntegration create_$kind.bin created_$kind.bin
done
python3 "$here/bodies.py" execute "$out"
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
rss() { awk '/VmRSS/{print $2}' /proc/$1/status; }
record() { # NAME CALLERS ROUND UPSTREAM_PID CALLS RPS P50_MS BAD C0 E0
  local c1 e1; c1=$(cpu $PID_SB); e1=$(cpu $4)
  echo "{\"path\":\"$1\",\"callers\":$2,\"round\":$3,\"calls\":${5:-0},\"rps\":${6:-0},\"p50_ms\":${7:-0},\"bad\":${8:-0},\"sb_cpu_ticks\":$((c1-$9)),\"up_cpu_ticks\":$((e1-${10})),\"sb_rss_kb\":$(rss $PID_SB)}" | tee -a results.jsonl
}
h2() { # NAME CALLERS ROUND UPSTREAM_PID URL BODY [TOKEN]
  local c0 e0 res; c0=$(cpu $PID_SB); e0=$(cpu $4); rm -f h2.log
  res=$(h2load -D "$secs" -c "$2" -m 1 -t 1 --log-file=h2.log -H 'content-type: application/grpc' \
    -H 'te: trailers' ${7:+-H "authorization: Bearer $7"} -d "$6" "$5" 2>&1)
  local calls rps bad p50
  rps=$(echo "$res" | grep -oE '[0-9.]+ req/s' | head -1 | cut -d' ' -f1)
  calls=$(echo "$res" | grep -E '^requests:' | grep -oE '[0-9]+ succeeded' | cut -d' ' -f1)
  bad=$(echo "$res" | grep -E '^status codes:' | grep -oE '[0-9]+ [345]xx' | awk '{s+=$1} END{print s+0}')
  p50=$(awk '{print $3}' h2.log | sort -n | awk '{a[NR]=$1} END{i=int(NR*0.5); if(i<1)i=1; printf "%.3f", a[i]/1000}')
  record "$1" "$2" "$3" "$4" "$calls" "$rps" "$p50" "$bad" "$c0" "$e0"
}
direct_http() { # CALLERS ROUND
  local c0 e0 res; c0=$(cpu $PID_SB); e0=$(cpu $PID_API)
  res=$(wrk -t1 -c"$1" -d"${secs}s" --latency -s "$here/checked.lua" "http://127.0.0.1:$P_API/v1/pets/7" 2>&1)
  local json; json=$(echo "$res" | grep '^JSON' | sed 's/^JSON //')
  read -r calls rps p50 bad <<<"$(echo "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["calls"], r["rps"], r["p50_ms"], r["bad"])')"
  record direct_http "$1" "$2" $PID_API "$calls" "$rps" "$p50" "$bad" "$c0" "$e0"
}
EXEC="http://127.0.0.1:$P_GRPC/switchboard.mcp.v1.McpService/ExecuteTool"
# The answers measured are the tools' results, not error results: each says what only a
# success says (the seeded item's name, the API's echo of the id).
grpc_post /switchboard.mcp.v1.McpService/ExecuteTool execute_grpc.bin answer_grpc.bin
grpc_post /switchboard.mcp.v1.McpService/ExecuteTool execute_openapi.bin answer_openapi.bin
grep -q anvil answer_grpc.bin || { echo "the gRPC integration did not answer with the item" >&2; exit 1; }
grep -q '"id":"7"' answer_openapi.bin || { echo "the OpenAPI integration did not answer with the echo" >&2; exit 1; }
rm -f results.jsonl
# Warm both integrations (reflection, the channel, the document, the caches) first.
h2 warm 1 0 $PID_SVC "$EXEC" execute_grpc.bin "$TOK" >/dev/null
h2 warm 1 0 $PID_API "$EXEC" execute_openapi.bin "$TOK" >/dev/null
for r in $(seq 1 "$rounds"); do
  for c in 1 16; do
    h2 direct_grpc "$c" "$r" $PID_SVC "http://127.0.0.1:$P_SVC/example.inventory.v1.Inventory/GetItem" get.bin
    h2 grpc_integration "$c" "$r" $PID_SVC "$EXEC" execute_grpc.bin "$TOK"
    direct_http "$c" "$r"
    h2 openapi_integration "$c" "$r" $PID_API "$EXEC" execute_openapi.bin "$TOK"
  done
done
curl -s http://127.0.0.1:$P_MET/metrics | grep -E '^rpc_server_call_duration[a-z_]*_count' | grep ExecuteTool > statuses.txt || true
python3 "$here/bodies.py" medians "$out"
