#!/usr/bin/env bash
# Runs the operator on this machine: against the current kube context when a cluster answers,
# otherwise against a local control plane (etcd + kube-apiserver built from the Go module proxy).
# Extra arguments go to the manager, e.g. hack/run.sh --watch-namespaces=team-a --zap-log-level=debug
set -euo pipefail
cd "$(dirname "$0")/.."

# No serving certificate on a developer machine, so the admission webhooks stay off.
manager_args=(--health-probe-bind-address=127.0.0.1:8081 --metrics-bind-address=127.0.0.1:8080 --enable-webhooks=false "$@")

if kubectl version --request-timeout=5s >/dev/null 2>&1; then
  echo "run: using kube context '$(kubectl config current-context)'; installing CRDs (server-side apply)"
  make --no-print-directory install
  exec go run ./cmd "${manager_args[@]}"
fi

echo "run: no cluster reachable; starting a local control plane"
make --no-print-directory envtest-assets
assets="$(bin/setup-envtest-* use 1.37 --bin-dir bin -p path)"
kubeconfig="$PWD/.dev/kubeconfig"
rm -f "$kubeconfig"
KUBEBUILDER_ASSETS="$assets" go run ./test/cmd/devcluster --write-kubeconfig "$kubeconfig" &
cluster_pid=$!
trap 'kill "$cluster_pid" 2>/dev/null; wait "$cluster_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  [[ -f "$kubeconfig" ]] && break
  kill -0 "$cluster_pid" 2>/dev/null || { echo "run: the local control plane failed to start" >&2; exit 1; }
  sleep 0.5
done
[[ -f "$kubeconfig" ]] || { echo "run: the local control plane did not come up in 150s" >&2; exit 1; }
echo "run: local control plane up; in another shell: export KUBECONFIG=$kubeconfig"
KUBECONFIG="$kubeconfig" go run ./cmd "${manager_args[@]}"
