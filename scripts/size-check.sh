#!/usr/bin/env bash
# Holds the workspace's code to the house limits (STYLE.md): no source file
# of a crate (services/, crates/, cli/, test-servers/, conformance/) over 500
# lines, and no function outside tests over 60 lines (clippy's
# too_many_lines, threshold in clippy.toml; unit tests are exempt).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MAX_FILE_LINES=500
ROOMS=(services crates cli test-servers conformance)
long_files=$(find "${ROOMS[@]}" -path '*/src/*' -name '*.rs' -not -name 'tests.rs' -not -path '*/tests/*' \
  -exec wc -l {} + | awk -v max="$MAX_FILE_LINES" '$2 != "total" && $1 > max {print "  " $2 " (" $1 " lines)"}')
if [ -n "$long_files" ]; then
  echo "size-check: files over $MAX_FILE_LINES lines; split them along their jobs:" >&2
  echo "$long_files" >&2
  exit 1
fi
# The function limit is a lint every crate denies outside its unit tests
# (`deny(clippy::too_many_lines)` in each lib.rs and main.rs), so the workspace's
# own clippy run checks it: the same command as `make clippy`, which has
# nothing left to do when that ran first (a run with other flags or another
# selection of packages would resolve features anew and check much of the
# tree again).
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "size-check: every crate's file within $MAX_FILE_LINES lines, every function within 60"
