#!/usr/bin/env bash
# The chart's checks (`make helm-check`): helm lint; renders for the default
# values and every file under ci/; each rendered object validated against the
# Kubernetes API schemas of pinned releases; kube-score with the exceptions of
# tests/kube-score-exceptions.txt (each with its reason) and no other; every
# file under tests/invalid/ refused with the message it names; the README's
# values table up to date.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chart="$root/helm/switchboard"
bin="$root/.tools/bin"
venv="$root/.tools/deploy-venv"
# The oldest release the chart supports (Chart.yaml kubeVersion) and the newest
# whose schemas kubernetes-validate ships.
KUBE_VERSIONS=(1.30.0 1.37.0)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
failed=0
fail() { echo "helm-check: FAILED: $*" >&2; failed=1; }

"$bin/helm" lint --strict "$chart" --kube-version "${KUBE_VERSIONS[0]}"
for values in "$chart"/ci/*.yaml; do
  "$bin/helm" lint --strict "$chart" --kube-version "${KUBE_VERSIONS[0]}" -f "$values" >/dev/null \
    || fail "helm lint with $(basename "$values")"
done

# render NAME [VALUES]: writes $out/NAME.yaml.
render() {
  local name="$1"; shift
  "$bin/helm" template switchboard "$chart" --namespace switchboard \
    --kube-version "${KUBE_VERSIONS[0]}" "$@" > "$out/$name.yaml"
}

renders=(default)
render default
for values in "$chart"/ci/*.yaml; do
  name="$(basename "$values" -values.yaml)"
  renders+=("$name")
  render "$name" -f "$values"
done

# Exceptions that apply to a render: lines `<renders> <check>  # why`.
exceptions() {
  local render="$1"
  grep -v '^\s*#' "$chart/tests/kube-score-exceptions.txt" | grep -v '^\s*$' |
    while read -r scope check rest; do
      case "$rest" in "#"*) ;; *) echo "exception without a reason: $check" >&2; exit 1;; esac
      if [ "$scope" = all ] || [[ ",$scope," == *",$render,"* ]]; then echo "$check"; fi
    done
}

for name in "${renders[@]}"; do
  file="$out/$name.yaml"
  count="$(grep -c '^kind: ' "$file")"
  for version in "${KUBE_VERSIONS[@]}"; do
    "$venv/bin/kubernetes-validate" --kubernetes-version "$version" --strict --quiet "$file" \
      || fail "$name does not validate against Kubernetes $version"
  done
  flags=(--enable-optional-test container-seccomp-profile --output-format ci --exit-one-on-warning)
  for check in $(exceptions "$name"); do
    if [ "$check" = cpu-limit ]; then flags+=(--ignore-container-cpu-limit); else flags+=(--ignore-test "$check"); fi
  done
  if "$bin/kube-score" score "${flags[@]}" "$file" > "$out/$name.score"; then
    echo "helm-check: $name: $count objects, checked on Kubernetes ${KUBE_VERSIONS[*]} and by kube-score"
  else
    grep -E '^\[(CRITICAL|WARNING)\]' "$out/$name.score" >&2 || true
    fail "kube-score finds problems in $name"
  fi
done

# Every render restricts egress (no rule open to every address, none to the
# cluster's private ranges without the operator naming them) and opens the
# metrics port to the named scrapers only, never to every namespace.
for name in "${renders[@]}"; do
  "$venv/bin/python" - "$out/$name.yaml" <<'PY' || fail "the network policies of $name are too open"
import sys
import yaml

policies = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "NetworkPolicy"]
problems = [] if policies else ["no NetworkPolicy"]
for policy in policies:
    name, spec = policy["metadata"]["name"], policy["spec"]
    if "Egress" not in spec.get("policyTypes", []):
        problems.append(f"{name}: egress is not restricted")
    for rule in spec.get("egress", []):
        if not rule.get("to") and not rule.get("ports"):
            problems.append(f"{name}: an egress rule allows everything")
        for peer in rule.get("to", []):
            block = peer.get("ipBlock", {})
            if block.get("cidr") in ("0.0.0.0/0", "::/0") and not block.get("except"):
                problems.append(f"{name}: egress to every address, the cluster's included")
    for rule in spec.get("ingress", []):
        if any(port.get("port") == "metrics" for port in rule.get("ports", [])):
            peers = rule.get("from", [])
            if not peers or {"namespaceSelector": {}} in peers:
                problems.append(f"{name}: the metrics port is open to every namespace")
for problem in problems:
    print(f"helm-check: {problem}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
done

for values in "$chart"/tests/invalid/*.yaml; do
  expected="$(sed -n '1s/^# expect: //p' "$values")"
  [ -n "$expected" ] || { fail "$(basename "$values") names no expected message"; continue; }
  if message="$("$bin/helm" template switchboard "$chart" --kube-version "${KUBE_VERSIONS[0]}" -f "$values" 2>&1 >/dev/null)"; then
    fail "$(basename "$values") was accepted"
  elif ! grep -qF -- "$expected" <<<"$message"; then
    fail "$(basename "$values") was refused without '$expected': $message"
  else
    echo "helm-check: refused as it should be: $(basename "$values")"
  fi
done

bash "$root/scripts/helm-docs.sh" --check || fail "the chart README's parameters are out of date: run make helm-docs"

if [ "$failed" -ne 0 ]; then exit 1; fi
echo "helm-check: passed"
