#!/usr/bin/env bash
# Both front doors per call, several release trees side by side (BENCHMARKS.md, "The call
# pipeline"): the shared side-by-side script (../shared/perf/agw_side_by_side.sh, with
# agentgateway when AGW_DIR holds its build) run one round per tree in turn, the order rotated
# each round, then the medians per tree, path and callers.
#
#   bash scripts/bench-pipeline/run.sh ROUNDS SECS NAME=RELEASE_DIR[=AGW_DIR] [...]
#
# RELEASE_DIR holds mcp-service and example-mcp-server (release builds; for the tree in this
# checkout, `make bench-pipeline` builds them); AGW_DIR, where given, the agentgateway of that
# tree's rounds (floor.sh puts the floor there). Env: OUT (default target/bench-pipeline),
# ONLY (default "sb-mcp sb-grpc"; add "direct", "agw", the "-pol" paths), AGW_DIR, PY (a Python
# with grpcio, grpcio-reflection and grpcio-health-checking; made in OUT/venv when unset),
# LOADMAX (3) and LOADWAIT (30 s) before each round. The stage table: see stages.py.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
shared="${SHARED_PERF:-$root/../shared/perf}"
rounds=${1:?rounds}; secs=${2:?seconds per run}; shift 2
[ $# -ge 1 ] || { echo "name at least one NAME=RELEASE_DIR" >&2; exit 2; }
out="$(realpath -m "${OUT:-$root/target/bench-pipeline}")"; mkdir -p "$out"
for tool in wrk h2load; do
  command -v "$tool" >/dev/null || { echo "needs $tool (Debian: wrk nghttp2-client)" >&2; exit 1; }
done
if [ -z "${PY:-}" ]; then
  [ -x "$out/venv/bin/python" ] || {
    python3 -m venv "$out/venv"
    "$out/venv/bin/pip" install -q grpcio==1.85.3 grpcio-reflection==1.85.1 grpcio-health-checking==1.85.1
  }
  PY="$out/venv/bin/python"
fi
token_dir="$root/target/release"
[ -x "$token_dir/switchboard-token" ] ||
  cargo build --release --locked -p switchboard-auth --bin switchboard-token
trees=("$@")
for r in $(seq 1 "$rounds"); do
  n=${#trees[@]}
  for ((k = 0; k < n; k++)); do
    tree=${trees[$(((k + r) % n))]}; name=${tree%%=*}; dir=${tree#*=}; agw=${AGW_DIR:-/nonexistent}
    [[ $dir == *=* ]] && { agw=${dir#*=}; dir=${dir%%=*}; }
    mkdir -p "$out/$name"; rm -rf "$out/$name/w$r"
    echo "round $r: $name ($dir)" >&2
    SBS_DIR="$out/$name/w$r" LOADMAX=${LOADMAX:-3} LOADWAIT=${LOADWAIT:-30} \
      ONLY="${ONLY:-sb-mcp sb-grpc}" PY="$PY" \
      bash "$shared/agw_side_by_side.sh" "$dir" "$agw" 1 "$secs" "$token_dir" \
      > "$out/$name/r$r.out" 2>&1 || { tail -5 "$out/$name/r$r.out" >&2; exit 1; }
    cp "$out/$name/w$r/results.jsonl" "$out/$name/r$r.jsonl"
  done
done
python3 "$root/scripts/bench-pipeline/medians.py" "$out" "${trees[@]%%=*}"
