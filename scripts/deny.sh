#!/usr/bin/env bash
# Supply-chain checks with cargo-deny and the policy in deny.toml:
# licences, bans and sources always; advisories (RustSec) whenever the
# advisory database can be had.
#
#   scripts/deny.sh
#
# The advisory database is a git repository (github.com/rustsec/advisory-db).
# This script first tries to fetch it. When that fails (a machine that
# reaches only package registries), it uses the copy already on the machine
# under $CARGO_HOME/advisory-dbs, saying how old it is; when there is none,
# it says so loudly and checks everything else. DENY_REQUIRE_ADVISORIES=1
# turns a missing database into a failure. Both workspaces are checked: the
# services' and the fuzz targets' (fuzz/).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

CARGO_DENY_VERSION="0.20.2"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"

if [ "$(cargo deny --version 2>/dev/null)" != "cargo-deny $CARGO_DENY_VERSION" ]; then
  echo "deny: installing cargo-deny $CARGO_DENY_VERSION"
  # cargo-deny's own release profile (fat LTO, one codegen unit) makes a
  # binary a little faster at a check that takes seconds, for minutes more
  # of compiling on a fresh machine.
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    cargo install cargo-deny --locked --version "$CARGO_DENY_VERSION"
fi

manifests=(Cargo.toml fuzz/Cargo.toml)
deny() {
  local manifest="$1"
  shift
  cargo deny --manifest-path "$manifest" "$@"
}

for manifest in "${manifests[@]}"; do
  echo "deny: licences, bans and sources of $manifest"
  deny "$manifest" check --hide-inclusion-graph licenses bans sources
done

db_dir="$CARGO_HOME/advisory-dbs"
advisories=()
if timeout 60 cargo deny --manifest-path Cargo.toml fetch db >/dev/null 2>&1; then
  echo "deny: advisory database fetched"
else
  advisories=(--offline)
fi
db="$(find "$db_dir" -mindepth 1 -maxdepth 1 -type d -name 'advisory-db-*' 2>/dev/null | head -n 1)"
if [ -z "$db" ]; then
  cat >&2 <<'MSG'
deny: ************************************************************
deny: ADVISORIES NOT CHECKED: the RustSec advisory database could
deny: not be fetched and there is no copy on this machine. Known
deny: vulnerabilities in dependencies were NOT looked for.
deny: ************************************************************
MSG
  [ "${DENY_REQUIRE_ADVISORIES:-0}" = 1 ] && exit 1
  exit 0
fi
if [ ${#advisories[@]} -gt 0 ]; then
  updated="$(git -C "$db" log -1 --format=%cs 2>/dev/null || echo unknown)"
  echo "deny: ************************************************************" >&2
  echo "deny: the advisory database could not be fetched; checking with" >&2
  echo "deny: the copy on this machine, last updated $updated." >&2
  echo "deny: ************************************************************" >&2
fi
for manifest in "${manifests[@]}"; do
  echo "deny: advisories of $manifest"
  deny "$manifest" "${advisories[@]}" check --hide-inclusion-graph advisories
done
