package metrics

import (
	"errors"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
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
	}, []string{LabelReason, LabelNodePool, LabelMinValuesRelaxed})
	// NodeClaimsTerminatedTotal counts the NodeClaims whose instance terminated and whose
	// finalizer was removed, by NodePool, capacity type and zone.
	NodeClaimsTerminatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemNodeClaims, Name: "terminated_total",
		Help: "NodeClaims whose instance Karpenter terminated and whose finalizer it removed, by owning nodepool, capacity type and zone.",
	}, []string{LabelNodePool, LabelCapacityType, LabelZone})
	// NodeClaimsDisruptedTotal counts the NodeClaims Karpenter deleted to disrupt them, by
	// reason (a DisruptionReason, ReasonLaunchTimeout, ReasonRegistrationTimeout, ReasonNodeClassNotReady, ReasonGarbageCollected or ReasonUnhealthy),
	// NodePool and capacity type.
	NodeClaimsDisruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemNodeClaims, Name: "disrupted_total",
		Help: "NodeClaims Karpenter deleted to disrupt them, by reason (empty, underutilized, drifted, expired, interrupted, liveness, garbage_collected, unhealthy), owning nodepool and capacity type.",
	}, []string{LabelReason, LabelNodePool, LabelCapacityType, LabelConsolidationPolicy, LabelTerminationMode})
	// NodeClaimsUnhealthyDisruptedTotal counts the NodeClaims node repair deleted, by the
	// condition that made their node unhealthy (ConditionLabel), NodePool, capacity type,
	// image and termination mode.
	NodeClaimsUnhealthyDisruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemNodeClaims, Name: "unhealthy_disrupted_total",
		Help: "Number of unhealthy nodeclaims disrupted in total by node repair. Labeled by the condition the node was disrupted on, the owning nodepool, the capacity type, the image ID, and the termination mode.",
	}, []string{LabelCondition, LabelNodePool, LabelCapacityType, LabelImageID, LabelTerminationMode})
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
	// controller, method, provider, error type and the NodePool the call was for (empty when
	// it was for none).
	CloudProviderErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemCloudProvider, Name: "errors_total",
		Help: "Cloud provider method calls that returned an error, by calling controller, method, provider, error type (empty when untyped) and nodepool (empty when the call was for none).",
	}, []string{LabelController, LabelMethod, LabelProvider, LabelError, LabelNodePool})
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
	// NodeClaimsTerminationDurationSeconds observes the time from a NodeClaim's deletion to the
	// removal of its finalizer.
	NodeClaimsTerminationDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemNodeClaims, Name: "termination_duration_seconds",
		Help:    "Duration of NodeClaim termination in seconds: from its deletion to the removal of its finalizer, by owning nodepool.",
		Buckets: DurationBuckets(),
	}, []string{LabelNodePool})
	// NodeClaimsInstanceTerminationDurationSeconds observes how long a NodeClaim's instance took
	// to terminate once asked.
	NodeClaimsInstanceTerminationDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemNodeClaims, Name: "instance_termination_duration_seconds",
		Help:    "Duration of cloud provider instance termination in seconds: from the InstanceTerminating condition to the instance being gone, by owning nodepool.",
		Buckets: DurationBuckets(),
	}, []string{LabelNodePool})
	// NodesCreatedTotal counts the Nodes that registered for a NodeClaim, by NodePool and zone.
	NodesCreatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemNodes, Name: "created_total",
		Help: "Nodes created in total by Karpenter (registered for their NodeClaim), by owning nodepool and zone.",
	}, []string{LabelNodePool, LabelZone})
	// NodesTerminatedTotal counts the Nodes whose termination finalizer Karpenter removed, by
	// NodePool and zone.
	NodesTerminatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemNodes, Name: "terminated_total",
		Help: "Nodes terminated in total by Karpenter (their instance gone and their finalizer removed), by owning nodepool and zone.",
	}, []string{LabelNodePool, LabelZone})
	// NodesTerminationDurationSeconds observes the time from a Node's (or, when the Node was
	// not deleted itself, its NodeClaim's) deletion request to the removal of its finalizer.
	NodesTerminationDurationSeconds = prometheus.NewSummaryVec(prometheus.SummaryOpts{
		Namespace: Namespace, Subsystem: subsystemNodes, Name: "termination_duration_seconds",
		Help:       "Time from a node's deletion request until Karpenter removed its finalizer, in seconds, by owning nodepool.",
		Objectives: map[float64]float64{0: 0.01, 0.5: 0.01, 0.9: 0.01, 0.99: 0.01, 1: 0.01},
	}, []string{LabelNodePool})
	// NodesLifetimeDurationSeconds observes a terminated Node's age.
	NodesLifetimeDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemNodes, Name: "lifetime_duration_seconds",
		Help:    "Lifetime of the nodes Karpenter terminated, from creation to the removal of their finalizer, in seconds, by owning nodepool.",
		Buckets: lifetimeBuckets(),
	}, []string{LabelNodePool})
	// NodesDrainedTotal counts the Nodes whose drain completed, once each.
	NodesDrainedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemNodes, Name: "drained_total",
		Help: "Nodes drained by Karpenter, by owning nodepool.",
	}, []string{LabelNodePool})
	// PodsDrainedTotal counts the pods evicted or deleted while draining nodes, by the node's
	// disruption reason (ReasonForcefulTermination when it has none).
	PodsDrainedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "drained_total",
		Help: "Pods evicted or deleted while Karpenter drained their node, by the node's disruption reason (\"Forceful Termination\" when it has none).",
	}, []string{LabelReason})
	// PodsEvictionRequestsTotal counts the Eviction API calls, by HTTP response code.
	PodsEvictionRequestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "eviction_requests_total",
		Help: "Eviction requests Karpenter made while draining nodes, by the API server's response code.",
	}, []string{LabelCode})
	// VoluntaryDisruptionEligibleNodes is, after each disruption pass, how many nodes could be
	// disrupted for each reason.
	VoluntaryDisruptionEligibleNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemVoluntaryDisruption, Name: "eligible_nodes",
		Help: "Nodes eligible for disruption at the last disruption pass, by disruption reason (empty, underutilized, drifted, expired).",
	}, []string{LabelReason})
	// NodePoolsAllowedDisruptions is, after each disruption pass, how many more of a NodePool's
	// nodes its budgets let disrupt for a reason.
	NodePoolsAllowedDisruptions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemNodePools, Name: "allowed_disruptions",
		Help: "Nodes of a nodepool that may start disrupting now under its disruption budgets, by nodepool and reason.",
	}, []string{LabelNodePool, LabelReason})
	// NodePoolsNodesConsumingBudgets is, after each disruption pass, how many of a NodePool's
	// nodes are disrupting (being deleted or not ready) and so count against its budgets.
	NodePoolsNodesConsumingBudgets = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemNodePools, Name: "nodes_consuming_budgets",
		Help: "Nodes of a nodepool that are disrupting now and so consume its disruption budgets, by nodepool and reason.",
	}, []string{LabelNodePool, LabelReason})
	// BuildInfo is 1, labelled with the running binary's build.
	BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help: "A metric with a constant '1' value labeled by version from which karpenter was built.",
	}, []string{LabelVersion, LabelGoVersion, LabelGoArch, LabelCommit})
)

// lifetimeBuckets are the bounds of NodesLifetimeDurationSeconds, as Karpenter's: from 15
// minutes to 30 days.
func lifetimeBuckets() []float64 {
	var out []float64
	const day = 24 * time.Hour
	for _, d := range []time.Duration{15 * time.Minute, 30 * time.Minute, 45 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour,
		6 * time.Hour, 8 * time.Hour, 10 * time.Hour, 12 * time.Hour, 16 * time.Hour, 20 * time.Hour, day, 2 * day, 3 * day, 5 * day,
		10 * day, 15 * day, 20 * day, 25 * day, 30 * day} {
		out = append(out, d.Seconds())
	}
	return out
}

// eventMetrics are the metrics above, registered together.
func eventMetrics() []prometheus.Collector {
	out := []prometheus.Collector{
		NodeClaimsCreatedTotal, NodeClaimsTerminatedTotal, NodeClaimsDisruptedTotal, NodeClaimsUnhealthyDisruptedTotal,
		VoluntaryDisruptionDecisionsTotal, SchedulingDurationSeconds,
		CloudProviderDurationSeconds, CloudProviderErrorsTotal, PodStartupDurationSeconds,
		PodsNominationsRefusedTotal, NodeClaimsTerminationDurationSeconds, NodeClaimsInstanceTerminationDurationSeconds, NodesCreatedTotal, NodesTerminatedTotal, NodesTerminationDurationSeconds,
		NodesLifetimeDurationSeconds, NodesDrainedTotal, PodsDrainedTotal, PodsEvictionRequestsTotal,
		VoluntaryDisruptionEligibleNodes, NodePoolsAllowedDisruptions, NodePoolsNodesConsumingBudgets, BuildInfo, gauges,
		NodePoolsCostTrackerErrorsTotal,
	}
	out = append(out, podMetrics()...)
	out = append(out, awsMetrics()...)
	out = append(out, disruptionMetrics()...)
	out = append(out, packingMetrics()...)
	out = append(out, rebootMetrics()...)
	out = append(out, deletionCostMetrics()...)
	return out
}

func init() {
	SetBuildInfo()
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
// (ReasonProvisioned, ReasonStatic or DisruptionReason(r) of the disruption it replaces for),
// with whether its minValues were relaxed (MIN_VALUES_POLICY=BestEffort).
func NodeClaimCreated(reason, nodePool string, minValuesRelaxed bool) {
	NodeClaimsCreatedTotal.WithLabelValues(reason, nodePool, strconv.FormatBool(minValuesRelaxed)).Inc()
}

// NodeClaimTerminated records a NodeClaim of the NodePool, capacity type and zone whose
// instance terminated and whose finalizer was removed, deleted terminating ago, its instance
// terminating for instanceTerminating (0 when it was gone at once).
func NodeClaimTerminated(nodePool, capacityType, zone string, terminating, instanceTerminating time.Duration) {
	NodeClaimsTerminatedTotal.WithLabelValues(nodePool, capacityType, zone).Inc()
	NodeClaimsTerminationDurationSeconds.WithLabelValues(nodePool).Observe(terminating.Seconds())
	NodeClaimsInstanceTerminationDurationSeconds.WithLabelValues(nodePool).Observe(instanceTerminating.Seconds())
}

// NodeClaimDisrupted records a NodeClaim deleted to disrupt it, for the reason
// (DisruptionReason(r), a timeout, ReasonNodeClassNotReady or ReasonGarbageCollected), with the NodePool's
// consolidation policy when consolidation disrupted it (ConsolidationPolicy, else "") and how
// its drain is bounded (TerminationMode).
func NodeClaimDisrupted(reason, nodePool, capacityType, consolidationPolicy, terminationMode string) {
	NodeClaimsDisruptedTotal.WithLabelValues(reason, nodePool, capacityType, consolidationPolicy, terminationMode).Inc()
}

// NodeClaimRepaired records a NodeClaim node repair deleted, whose node's condition (its
// type, as ConditionLabel writes it) matched a repair policy for longer than the policy
// tolerates: in karpenter_nodeclaims_unhealthy_disrupted_total and, with reason
// ReasonUnhealthy, karpenter_nodeclaims_disrupted_total; its reschedulable pods in
// karpenter_pods_disruption_initiated_total.
func NodeClaimRepaired(condition, nodePool, capacityType, imageID, terminationMode string, pods int) {
	NodeClaimDisrupted(ReasonUnhealthy, nodePool, capacityType, "", terminationMode)
	PodsDisruptionInitiated(pods, ReasonUnhealthy, nodePool, capacityType, "", terminationMode)
	NodeClaimsUnhealthyDisruptedTotal.WithLabelValues(ConditionLabel(condition), nodePool, capacityType, imageID, terminationMode).Inc()
}

// NodeRegistered records a Node that registered for a NodeClaim of the NodePool in the zone.
func NodeRegistered(nodePool, zone string) { NodesCreatedTotal.WithLabelValues(nodePool, zone).Inc() }

// NodeTerminated records a Node of the NodePool whose finalizer was removed: in the zone,
// deleted (asked to be) terminating ago and created lifetime ago.
func NodeTerminated(nodePool, zone string, terminating, lifetime time.Duration) {
	NodesTerminatedTotal.WithLabelValues(nodePool, zone).Inc()
	NodesTerminationDurationSeconds.WithLabelValues(nodePool).Observe(terminating.Seconds())
	NodesLifetimeDurationSeconds.WithLabelValues(nodePool).Observe(lifetime.Seconds())
}

// NodeDrained records a Node of the NodePool whose drain completed.
func NodeDrained(nodePool string) { NodesDrainedTotal.WithLabelValues(nodePool).Inc() }

// PodDrained records a pod evicted or deleted by a drain of a node disrupted for the reason
// (the claim's DisruptionReason condition's reason, or ReasonForcefulTermination).
func PodDrained(reason string) { PodsDrainedTotal.WithLabelValues(reason).Inc() }

// EvictionRequested records an Eviction API call answered with the HTTP status code.
func EvictionRequested(code int) { PodsEvictionRequestsTotal.WithLabelValues(strconv.Itoa(code)).Inc() }

// SetEligibleNodes records how many nodes the last disruption pass found eligible for each
// reason; reasons not given are set to 0.
func SetEligibleNodes(byReason map[karpv1.DisruptionReason]int) {
	for _, r := range []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized, karpv1.DisruptionReasonDrifted} {
		VoluntaryDisruptionEligibleNodes.WithLabelValues(DisruptionReason(r)).Set(float64(byReason[r]))
	}
}

// SetNodePoolBudget records a NodePool's disruption budget for the reason (DisruptionReason(r)):
// how many more nodes may start disrupting, and how many are disrupting.
func SetNodePoolBudget(nodePool, reason string, allowed, disrupting int) {
	NodePoolsAllowedDisruptions.WithLabelValues(nodePool, reason).Set(float64(allowed))
	NodePoolsNodesConsumingBudgets.WithLabelValues(nodePool, reason).Set(float64(disrupting))
}

// ForgetNodePoolBudgets drops the budget gauges of every NodePool, before a pass sets those of
// the NodePools that still have nodes.
func ForgetNodePoolBudgets() {
	NodePoolsAllowedDisruptions.Reset()
	NodePoolsNodesConsumingBudgets.Reset()
}

// SetBuildInfo sets BuildInfo for the running binary: its module version, Go version and
// architecture, and VCS revision, as debug.ReadBuildInfo tells them.
func SetBuildInfo() {
	version, commit := "unknown", "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" {
			version = v
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	BuildInfo.Reset()
	BuildInfo.WithLabelValues(version, runtime.Version(), runtime.GOARCH, commit).Set(1)
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
// for the NodePool ("" when for none) that took d; failed, with errorType the type of the error
// it returned ("" when untyped), unless it succeeded.
func ObserveCloudProviderCall(controller, method, provider, nodePool string, d time.Duration, failed bool, errorType string) {
	CloudProviderDurationSeconds.WithLabelValues(controller, method, provider).Observe(d.Seconds())
	if failed {
		CloudProviderErrorsTotal.WithLabelValues(controller, method, provider, errorType, nodePool).Inc()
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
