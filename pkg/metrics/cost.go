package metrics

import "github.com/prometheus/client_golang/prometheus"

// NodePoolsCostTrackerErrorsTotal counts, per NodePool, the launched NodeClaims whose cost
// could not be tracked: their NodePool is gone or its instance types could not be listed.
// The costs are computed at every scrape (karpenter_nodepools_cost_total), so such a NodeClaim
// counts once per scrape while it lasts, where Karpenter counts each failed attempt to add it
// to its cost tracker.
var NodePoolsCostTrackerErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: Namespace, Subsystem: subsystemNodePools, Name: "cost_tracker_errors_total",
	Help: "Launched nodeclaims whose cost could not be tracked at a scrape (their nodepool gone, or its instance types not listed), by nodepool.",
}, []string{LabelNodePool})

// CostTrackerError records a launched NodeClaim of the NodePool whose cost could not be
// tracked.
func CostTrackerError(nodePool string) {
	NodePoolsCostTrackerErrorsTotal.WithLabelValues(nodePool).Inc()
}
