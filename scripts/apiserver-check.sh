#!/usr/bin/env bash
# The chart against a real Kubernetes API server (`make helm-apiserver-check`,
# not in CI: building kube-apiserver takes long). As controller-runtime's
# envtest does, kube-apiserver and etcd are built from their Go modules
# (scripts/install-apiserver.sh) and started on loopback; then, for the
# default values and every file under ci/:
#   - every rendered object is created with a server-side dry run
#     (validation, defaulting and admission of the real API server);
#   - the chart is installed, upgraded and uninstalled with helm, and the
#     secret the chart generates on install must survive the upgrade.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chart="$root/helm/switchboard"
bin="$root/.tools/bin"
apiserver_bin="$root/.tools/apiserver"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
etcd_port="$(free_port)"
peer_port="$(free_port)"
api_port="$(free_port)"
token="$(head -c 24 /dev/urandom | base64 | tr -dc 'a-zA-Z0-9')"

"$apiserver_bin/etcd" --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
  --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "default=http://127.0.0.1:$peer_port" > "$work/etcd.log" 2>&1 &
pids+=($!)

openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
echo "$token,admin,admin,system:masters" > "$work/tokens.csv"
"$apiserver_bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
  --cert-dir "$work/certs" --token-auth-file "$work/tokens.csv" --authorization-mode RBAC \
  --service-cluster-ip-range 10.0.0.0/24 --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$work/sa.key" --service-account-signing-key-file "$work/sa.key" \
  > "$work/apiserver.log" 2>&1 &
pids+=($!)

server="https://127.0.0.1:$api_port"
api() { curl -sS -k -H "Authorization: Bearer $token" "$@"; }
for _ in $(seq 600); do
  if [ "$(api "$server/readyz" 2>/dev/null)" = ok ]; then break; fi
  sleep 0.2
done
[ "$(api "$server/readyz")" = ok ] || { tail -20 "$work/apiserver.log" >&2; exit 1; }
version="$(api "$server/version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gitVersion"])')"
echo "apiserver-check: kube-apiserver $version ready on $server"

cat > "$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "$server", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: "$token"}}]
contexts: [{name: local, context: {cluster: local, user: admin}}]
current-context: local
EOF
export KUBECONFIG="$work/kubeconfig"

# dry_run FILE NAMESPACE: creates each object of FILE with dryRun=All.
dry_run() {
  "$root/.tools/deploy-venv/bin/python" - "$1" "$2" "$server" "$token" <<'PY'
import json, ssl, sys, urllib.request, yaml
path, namespace, server, token = sys.argv[1:]
context = ssl._create_unverified_context()
plural = {"Deployment": "deployments", "Service": "services", "Secret": "secrets",
          "ConfigMap": "configmaps", "ServiceAccount": "serviceaccounts",
          "NetworkPolicy": "networkpolicies", "PodDisruptionBudget": "poddisruptionbudgets",
          "HorizontalPodAutoscaler": "horizontalpodautoscalers",
          "PersistentVolumeClaim": "persistentvolumeclaims"}
failed = 0
for doc in [d for d in yaml.safe_load_all(open(path)) if d]:
    group = doc["apiVersion"]
    base = f"/api/{group}" if "/" not in group else f"/apis/{group}"
    url = f"{server}{base}/namespaces/{namespace}/{plural[doc['kind']]}?dryRun=All&fieldValidation=Strict"
    request = urllib.request.Request(url, data=json.dumps(doc).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=context) as response:
            warnings = response.headers.get_all("Warning") or []
            if warnings:
                print(f"apiserver-check: warning on {doc['kind']}/{doc['metadata']['name']}: {warnings}")
                failed += 1
    except urllib.error.HTTPError as error:
        print(f"apiserver-check: {doc['kind']}/{doc['metadata']['name']} refused: {error.read().decode()}")
        failed += 1
sys.exit(1 if failed else 0)
PY
}

api -X POST -H 'Content-Type: application/json' "$server/api/v1/namespaces" \
  -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"switchboard"}}' >/dev/null
kube_version="${version#v}"
for values in "" "$chart"/ci/*.yaml; do
  name="$(basename "${values:-default}" -values.yaml)"
  "$bin/helm" template switchboard "$chart" -n switchboard --kube-version "$kube_version" \
    ${values:+-f "$values"} > "$work/$name.yaml"
  dry_run "$work/$name.yaml" switchboard
  echo "apiserver-check: $name: every object accepted by a server-side dry run"
done

# A real install, upgrade and uninstall through helm.
"$bin/helm" install switchboard "$chart" -n switchboard --wait=false >/dev/null
secret() {
  api "$server/api/v1/namespaces/switchboard/secrets/switchboard-inline" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["sealing-keys"])'
}
before="$(secret)"
"$bin/helm" upgrade switchboard "$chart" -n switchboard --set orgLimits.burst=3000 >/dev/null
[ "$(secret)" = "$before" ] || { echo "apiserver-check: the generated sealing key changed on upgrade" >&2; exit 1; }
"$bin/helm" uninstall switchboard -n switchboard >/dev/null
[ -n "$(secret)" ] || { echo "apiserver-check: the generated keys did not survive the uninstall" >&2; exit 1; }
echo "apiserver-check: helm install, upgrade (generated keys kept) and uninstall (keys kept) passed"
