package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The results of a reboot node repair carried out, as the result label of the reboot metrics
// (Karpenter v1.15's nodeclaim/reboot metrics).
const (
	// RebootSucceeded: the node rebooted and rejoined (a new boot ID, and Ready).
	RebootSucceeded = "succeeded"
	// RebootProviderError: the cloud refused the reboot for good, or did not accept it within
	// the issuance timeout.
	RebootProviderError = "provider_error"
	// RebootRecoveryTimeout: the node did not rejoin within the observation window.
	RebootRecoveryTimeout = "recovery_timeout"
	// RebootInvalidRequest: the committed reboot's drain bound was malformed or negative.
	RebootInvalidRequest = "invalid_request"
)

// rebootDurationBuckets span a fast reboot to the observation window: 10 s to 1,280 s.
var rebootDurationBuckets = prometheus.ExponentialBuckets(10, 2, 8)

var (
	// NodesRebootsTotal counts the reboots carried out, by result.
	NodesRebootsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemNodes, Name: "reboots_total",
		Help: "Number of node reboots carried out by Karpenter, labeled by terminal result (succeeded, provider_error, recovery_timeout).",
	}, []string{LabelResult})
	// NodesRebootDurationSeconds times reboots from their request to their end, by result.
	NodesRebootDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemNodes, Name: "reboot_duration_seconds",
		Help:    "Duration of the full reboot action from request to terminal outcome, labeled by result.",
		Buckets: rebootDurationBuckets,
	}, []string{LabelResult})
	// NodesRebootRecoveryDurationSeconds times successful reboots from their issue to the
	// node's rejoining.
	NodesRebootRecoveryDurationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemNodes, Name: "reboot_recovery_duration_seconds",
		Help:    "Time from issuing a reboot until the node proved a new boot and rejoined (bootID changed + Ready). Recorded on successful reboots only.",
		Buckets: rebootDurationBuckets,
	})
)

func rebootMetrics() []prometheus.Collector {
	return []prometheus.Collector{NodesRebootsTotal, NodesRebootDurationSeconds, NodesRebootRecoveryDurationSeconds}
}

// RebootEnded records a reboot that ended with the result (RebootSucceeded, …) took from its
// request; recovery, for a successful one issued, from its issue to the node's rejoining
// (negative: not recorded).
func RebootEnded(result string, duration, recovery time.Duration) {
	NodesRebootsTotal.WithLabelValues(result).Inc()
	NodesRebootDurationSeconds.WithLabelValues(result).Observe(duration.Seconds())
	if result == RebootSucceeded && recovery >= 0 {
		NodesRebootRecoveryDurationSeconds.Observe(recovery.Seconds())
	}
}
