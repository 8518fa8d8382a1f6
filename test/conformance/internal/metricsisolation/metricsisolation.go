// Package metricsisolation lets our metrics and Karpenter's share one test binary. Both
// register metrics of the same names (karpenter_nodeclaims_created_total, …) with different
// labels into controller-runtime's global registry at init, which panics. Imported before
// Karpenter's packages, it gives controller-runtime a fresh registry once ours has registered,
// so Karpenter's register there. Go initializes packages in import-path order when their
// imports allow; this path sorts before sigs.k8s.io/karpenter, and it imports our metrics.
package metricsisolation

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	_ "github.com/openkarpenter/karpenter/pkg/metrics" // registers first
)

func init() {
	crmetrics.Registry = prometheus.NewRegistry()
}
