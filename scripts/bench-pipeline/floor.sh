#!/usr/bin/env bash
# The floor of an MCP-to-MCP gateway on this stack beside agentgateway and both of Switchboard's
# front doors, in the same rounds (docs/benchmarks/call-pipeline.md, "The floor"): the shared
# side-by-side script runs twice a round, once with agentgateway and once with the floor
# (scripts/bench-pipeline/floor, a byte-forwarding HTTP/1 proxy) in agentgateway's place.
#
#   AGW_DIR=<agentgateway build> bash scripts/bench-pipeline/floor.sh ROUNDS SECS RELEASE_DIR
#
# RELEASE_DIR as in run.sh; OUT, ONLY (default "direct agw sb-mcp sb-grpc"), PY as in run.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds=${1:?rounds}; secs=${2:?seconds per run}; release=$(realpath "${3:?release dir}")
agw=$(realpath "${AGW_DIR:?AGW_DIR: the agentgateway build (../shared/perf/README.md)}")
out="$(realpath -m "${OUT:-$root/target/bench-pipeline-floor}")"; mkdir -p "$out/floor-bin"
cargo build --release --locked --manifest-path "$root/scripts/bench-pipeline/floor/Cargo.toml"
floor="$root/scripts/bench-pipeline/floor/target/release/switchboard-bench-floor"
# The harness starts "agentgateway -f CONFIG" twice: plainly, and with 100 policy rules. The floor
# takes the plain one's port and upstream; the policy one stays agentgateway (the harness checks
# that it refuses a tool), and the floor's rounds do not measure it.
cat > "$out/floor-bin/agentgateway" <<WRAP
#!/usr/bin/env bash
cfg=\$2
grep -q mcpAuthorization "\$cfg" && exec "$agw/agentgateway" "\$@"
exec "$floor" 127.0.0.1:\$(awk '/- port:/{print \$3; exit}' "\$cfg") \$(awk '/host:/{print \$2; exit}' "\$cfg")
WRAP
chmod +x "$out/floor-bin/agentgateway"
OUT="$out" ONLY="${ONLY:-direct agw sb-mcp sb-grpc}" AGW_DIR="$agw" \
  bash "$root/scripts/bench-pipeline/run.sh" "$rounds" "$secs" "agentgateway=$release" "floor=$release=$out/floor-bin"
