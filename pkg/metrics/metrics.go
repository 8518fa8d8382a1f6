package metrics

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Subsystems: the second word of the metric names.
const (
	subsystemNodeClaims          = "nodeclaims"
	subsystemNodes               = "nodes"
	subsystemPods                = "pods"
	subsystemNodePools           = "nodepools"
	subsystemScheduler           = "scheduler"
	subsystemVoluntaryDisruption = "voluntary_disruption"
	subsystemCloudProvider       = "cloudprovider"
	subsystemClusterState        = "cluster_state"
)

// DurationBuckets are the bucket bounds of the duration histograms, in seconds: from 5ms (a
// cached call) to 10 minutes (a slow launch or a large scheduling run).
func DurationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
}

// The event metrics. Read them in tests (prometheus/testutil); update them through the
// recording functions below, which know each one's label order.
var (
	// NodeClaimsCreatedTotal counts the NodeClaims created, by reason (ReasonProvisioned,
	// ReasonStatic, or the disruption reason a replacement is for) and NodePool.
	NodeClaimsCreatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemNodeClaims, Name: "created_total",
		Help: "NodeClaims created by Karpenter, by why they were created (provisioned, static, or the disruption reason of a replacement) and the owning nodepool.",
	}, []string{LabelReason, LabelNodePool})
	// NodeClaimsTerminatedTotal counts the NodeClaims whose instance terminated and whose
	// finalizer was removed, by NodePool, capacity type and zone.
	NodeClaimsTerminatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemNodeClaims, Name: "terminated_total",
		Help: "NodeClaims whose instance Karpenter terminated and whose finalizer it removed, by owning nodepool, capacity type and zone.",
	}, []string{LabelNodePool, LabelCapacityType, LabelZone})
	// NodeClaimsDisruptedTotal counts the NodeClaims Karpenter deleted to disrupt them, by
	// reason (a DisruptionReason, ReasonLiveness or ReasonGarbageCollected), NodePool and
	// capacity type.
	NodeClaimsDisruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemNodeClaims, Name: "disrupted_total",
		Help: "NodeClaims Karpenter deleted to disrupt them, by reason (empty, underutilized, drifted, expired, interrupted, liveness, garbage_collected), owning nodepool and capacity type.",
	}, []string{LabelReason, LabelNodePool, LabelCapacityType})
	// VoluntaryDisruptionDecisionsTotal counts the disruption commands carried out, by
	// decision, reason and consolidation type.
	VoluntaryDisruptionDecisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemVoluntaryDisruption, Name: "decisions_total",
		Help: "Disruption decisions carried out, by decision (delete, replace), reason and consolidation type (empty, single, multi; empty for drift and expiration).",
	}, []string{LabelDecision, LabelReason, LabelConsolidationType})
	// SchedulingDurationSeconds observes each provisioning run of the scheduler, by controller.
	SchedulingDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemScheduler, Name: "scheduling_duration_seconds",
		Help:    "Duration of a scheduling run (placing pending pods on nodes and new NodeClaims) in seconds, by controller.",
		Buckets: DurationBuckets(),
	}, []string{LabelController})
	// CloudProviderDurationSeconds observes each CloudProvider call, by calling controller,
	// method and provider.
	CloudProviderDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemCloudProvider, Name: "duration_seconds",
		Help:    "Duration of cloud provider method calls in seconds, by calling controller, method and provider.",
		Buckets: DurationBuckets(),
	}, []string{LabelController, LabelMethod, LabelProvider})
	// CloudProviderErrorsTotal counts the CloudProvider calls that failed, by calling
	// controller, method, provider and error type.
	CloudProviderErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemCloudProvider, Name: "errors_total",
		Help: "Cloud provider method calls that returned an error, by calling controller, method, provider and error type (empty when untyped).",
	}, []string{LabelController, LabelMethod, LabelProvider, LabelError})
	// PodsNominationsRefusedTotal counts the nominations that ended with their node turning
	// the pod away, by NodePool, what differed (RefusalLabel, RefusalTaint, RefusalResource,
	// RefusalHostPort or RefusalUnknown) and whether the node was launched for the pod.
	PodsNominationsRefusedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "nominations_refused_total",
		Help: "Pods that the node Karpenter planned them on (nominated them to) did not take once it was ready, by nodepool, what differed (label, taint, resource, host_port, unknown) and whether the node was launched for the pod.",
	}, []string{LabelNodePool, LabelReason, LabelLaunched})
	// PodStartupDurationSeconds observes, once per pod, the time from its creation until it
	// became Ready.
	PodStartupDurationSeconds = prometheus.NewSummary(prometheus.SummaryOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "startup_duration_seconds",
		Help:       "Time from a pod's creation until it became ready, in seconds, observed once per pod.",
		Objectives: map[float64]float64{0: 0.01, 0.5: 0.01, 0.9: 0.01, 0.99: 0.001, 1: 0.001},
	})
)

// eventMetrics are the metrics above, registered together.
func eventMetrics() []prometheus.Collector {
	return []prometheus.Collector{
		NodeClaimsCreatedTotal, NodeClaimsTerminatedTotal, NodeClaimsDisruptedTotal,
		VoluntaryDisruptionDecisionsTotal, SchedulingDurationSeconds,
		CloudProviderDurationSeconds, CloudProviderErrorsTotal, PodStartupDurationSeconds,
		PodsNominationsRefusedTotal, gauges,
	}
}

func init() {
	if err := Register(crmetrics.Registry); err != nil {
		panic(err)
	}
}

// Register registers every metric of the package on r. The package registers them on
// controller-runtime's Registry when it is initialized; Register is for other registries (a
// test's own). Registering on a registry that already has them is not an error.
func Register(r prometheus.Registerer) error {
	var errs []error
	for _, c := range eventMetrics() {
		if err := r.Register(c); err != nil {
			if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
				continue
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NodeClaimCreated records a NodeClaim created in the NodePool, for the reason
// (ReasonProvisioned, ReasonStatic or DisruptionReason(r) of the disruption it replaces for).
func NodeClaimCreated(reason, nodePool string) {
	NodeClaimsCreatedTotal.WithLabelValues(reason, nodePool).Inc()
}

// NodeClaimTerminated records a NodeClaim of the NodePool, capacity type and zone whose
// instance terminated and whose finalizer was removed.
func NodeClaimTerminated(nodePool, capacityType, zone string) {
	NodeClaimsTerminatedTotal.WithLabelValues(nodePool, capacityType, zone).Inc()
}

// NodeClaimDisrupted records a NodeClaim deleted to disrupt it, for the reason
// (DisruptionReason(r), ReasonLiveness or ReasonGarbageCollected).
func NodeClaimDisrupted(reason, nodePool, capacityType string) {
	NodeClaimsDisruptedTotal.WithLabelValues(reason, nodePool, capacityType).Inc()
}

// DisruptionDecision records a disruption command carried out: its decision (DecisionDelete
// or DecisionReplace), reason (DisruptionReason(r)) and consolidation type (ConsolidationType*
// constants, or "" for drift and expiration).
func DisruptionDecision(decision, reason, consolidationType string) {
	VoluntaryDisruptionDecisionsTotal.WithLabelValues(decision, reason, consolidationType).Inc()
}

// ObserveSchedulingDuration records a scheduling run of the controller that took d.
func ObserveSchedulingDuration(controller string, d time.Duration) {
	SchedulingDurationSeconds.WithLabelValues(controller).Observe(d.Seconds())
}

// ObserveCloudProviderCall records a call of the provider's method made by the controller
// that took d; failed, with errorType the type of the error it returned ("" when untyped),
// unless it succeeded.
func ObserveCloudProviderCall(controller, method, provider string, d time.Duration, failed bool, errorType string) {
	CloudProviderDurationSeconds.WithLabelValues(controller, method, provider).Observe(d.Seconds())
	if failed {
		CloudProviderErrorsTotal.WithLabelValues(controller, method, provider, errorType).Inc()
	}
}

// ObservePodStartup records the time from a pod's creation until it became ready.
func ObservePodStartup(d time.Duration) { PodStartupDurationSeconds.Observe(d.Seconds()) }

// What differed between a pod and the node that turned it away (the reason label of
// PodsNominationsRefusedTotal).
const (
	RefusalLabel    = "label"
	RefusalTaint    = "taint"
	RefusalResource = "resource"
	RefusalHostPort = "host_port"
	RefusalUnknown  = "unknown"
)

// NominationRefused records a pod that its nominated node, of the NodePool, turned away for
// the reason (a Refusal* constant); launched says the node was launched for the pod.
func NominationRefused(nodePool, reason string, launched bool) {
	PodsNominationsRefusedTotal.WithLabelValues(nodePool, reason, strconv.FormatBool(launched)).Inc()
}
