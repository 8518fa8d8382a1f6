// Package cluster reports the cluster as Karpenter's state metrics and observes pod startups.
//
// Collector is a prometheus.Collector that builds, on every scrape, the gauges described in
// package metrics from a fresh state.Cluster snapshot and the NodePools' instance types: node
// allocatable, requests, limits and overhead; one sample per pod; NodePool usage, limits and
// cost; offering prices and availability; the cluster state's node count, sync and cost.
// Nothing is kept between scrapes but a cache of pod requests, so a node or pod that is gone
// is gone from the next scrape. Started as a manager Runnable (on the elected leader only), it
// serves its gauges on controller-runtime's Registry through metrics.ServeGauges.
//
// PodStartupController watches pods and records, once per pod, the time from its creation
// until it became Ready, for pods that became Ready while it runs.
package cluster
