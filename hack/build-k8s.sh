#!/usr/bin/env bash
# build-k8s.sh builds the Kubernetes control-plane binaries the tests run against (etcd,
# kube-apiserver, kubectl, and with --full also kube-scheduler and kube-controller-manager) from
# the Go module proxy into a git-ignored folder. Binaries whose version already matches are
# skipped, so reruns take well under a second.
#
# Usage: hack/build-k8s.sh [--full] [DEST]   (DEST defaults to bin/k8s in the repository)
#
# Why scratch modules: `go install pkg@version` refuses modules whose go.mod has replace
# directives, which both k8s.io/kubernetes and etcd's server have. A scratch module that
# requires them (and, for Kubernetes, replaces every staging module with its published version)
# builds with the plain toolchain.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.35.8}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
full=false
if [[ "${1:-}" == "--full" ]]; then full=true; shift; fi
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/bin/k8s}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
work=$dest/.src
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export GOFLAGS=-mod=mod

log() { echo "build-k8s: $*" >&2; }

# has_version BIN WANT: the binary exists and its --version output mentions WANT.
has_version() {
  [[ -x "$1" ]] || return 1
  local flags=(--version)
  [[ "$(basename "$1")" == kubectl ]] && flags=(version --client)
  "$1" "${flags[@]}" 2>/dev/null | grep -q -- "$2"
}

build_etcd() {
  if has_version "$dest/etcd" "$ETCD_VERSION"; then return; fi
  log "building etcd $ETCD_VERSION (about 1-2 minutes cold)"
  local dir=$work/etcd
  mkdir -p "$dir"
  cat >"$dir/go.mod" <<MOD
module buildk8s/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v$ETCD_VERSION
MOD
  (cd "$dir" && go build -trimpath -o "$dest/etcd.partial" go.etcd.io/etcd/server/v3)
  mv "$dest/etcd.partial" "$dest/etcd"
}

build_kube() {
  local cmds=(kube-apiserver kubectl)
  if $full; then cmds+=(kube-scheduler kube-controller-manager); fi
  local missing=()
  for c in "${cmds[@]}"; do
    has_version "$dest/$c" "v$K8S_VERSION" || missing+=("$c")
  done
  ((${#missing[@]})) || return 0
  log "building ${missing[*]} $K8S_VERSION (4-8 minutes cold)"
  local dir=$work/kube
  mkdir -p "$dir"
  local gomod
  gomod=$(cd "$dir" && GOFLAGS= go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [[ -f "$gomod" ]] || { log "cannot download k8s.io/kubernetes@v$K8S_VERSION"; exit 1; }
  local staging_version=v0.${K8S_VERSION#1.}
  {
    echo "module buildk8s/kube"
    echo
    grep -E '^(go|godebug) ' "$gomod" || true
    echo
    echo "require k8s.io/kubernetes v$K8S_VERSION"
    echo
    # Every `k8s.io/x => ./staging/src/k8s.io/x` becomes `k8s.io/x => k8s.io/x v0.MINOR.PATCH`.
    sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/src/.*#replace \1 => \1 '"$staging_version"'#p' "$gomod"
  } >"$dir/go.mod"
  local major=1 minor=${K8S_VERSION#1.}; minor=${minor%%.*}
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  local pkgs=()
  for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  mkdir -p "$dir/out"
  (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$dir/out/" "${pkgs[@]}")
  for c in "${missing[@]}"; do mv "$dir/out/$c" "$dest/$c"; done
}

build_etcd
build_kube
log "ready in $dest"
