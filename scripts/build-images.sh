#!/usr/bin/env bash
# Builds Switchboard's images without a container engine, each as an OCI
# image layout under target/images/<name> (`make image`, and `make
# image-check` for CI); `crane push target/images/<name> <registry>/<name>:<tag>`
# publishes one:
#   mcp-service   /usr/local/bin/mcp-service and stdio-sandbox
#   runs-service  /usr/local/bin/runs-service
#   switchboard   /usr/local/bin/switchboard-token (the CLI)
# Each is one layer on an empty base: the binaries, exactly the shared
# libraries `ldd` lists for them (glibc, libm, libgcc_s: a distroless/cc-like
# runtime), CA certificates, passwd/group with the non-root user 65532, the
# predefined catalog and migrations (also built into the binaries), /tmp and
# /var/lib/switchboard. No shell. The same content as the Dockerfile's images.
#
#   scripts/build-images.sh [--release] [--out DIR] [--tag TAG]
#
# Binaries come from target/debug (default: the ones `cargo test --workspace`
# builds, so that after the tests nothing is compiled again) or, with
# --release, from a release build; the layout goes to DIR (target/images).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
crane="$root/.tools/bin/crane"
profile=debug
out="$root/target/images"
version="$(sed -n 's/^appVersion: "\(.*\)"/\1/p' "$root/helm/switchboard/Chart.yaml")"
tag="$version"
while [ $# -gt 0 ]; do
  case "$1" in
    --release) profile=release ;;
    --out) out="$2"; shift ;;
    --tag) tag="$2"; shift ;;
    *) echo "build-images: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ "$profile" = release ]; then
  nice -n 10 cargo build --release --locked -p switchboard-mcp-service -p switchboard-runs-service \
    -p switchboard-auth --bin mcp-service --bin stdio-sandbox --bin runs-service --bin switchboard-token
else
  nice -n 10 cargo test --workspace --locked --no-run
fi
bins="$root/target/$profile"

work="$(mktemp -d)"
registry_pid=""
cleanup() {
  if [ -n "$registry_pid" ]; then kill "$registry_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}"
revision="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"

# A registry in this process's sandbox, on loopback: crane builds and labels
# images by pushing to a registry, then writes them out as an OCI layout.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$crane" registry serve --address "127.0.0.1:$port" 2>"$work/registry.log" &
registry_pid=$!
for _ in $(seq 100); do
  if "$crane" catalog "127.0.0.1:$port" --insecure >/dev/null 2>&1; then break; fi
  sleep 0.1
done

# image NAME ENTRYPOINT PORT BINARY...: builds NAME into the registry.
image() {
  local name="$1" entrypoint="$2" port_spec="$3"; shift 3
  local layer="$work/$name.tar" ref="127.0.0.1:$port/switchboard/$name:$tag"
  local args=() bin lib
  mkdir -p "$work/bin"
  for bin in "$@"; do
    # Debug information stays out of the image (release builds carry none).
    strip --strip-debug -o "$work/bin/$bin" "$bins/$bin"
    args+=(--bin "$work/bin/$bin")
    for lib in $(ldd "$bins/$bin" | grep -o '/[^ ]*' ); do args+=(--lib "$lib"); done
  done
  args+=(--file "/etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt")
  args+=(--file "$root/services/mcp-service/catalog/predefined.toml=/usr/share/switchboard/catalog/predefined.toml")
  local svc migration
  for svc in mcp-service runs-service; do
    for migration in "$root"/services/$svc/migrations/*/*.sql; do
      args+=(--file "$migration=/usr/share/switchboard/migrations/$svc/${migration#"$root/services/$svc/migrations/"}")
    done
  done
  python3 "$root/scripts/image_layer.py" "$layer" "${args[@]}"
  "$crane" append --insecure --oci-empty-base --platform linux/amd64 -f "$layer" -t "$ref" >/dev/null
  local mutate=(--insecure --set-platform linux/amd64 --user 65532:65532 --workdir /home/nonroot
    --entrypoint "$entrypoint" -t "$ref"
    -l "org.opencontainers.image.title=$name"
    -l "org.opencontainers.image.description=Switchboard $name"
    -l "org.opencontainers.image.version=$version"
    -l "org.opencontainers.image.revision=$revision"
    -l "org.opencontainers.image.created=$created"
    -l "org.opencontainers.image.licenses=Apache-2.0"
    -l "org.opencontainers.image.vendor=Switchboard")
  if [ -n "$port_spec" ]; then mutate+=(--exposed-ports "$port_spec"); fi
  "$crane" mutate "${mutate[@]}" "$ref" >/dev/null
  refs+=("$ref")
}

refs=()
image mcp-service /usr/local/bin/mcp-service 50051/tcp mcp-service stdio-sandbox
image runs-service /usr/local/bin/runs-service 50052/tcp runs-service
image switchboard /usr/local/bin/switchboard-token "" switchboard-token

mkdir -p "$out"
for ref in "${refs[@]}"; do
  name="${ref##*/}"
  name="${name%%:*}"
  rm -rf "${out:?}/$name"
  "$crane" pull --insecure --format oci --annotate-ref "$ref" "$out/$name"
  # The layout names the image by its tag, not by the build's registry.
  python3 - "$out/$name/index.json" "$tag" <<'PY'
import json, sys
path, tag = sys.argv[1], sys.argv[2]
index = json.load(open(path))
for manifest in index["manifests"]:
    manifest.setdefault("annotations", {})["org.opencontainers.image.ref.name"] = tag
json.dump(index, open(path, "w"))
PY
  echo "build-images: $out/$name ($tag): $(du -sh "$out/$name" | cut -f1), $(du -h "$work/$name.tar" | cut -f1) unpacked, $profile binaries"
done
