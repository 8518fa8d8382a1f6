package metrics

import "github.com/prometheus/client_golang/prometheus"

// The packing metrics, ours (Karpenter has none): how far the fleet is from its pods packed
// from scratch (package packing), set by the disruption controller every packing interval.
var (
	// ClusterPackingRatio is the fleet's $/hour over the LP lower bound of its pods re-packed
	// from scratch, per NodePool: 1 is as cheap as the pods allow.
	ClusterPackingRatio = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cluster", Name: "packing_ratio",
		Help: "Price per hour of a nodepool's nodes over the lower bound of the price of its pods packed from scratch on its instance types (1 is as cheap as the pods allow), by nodepool; nodepool \"\" is the whole fleet.",
	}, []string{LabelNodePool})
	// ClusterRepackedCost is what the scheduler's packing of the fleet's pods from scratch
	// would cost, $/hour, per NodePool.
	ClusterRepackedCost = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cluster", Name: "repacked_cost_dollars_per_hour",
		Help: "Estimated price per hour of a nodepool's pods packed from scratch onto new nodes by the provisioning scheduler, by nodepool; nodepool \"\" is the whole fleet.",
	}, []string{LabelNodePool})
	// ClusterPackingBound is the LP lower bound of the fleet's pods packed from scratch,
	// $/hour, per NodePool.
	ClusterPackingBound = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cluster", Name: "packing_bound_dollars_per_hour",
		Help: "Lower bound of the price per hour of a nodepool's pods packed from scratch on its instance types (the LP relaxation's optimum), by nodepool; nodepool \"\" is the whole fleet.",
	}, []string{LabelNodePool})
)

// packingMetrics are the packing gauges, registered together.
func packingMetrics() []prometheus.Collector {
	return []prometheus.Collector{ClusterPackingRatio, ClusterRepackedCost, ClusterPackingBound}
}

// PackingFigures are one NodePool's (or, with NodePool "", the fleet's) packing figures.
type PackingFigures struct {
	// NodePool is the NodePool's name; "" for the whole fleet.
	NodePool string
	// Ratio is current $/hour over Bound; Repacked and Bound are $/hour.
	Ratio, Repacked, Bound float64
}

// SetPacking replaces the packing gauges by figures.
func SetPacking(figures []PackingFigures) {
	for _, g := range []*prometheus.GaugeVec{ClusterPackingRatio, ClusterRepackedCost, ClusterPackingBound} {
		g.Reset()
	}
	for _, f := range figures {
		ClusterPackingRatio.WithLabelValues(f.NodePool).Set(f.Ratio)
		ClusterRepackedCost.WithLabelValues(f.NodePool).Set(f.Repacked)
		ClusterPackingBound.WithLabelValues(f.NodePool).Set(f.Bound)
	}
}
