#!/usr/bin/env bash
# Runs the MCP conformance suite (scripts/conformance.sh, both requirement
# sets) RUNS times in a row (default 5) while a CPU-heavy job keeps every
# core of the machine busy, and fails if any run fails. Each run is scored
# on its first attempt (CONFORMANCE_ATTEMPTS=1): a scenario that passes
# only when retried is a failure here.
#
# The load is LOAD_JOBS busy loops (default: one per core, `nproc`), each
# a shell spinning without pause, started after the conformance client is
# built and stopped when the script ends. Whatever else runs on the machine
# adds to it; the load average is printed with each run.
#
# Per run: its pass/fail counts, its time, the load average, and its logs
# in target/conformance-under-load/run-<n>/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

runs="${RUNS:-5}"
jobs="${LOAD_JOBS:-$(nproc)}"
out="$root/target/conformance-under-load"

bash scripts/install-tools.sh >/dev/null
cargo build --locked -q -p switchboard-conformance-client --bin conformance-client
rm -rf "$out"
mkdir -p "$out"

spinners=()
stop_load() {
  local pid
  for pid in "${spinners[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
}
trap stop_load EXIT
for _ in $(seq 1 "$jobs"); do
  bash -c 'while :; do :; done' &
  spinners+=("$!")
done
echo "conformance-under-load: $runs runs, $jobs busy loops on $(nproc) cores"
sleep 5

failed=0
for run in $(seq 1 "$runs"); do
  started=$(date +%s)
  if CONFORMANCE_ATTEMPTS=1 CONFORMANCE_BUILT=1 bash scripts/conformance.sh \
      >"$out/run-$run.log" 2>&1; then
    verdict=pass
  else
    verdict=FAIL
    failed=$((failed + 1))
  fi
  seconds=$(( $(date +%s) - started ))
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  cp -r "$root/target/conformance" "$out/run-$run"
  # The suite's summary lines, one per requirement set.
  counts=$(grep -E '^(Total|Passed|Failed|Scenarios)' "$out/run-$run.log" | tr '\n' ' ' || true)
  echo "run $run: $verdict in ${seconds}s (load average $load) $counts"
  if [ "$verdict" = FAIL ]; then
    grep -E 'FAIL|✗' "$out/run-$run.log" | head -20 || true
  fi
done

if [ "$failed" -ne 0 ]; then
  echo "conformance-under-load: $failed of $runs runs failed (logs in $out)" >&2
  exit 1
fi
echo "conformance-under-load: $runs of $runs runs passed"
