#!/usr/bin/env bash
# Regenerates the Parameters section of helm/switchboard/README.md from the
# `## @param` comments of values.yaml (readme-generator-for-helm); with
# --check, fails instead when the README differs from what it would write.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chart="$root/helm/switchboard"
generator="$root/.tools/readme-generator/node_modules/.bin/readme-generator"

if [ "${1:-}" = --check ]; then
  copy="$(mktemp)"
  trap 'rm -f "$copy"' EXIT
  cp "$chart/README.md" "$copy"
  "$generator" --values "$chart/values.yaml" --readme "$copy" >/dev/null
  diff -u "$chart/README.md" "$copy"
else
  "$generator" --values "$chart/values.yaml" --readme "$chart/README.md"
fi
