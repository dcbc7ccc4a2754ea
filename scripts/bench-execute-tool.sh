#!/usr/bin/env bash
# ExecuteTool under load from outside (BENCHMARKS.md): builds the release
# mcp-service and example MCP server, installs the Python mcp-proxy (PyPI,
# pinned) into a venv at target/bench-venv the first time, then runs the
# load generator (services/mcp-service/benches/execute_tool_load), which
# starts them as processes and drives, round after round, the example server
# directly over HTTP, ExecuteTool through mcp-service (streamable HTTP, HTTPS
# and stdio) and the Python mcp-proxy in front of the same server over stdio
# (what the stdio path is compared with) at 1 and 16 callers.
#
#   bash scripts/bench-execute-tool.sh              the rounds and their ratios
#   bash scripts/bench-execute-tool.sh --profile D  then a perf profile and a
#                                                   syscall count of mcp-service
#                                                   under load, into D
# SWITCHBOARD_BENCH_ROUNDS, SWITCHBOARD_BENCH_CALLS_ONE and
# SWITCHBOARD_BENCH_CALLS_MANY set the rounds and the calls per run;
# SWITCHBOARD_BENCH_PIN=1 gives mcp-service (and the Python mcp-proxy it is
# compared with, in its turn) a CPU of its own (taskset).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo="${CARGO:-cargo}"

profile_dir=""
if [ "${1:-}" = "--profile" ]; then
  profile_dir="$(realpath -m "${2:?--profile needs a directory}")"
  for tool in perf strace; do
    command -v "$tool" >/dev/null 2>&1 || {
      echo "bench-execute-tool: --profile needs $tool (Debian: linux-perf, strace)" >&2
      exit 1
    }
  done
fi

"$cargo" build --release --locked -p switchboard-mcp-service --bin mcp-service \
  -p switchboard-example-mcp-server --bin example-mcp-server

# The Python mcp-proxy, once (again if the venv holds another version).
mcp_proxy_version="0.13.0"
venv="$root/target/bench-venv"
if [ "$("$venv/bin/mcp-proxy" --version 2>/dev/null)" != "mcp-proxy $mcp_proxy_version" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp-proxy==$mcp_proxy_version"
fi

SWITCHBOARD_BENCH_MCP_PROXY="$venv/bin/mcp-proxy" \
SWITCHBOARD_BENCH_PROFILE="$profile_dir" \
  "$cargo" bench --locked -p switchboard-mcp-service --bench execute_tool_load

if [ -n "$profile_dir" ]; then
  perf report -i "$profile_dir/perf.data" --no-children --percent-limit 1.5 --stdio \
    --sort symbol -g none 2>/dev/null > "$profile_dir/perf-top.txt" || true
  echo "bench-execute-tool: top of the profile in $profile_dir/perf-top.txt"
  head -40 "$profile_dir/perf-top.txt"
  echo "bench-execute-tool: syscalls"
  head -25 "$profile_dir/strace.txt"
fi
