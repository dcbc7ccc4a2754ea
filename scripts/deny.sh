#!/usr/bin/env bash
# Supply-chain checks with cargo-deny and the policy in deny.toml:
# advisories (RustSec), licences, bans and sources.
#
#   scripts/deny.sh
#
# The advisory database is a git repository (github.com/rustsec/advisory-db).
# This script first tries to fetch it; on a machine that reaches only package
# registries it uses the offline copy in ../shared/rustsec/ (see below). A
# vulnerability not explained in deny.toml fails the check. Both workspaces
# are checked: the services' and the fuzz targets' (fuzz/).
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

# The advisory database: fetched when the network allows; otherwise the
# offline copy kept beside the project (../shared/rustsec/advisory-db.bundle,
# a git bundle of github.com/rustsec/advisory-db) is cloned, or refreshed when
# the bundle is newer, into the folder cargo-deny derives from the default URL.
# Advisories are always checked: no database at all is a failure, not a
# warning, unless DENY_REQUIRE_ADVISORIES=0.
db_dir="$CARGO_HOME/advisory-dbs"
db="$db_dir/advisory-db-3157b0e258782691"
bundle="${DENY_ADVISORY_BUNDLE:-$root/../shared/rustsec/advisory-db.bundle}"
advisories=()
if timeout 60 cargo deny --manifest-path Cargo.toml fetch db >/dev/null 2>&1; then
  echo "deny: advisory database fetched"
else
  advisories=(--offline)
  if [ -f "$bundle" ]; then
    bundled="$(git bundle list-heads "$bundle" | awk '/refs\/heads\/master/ {print $1}')"
    if [ "$(git -C "$db" rev-parse -q --verify HEAD 2>/dev/null)" != "$bundled" ]; then
      echo "deny: advisory database from $bundle"
      rm -rf "$db"
      mkdir -p "$db_dir"
      git clone -q --branch master "$bundle" "$db"
    fi
  fi
fi
if [ ! -d "$db/.git" ]; then
  cat >&2 <<'MSG'
deny: ************************************************************
deny: ADVISORIES NOT CHECKED: the RustSec advisory database could
deny: not be fetched, no copy is on this machine and there is no
deny: ../shared/rustsec/advisory-db.bundle. Known vulnerabilities
deny: in dependencies were NOT looked for.
deny: ************************************************************
MSG
  [ "${DENY_REQUIRE_ADVISORIES:-1}" = 0 ] && exit 0
  exit 1
fi
if [ ${#advisories[@]} -gt 0 ]; then
  updated="$(git -C "$db" log -1 --format=%cs 2>/dev/null || echo unknown)"
  echo "deny: advisories checked offline, against the database of $updated"
fi
for manifest in "${manifests[@]}"; do
  echo "deny: advisories of $manifest"
  deny "$manifest" "${advisories[@]}" check --hide-inclusion-graph advisories
done
