// Package metrics is the catalogue of Karpenter's Prometheus metrics: every name, label and
// label value is defined here, once, under the names Karpenter itself uses, so that dashboards
// and alerts written for Karpenter work unchanged. docs/metrics.md lists them for operators.
//
// The metrics are registered, when the package is initialized, on controller-runtime's
// Registry (sigs.k8s.io/controller-runtime/pkg/metrics), which the manager serves on /metrics.
// They come in two kinds:
//
//   - Events — counters, histograms and a summary that controllers update as things happen:
//     a NodeClaim created, disrupted or terminated, a disruption decision carried out, a
//     scheduling run, a cloud provider call, a pod becoming ready. Controllers call the
//     recording functions of this package (NodeClaimCreated, ObserveSchedulingDuration, …),
//     which keep each metric's label order in one place.
//   - State — gauges of what the cluster is now: node allocatable and pod requests, pod states,
//     NodePool usage and limits, offering prices, the fleet's cost. They are built afresh on
//     every scrape by the Collector passed to ServeGauges (package clustermetrics builds one
//     from state.Cluster), so a deleted node or pod disappears from them at once. Their
//     descriptions (the *Desc variables) live here with the rest.
//
// This package imports only the API types: every controller may record into it.
package metrics
