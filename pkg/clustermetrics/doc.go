// Package clustermetrics reports the cluster as Karpenter's state metrics and observes pods' bindings
// and startups.
//
// Collector is a prometheus.Collector that builds, on every scrape, the gauges described in
// package metrics from a fresh state.Cluster snapshot and the NodePools' instance types: node
// allocatable, requests, limits and overhead; one sample per pod; NodePool usage, limits and
// cost (counting the NodeClaims whose cost cannot be tracked); offering prices and
// availability; the cluster state's node count, sync and cost.
// Nothing is kept between scrapes but a cache of pod requests, so a node or pod that is gone
// is gone from the next scrape. Started as a manager Runnable (on the elected leader only), it
// serves its gauges on controller-runtime's Registry through metrics.ServeGauges.
//
// PodController watches pods and records, once per pod, the time from its creation (and from
// the first provisioning pass that placed it) until it was bound and until it became Ready,
// and, per pod still waiting, how long it has waited to be bound, to start and for a
// scheduling decision.
package clustermetrics
