#!/usr/bin/env bash
# build-helm.sh installs the Helm CLI the chart tests run (charts/karpenter) from the Go module
# proxy into a git-ignored folder. It does nothing when the binary there already reports the
# wanted version, so reruns take well under a second.
#
# Usage: hack/build-helm.sh [DEST]   (DEST defaults to bin in the repository)
#
# Helm is installed with `go install`, not required by go.mod: the project does not import it,
# and its dependency tree would otherwise pull hundreds of modules into go.sum.
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.22.0}
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/bin}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

if [[ -x "$dest/helm" ]] && "$dest/helm" version --template '{{.Version}}' 2>/dev/null | grep -qx -- "$HELM_VERSION"; then
  exit 0
fi
echo "build-helm: installing helm $HELM_VERSION into $dest (1-2 minutes cold, on 2 cores)" >&2
# `go install` leaves what Helm's release build stamps at their source defaults: its version
# ("v3.22") and the Kubernetes version `helm template` and `helm lint` assume (1.20, too old
# for the chart's kubeVersion). Stamp them as the release does: the latter is the minor of the
# k8s.io/client-go Helm is built with.
gomod=$(GOFLAGS= go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
client_go=$(sed -n 's#^[[:space:]]*k8s.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$gomod")
[[ -n "$client_go" ]] || { echo "build-helm: cannot read the k8s.io/client-go version of helm $HELM_VERSION" >&2; exit 1; }
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$client_go"
done
GOBIN=$dest GOFLAGS= go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
"$dest/helm" version --template '{{.Version}}' | grep -qx -- "$HELM_VERSION" || {
  echo "build-helm: $dest/helm does not report $HELM_VERSION" >&2
  exit 1
}
