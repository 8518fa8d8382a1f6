#!/bin/bash
set -o errexit
set -o nounset
set -o pipefail

NODEUP_URL_AMD64=https://artifacts.k8s.io/binaries/kops/1.36.0/linux/amd64/nodeup
NODEUP_HASH_AMD64=0000000000000000000000000000000000000000000000000000000000000000

export AWS_REGION=eu-central-1

cat > conf/kube_env.yaml << '__EOF_KUBE_ENV'
CloudProvider: aws
ConfigServer:
  servers:
  - https://kops-controller.internal.my-cluster.example.com:3988/
InstanceGroupName: batch
InstanceGroupRole: Node
NodeupConfigHash: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
__EOF_KUBE_ENV

download-release
echo "== nodeup node config done =="
