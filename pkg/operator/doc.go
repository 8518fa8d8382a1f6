// Package operator wires Karpenter's controllers into one controller-runtime manager: it
// builds the cloud provider the options name, the shared cluster state and offering cache, and
// registers provisioning, NodePool, NodeClaim and cloud-specific controllers, with health and
// metrics endpoints and leader election. cmd/karpenter maps flags and environment variables
// onto Options; nothing else reads them.
package operator
