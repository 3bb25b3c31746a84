#!/usr/bin/env bash
# Renders the Helm chart with its default values into deploy/addon/, the plain-manifest
# form of the add-on (and the kustomize base's input). CI fails when the committed file
# differs from a fresh rendering, so run this after changing the chart.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
helm="${HELM:-$(command -v helm || echo "$root/.tools/bin/helm")}"
out="$root/deploy/addon/kube-cache-proxy.yaml"
{
  echo "# Rendered from helm/kube-cache-proxy with default values by scripts/render-manifests.sh."
  echo "# Do not edit: change the chart and re-run the script."
  "$helm" template kube-cache-proxy "$root/helm/kube-cache-proxy" --namespace kube-cache-proxy
} > "$out"
echo "wrote $out"
