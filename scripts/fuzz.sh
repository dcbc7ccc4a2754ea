#!/usr/bin/env bash
# Builds the fuzz targets in fuzz/ and runs each of them; fails when one
# finds a crash (a panic, an abort, a timeout or memory past the limit).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   short run: SECONDS per target (default 25)
#   scripts/fuzz.sh --ci [SECONDS] [TARGET...]
#                                           CI's short run: an unoptimized build (a
#                                           fraction of the release build's time),
#                                           SECONDS per target (default 20)
#   scripts/fuzz.sh --long [RUNS] [TARGET...]
#                                           long run: RUNS executions per target
#                                           (default 1000000)
#
# Targets are built and run one after another (the machine has two cores). Each starts from
# the committed seeds in fuzz/seeds/<target> and keeps what it learns in
# fuzz/corpus/<target> (not committed); a crash's input is written to
# fuzz/artifacts/<target>/ and the command to replay it is printed. A summary
# table (target, executions, seconds, crashes) ends the output.
#
# The targets build with the toolchain of rust-toolchain.toml and no
# sanitizer (the project's code has no unsafe; what is hunted is panics,
# aborts, hangs and unbounded memory), so no nightly toolchain is needed.
# FUZZ_SANITIZER=address builds with AddressSanitizer instead, which needs a
# nightly toolchain (FUZZ_TOOLCHAIN, default nightly).
#
# FUZZ_REMOVE_BUILD=1 removes each target's binary once it has run, and the
# fuzz build (fuzz/target, some gigabytes) once all have, crash or not; CI
# sets it, so the fuzz build and the tests' build are never on its disk
# together, and the fuzz build holds one target's binary at a time. A build
# that fails prints its log without the linker's command line, and the
# disk's free space.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

CARGO_FUZZ_VERSION="0.13.2"
ALL_TARGETS=(csv_import csv_parse sql_gate sql_allowlist address_policy jwt mcp_results stdio_args guardrails openapi grpc_schema)

mode=short
if [ "${1:-}" = "--long" ]; then
  mode=long
  shift
elif [ "${1:-}" = "--ci" ]; then
  mode=ci
  shift
fi
amount="${1:-}"
if [[ "$amount" =~ ^[0-9]+$ ]]; then
  shift
elif [ "$mode" = long ]; then
  amount=1000000
elif [ "$mode" = ci ]; then
  amount=20
else
  amount=25
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")

# Per-target input size, timeout and dictionary.
max_len() {
  case "$1" in
    csv_import | csv_parse | mcp_results | openapi | grpc_schema) echo 8192 ;;
    *) echo 1024 ;;
  esac
}

sanitizer="${FUZZ_SANITIZER:-none}"
toolchain=()
if [ "$sanitizer" != none ]; then
  toolchain=("+${FUZZ_TOOLCHAIN:-nightly}")
  if ! rustup run "${FUZZ_TOOLCHAIN:-nightly}" rustc --version >/dev/null 2>&1; then
    echo "fuzz: installing the ${FUZZ_TOOLCHAIN:-nightly} toolchain for the $sanitizer sanitizer"
    rustup toolchain install "${FUZZ_TOOLCHAIN:-nightly}" --profile minimal
  fi
fi

if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

# Release builds without debug assertions, as the services run in
# production; several codegen units keep the build of the SQL engine short.
build_flags=(-O -s "$sanitizer" --codegen-units "${FUZZ_CODEGEN_UNITS:-16}")
if [ "$mode" = ci ]; then
  # Unoptimized (with debug assertions, which cargo fuzz adds to dev
  # builds): fewer executions per second, a much shorter build. Without
  # line tables each target's binary is 0.37 GB rather than 0.63 GB (a
  # crash's stack still names its functions; its replay command, run
  # locally, gives the lines).
  build_flags=(--dev -s "$sanitizer")
  export CARGO_PROFILE_DEV_DEBUG=false
fi
logs="$root/fuzz/logs"
mkdir -p "$logs"

# Builds one target, its output in fuzz/logs/<target>.build.log. On a
# failure the log is printed without the linker's command line (thousands
# of characters of object paths that would push the linker's own message
# out of a CI excerpt).
build_target() {
  local target="$1" log="$logs/$1.build.log"
  if ! cargo "${toolchain[@]}" fuzz build "${build_flags[@]}" "$target" >"$log" 2>&1; then
    echo "fuzz: building $target failed; log in fuzz/logs/$target.build.log" >&2
    cut -c1-400 "$log" | grep -v '^ *Compiling ' | tail -n 60 >&2
    df -h "$root" >&2 || true
    return 1
  fi
}

# With FUZZ_REMOVE_BUILD=1, a target's binary is removed once it has run, so
# that the build's disk holds the shared dependencies and one binary at a
# time.
remove_binary() {
  rm -f "$root"/fuzz/target/*/*/"$1" "$root"/fuzz/target/*/*/deps/"$1"-*
}

if [ "${FUZZ_REMOVE_BUILD:-0}" = 1 ]; then
  trap 'echo "fuzz: removing the fuzz build"; rm -rf "$root/fuzz/target"' EXIT
fi

failed=()
summary=()
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/$target"
  seeds="fuzz/seeds/$target"
  mkdir -p "$corpus" "$seeds"
  args=(-max_len="$(max_len "$target")" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1)
  [ -f "fuzz/dict/$target.dict" ] && args+=(-dict="fuzz/dict/$target.dict")
  if [ "$mode" = long ]; then
    args+=(-runs="$amount")
  else
    args+=(-max_total_time="$amount")
  fi
  command="cargo fuzz run ${build_flags[*]} $target $corpus $seeds -- ${args[*]}"
  echo "fuzz: building $target"
  build_start=$SECONDS
  build_target "$target"
  echo "fuzz: built $target in $((SECONDS - build_start)) s"
  echo "fuzz: $command"
  start=$SECONDS
  status=0
  cargo "${toolchain[@]}" fuzz run "${build_flags[@]}" "$target" "$corpus" "$seeds" -- "${args[@]}" \
    >"$logs/$target.log" 2>&1 || status=$?
  seconds=$((SECONDS - start))
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$target.log" | tail -n 1)"
  crashes=0
  if [ "$status" -ne 0 ]; then
    crashes=1
    failed+=("$target")
    tail -n 60 "$logs/$target.log"
    echo "fuzz: $target FAILED; input in fuzz/artifacts/$target/, log in fuzz/logs/$target.log"
  fi
  summary+=("| $target | ${runs:-?} | $seconds | $crashes | \`$command\` |")
  if [ "${FUZZ_REMOVE_BUILD:-0}" = 1 ]; then
    remove_binary "$target"
  fi
done

echo
echo "| target | executions | seconds | crashes | command |"
echo "| --- | --- | --- | --- | --- |"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]}" >&2
  exit 1
fi
