#!/usr/bin/env bash
# Installs the tools the chart and image checks use, pinned, into .tools/ of
# the checkout (`make helm-check`, `make image`, `make image-check`):
#   - helm, built from its Go module (helm.sh/helm/v3)
#   - crane (go-containerregistry), built from its Go module: writes the
#     images as OCI layouts without a container engine
#   - kube-score, built from its Go module: the chart's policy linter
#   - kubernetes-validate (PyPI), with the Kubernetes API JSON schemas of
#     every release it ships, in a virtualenv (with PyYAML, used by the
#     image check to read rendered manifests)
#   - @bitnami/readme-generator-for-helm (npm): the chart README's values table
# It is idempotent: what is already installed at the pinned version is kept.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools"
bin="$tools/bin"
mkdir -p "$bin"

HELM_VERSION="v3.22.0"
CRANE_VERSION="v0.22.1"
KUBE_SCORE_VERSION="v1.20.0"
KUBERNETES_VALIDATE_VERSION="1.37.0"
README_GENERATOR_VERSION="2.7.2"

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "install-deploy-tools: $1 is required" >&2; exit 1; }
}

# go_tool NAME MODULE/PATH VERSION: builds NAME unless the stamp says VERSION.
go_tool() {
  local name="$1" package="$2" version="$3" stamp="$bin/.$1.version"
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    return
  fi
  need go
  echo "install-deploy-tools: $name $version"
  GOBIN="$bin" GOFLAGS=-buildvcs=false nice -n 10 go install "$package@$version"
  echo "$version" > "$stamp"
}

go_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
go_tool crane github.com/google/go-containerregistry/cmd/crane "$CRANE_VERSION"
go_tool kube-score github.com/zegl/kube-score/cmd/kube-score "$KUBE_SCORE_VERSION"

venv="$tools/deploy-venv"
if [ ! -x "$venv/bin/kubernetes-validate" ] || \
   [ "$("$venv/bin/python" -c 'import kubernetes_validate.version as v; print(v.__version__)' 2>/dev/null)" != "$KUBERNETES_VALIDATE_VERSION" ]; then
  need python3
  echo "install-deploy-tools: kubernetes-validate $KUBERNETES_VALIDATE_VERSION"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi

generator="$tools/readme-generator"
if ! grep -q "\"version\": \"$README_GENERATOR_VERSION\"" \
     "$generator/node_modules/@bitnami/readme-generator-for-helm/package.json" 2>/dev/null; then
  need npm
  echo "install-deploy-tools: readme-generator-for-helm $README_GENERATOR_VERSION"
  npm install --prefix "$generator" --no-audit --no-fund --silent \
    "@bitnami/readme-generator-for-helm@$README_GENERATOR_VERSION"
fi

echo "install-deploy-tools: ready in $tools"
