#!/usr/bin/env bash
# ExecuteTool with no telemetry, with the services' default tracing (spans
# made, nothing exported) and with every span exported to an OTLP collector
# in the benchmark's process: ROUNDS rounds of the three modes in turn, from
# one build of the benchmark, then the median of each mode's figures.
#
#   bash scripts/bench-tracing.sh            # 3 rounds of 16,000 calls a row
#   ROUNDS=5 BENCH_CALLS=8000 bash scripts/bench-tracing.sh
#
# Figures per mode: the p50 through mcp-service divided by the p50 of a
# direct rmcp call alternated with it (1 caller), calls/s through
# mcp-service at 16 callers, and the benchmark process's CPU per call of
# that row (callers and mcp-service; not the upstream, and not the OTLP
# collector, whose thread's CPU is printed apart). See BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds="${ROUNDS:-3}"
export BENCH_CALLS="${BENCH_CALLS:-16000}" BENCH_OVERHEAD_ONLY=1

bench="$(cargo bench -p switchboard-mcp-service --bench execute_tool --no-run 2>&1 |
    grep -o 'target/release/deps/execute_tool-[0-9a-f]*' | tail -n 1)"
[ -x "$bench" ] || { echo "bench-tracing: the benchmark did not build" >&2; exit 1; }
bench="$PWD/$bench"

# The p50 in ms of row $2 of the benchmark's output $1.
p50() { sed -n "s/^$2 .* p50 *\([0-9.]*\) ms.*/\1/p" <<<"$1"; }

results="$(mktemp)"
trap 'rm -f "$results"' EXIT
for round in $(seq "$rounds"); do
    for mode in none local export; do
        out="$(cd services/mcp-service && if [ "$mode" = none ]; then
            env -u BENCH_TRACING "$bench" --bench
        else
            BENCH_TRACING="$mode" "$bench" --bench
        fi)"
        direct="$(p50 "$out" 'direct rmcp call, 1 caller')"
        through="$(p50 "$out" 'through mcp-service, 1 caller')"
        per_second="$(awk '/^through mcp-service, 16 callers/ { print $(NF-1) }' <<<"$out")"
        cpu="$(awk '/CPU of callers and mcp-service, through/ { print $(NF-3) }' <<<"$out")"
        collector="$(awk '/CPU of the OTLP collector, through/ { print $(NF-3) }' <<<"$out")"
        ratio="$(awk -v a="$through" -v b="$direct" 'BEGIN { printf "%.3f", a / b }')"
        echo "round $round $mode: through/direct p50 $ratio ($through / $direct ms), 16 callers $per_second calls/s, CPU $cpu µs per call${collector:+, the OTLP collector $collector µs}"
        echo "$mode $ratio $through $per_second $cpu" >>"$results"
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
printf '%-7s %-22s %-18s %-20s %s\n' mode "through/direct p50" "through p50 ms" "16 callers calls/s" "CPU µs/call"
for mode in none local export; do
    column() { awk -v m="$mode" -v c="$1" '$1 == m { print $c }' "$results" | median; }
    printf '%-7s %-22s %-18s %-20s %s\n' "$mode" "$(column 2)" "$(column 3)" "$(column 4)" "$(column 5)"
done
none_ratio="$(awk '$1 == "none" { print $2 }' "$results" | median)"
for mode in local export; do
    ratio="$(awk -v m="$mode" '$1 == m { print $2 }' "$results" | median)"
    awk -v m="$mode" -v r="$ratio" -v n="$none_ratio" \
        'BEGIN { printf "%s: %+.1f %% on the 1-caller ratio against no telemetry\n", m, (r / n - 1) * 100 }'
done
