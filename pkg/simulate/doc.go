// Package simulate runs Karpenter's controllers offline over a workload and reports the nodes,
// cost and timing they would produce. It owns the workload file (NodePools and NodeClasses as
// plain Karpenter manifests, with the StorageClasses and claims of the pods' volumes, and a
// timeline of deployments, jobs and cloud events, or plain Kubernetes manifests), the engine
// that drives the very same provisioning, NodeClaim and NodePool controllers as the in-cluster
// binary on an embedded in-memory cluster (pkg/simulate/memory) and the simulated cloud
// (pkg/providers/sim) on a virtual clock, and the report. The workloads' pods are made as
// the API server stores them (defaults, RuntimeClass admission, matchLabelKeys merged: pods.go)
// before any scheduler sees them.
//
// The engine is deterministic: for a given workload and seed the report is byte-identical.
package simulate
