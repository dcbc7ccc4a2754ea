#!/usr/bin/env bash
# Installs a pinned SeaweedFS (`weed`, an S3-compatible object store) into
# .tools/bin, for the tests and benchmarks of data sources kept in an object
# store. Idempotent: a binary of the pinned version already there is kept,
# so only the first run on a machine pays for the build (7–8 minutes of CPU
# for `go build`). Runs at once wait for one another (a lock in .tools/):
# .ci/run starts one in the background while the other checks run.
#
# The module is built from the Go module proxy's copy of its source, inside
# its own module: `go install module@version` refuses modules whose go.mod
# has replace directives, and SeaweedFS's has one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MODULE=github.com/seaweedfs/seaweedfs
VERSION=v0.0.0-20261109003541-7506e5f91cd6
BIN=.tools/bin/weed
STAMP=.tools/bin/weed.version

mkdir -p .tools/bin
exec 9>.tools/seaweedfs.lock
flock 9
if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$VERSION" ]; then
  exit 0
fi
command -v go >/dev/null 2>&1 || {
  echo "ensure-seaweedfs: Go is needed to build SeaweedFS (https://go.dev/dl)" >&2
  exit 1
}
echo "ensure-seaweedfs: building SeaweedFS $VERSION (takes a few minutes once)"
mkdir -p .tools/bin
started=$(date +%s)
dir=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { echo "ensure-seaweedfs: the module proxy gave no source for $MODULE@$VERSION" >&2; exit 1; }
src=$(mktemp -d)
trap 'chmod -R u+w "$src"; rm -rf "$src"' EXIT
cp -r "$dir/." "$src/"
chmod -R u+w "$src"
(cd "$src" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags='-s -w' -o "$OLDPWD/$BIN.tmp" ./weed)
mv "$BIN.tmp" "$BIN"
echo "$VERSION" > "$STAMP"
echo "ensure-seaweedfs: built $BIN in $(( $(date +%s) - started )) s"
