#!/usr/bin/env bash
# Builds kube-apiserver and etcd from their Go modules into .tools/apiserver/
# (for scripts/apiserver-check.sh), as controller-runtime's envtest provides
# them. k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces the
# k8s.io/* staging modules with directories its module zip leaves out), so a
# small module requires it and points those replacements at the published
# k8s.io/* releases of the same version. Long: several minutes of CPU.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/.tools/apiserver"
KUBERNETES_VERSION="v1.34.2"
STAGING_VERSION="v0.34.2"
ETCD_VERSION="v3.6.4"

if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && \
   [ "$(cat "$out/.version" 2>/dev/null)" = "$KUBERNETES_VERSION $ETCD_VERSION" ]; then
  exit 0
fi
mkdir -p "$out"
module="$(mktemp -d)"
trap 'rm -rf "$module"' EXIT
cd "$module"
go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" > download.json
gomod="$(python3 -c 'import json; print(json.load(open("download.json"))["GoMod"])')"
{
  echo "module switchboard.local/apiserver"
  echo
  echo "go 1.24"
  echo
  echo "require ("
  echo "	k8s.io/kubernetes $KUBERNETES_VERSION"
  echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  echo ")"
  echo
  echo "replace ("
  sed -n 's#^\s*\(k8s.io/[a-z-]*\) => ./staging/.*#\t\1 => \1 '"$STAGING_VERSION"'#p' "$gomod"
  echo ")"
} > go.mod
mkdir -p etcd
cat > etcd/main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
cat > tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver/app"
GO
go mod tidy
minor="${KUBERNETES_VERSION#v1.}"
minor="${minor%%.*}"
nice -n 10 go build -o "$out/kube-apiserver" -ldflags "-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
  k8s.io/kubernetes/cmd/kube-apiserver
nice -n 10 go build -o "$out/etcd" ./etcd
echo "$KUBERNETES_VERSION $ETCD_VERSION" > "$out/.version"
echo "install-apiserver: kube-apiserver $KUBERNETES_VERSION and etcd $ETCD_VERSION in $out"
