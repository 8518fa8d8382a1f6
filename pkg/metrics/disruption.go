package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The disruption controller's metrics beyond its decisions.
var (
	// VoluntaryDisruptionEvaluationDurationSeconds observes how long each disruption method
	// took to evaluate the cluster, by consolidation type and reason.
	VoluntaryDisruptionEvaluationDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemVoluntaryDisruption, Name: "decision_evaluation_duration_seconds",
		Help:    "Duration of a disruption method's evaluation of the cluster in seconds, by consolidation type (empty for drift and expiration) and reason.",
		Buckets: DurationBuckets(),
	}, []string{LabelConsolidationType, LabelReason})
	// VoluntaryDisruptionDecisionsByNodePoolTotal counts the disruption commands carried out,
	// once per NodePool of their candidates.
	VoluntaryDisruptionDecisionsByNodePoolTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemVoluntaryDisruption, Name: "decisions_by_nodepool_total",
		Help: "Disruption decisions carried out, once per nodepool of their nodes, by nodepool, decision, reason and consolidation type.",
	}, []string{LabelNodePool, LabelDecision, LabelReason, LabelConsolidationType})
	// VoluntaryDisruptionTerminateFirstDecisionsTotal counts the terminate-first commands
	// carried out, once per NodePool of their candidates.
	VoluntaryDisruptionTerminateFirstDecisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemVoluntaryDisruption, Name: "terminate_first_decisions_total",
		Help: "Number of terminate-first disruption decisions performed. Labeled by nodepool name, reason, and why the replacement couldn't be staged first.",
	}, []string{LabelNodePool, LabelReason, LabelTerminateFirstReason})
	// VoluntaryDisruptionFailedValidationsTotal counts the consolidation commands dropped
	// because the decision after the validation delay differed.
	VoluntaryDisruptionFailedValidationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemVoluntaryDisruption, Name: "failed_validations_total",
		Help: "Consolidation commands that failed validation (the decision taken after the validation delay differed), by consolidation type.",
	}, []string{LabelConsolidationType})
	// VoluntaryDisruptionQueueFailuresTotal counts the replacements of abandoned disruption
	// commands that never initialized.
	VoluntaryDisruptionQueueFailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemVoluntaryDisruption, Name: "queue_failures_total",
		Help: "Replacements of disruption commands that failed (gone, or not initialized in time) so the command was abandoned, by decision, reason and consolidation type.",
	}, []string{LabelConsolidationType, LabelDecision, LabelReason})
	// VoluntaryDisruptionConsolidationTimeoutsTotal counts the consolidation searches that
	// reached their time limit, by consolidation type (multi or single). Both series start at 0.
	VoluntaryDisruptionConsolidationTimeoutsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemVoluntaryDisruption, Name: "consolidation_timeouts_total",
		Help: "Consolidation searches that reached their time limit (multi-node: one minute, single-node: three minutes), by consolidation type.",
	}, []string{LabelConsolidationType})
	// ConsolidationMovesTotal counts the consolidation moves evaluated, per NodePool of their
	// candidates, approved or rejected (by the Balanced policy).
	ConsolidationMovesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "consolidation_moves_total",
		Help: "Consolidation moves evaluated, per nodepool of their nodes, by decision (approved, or rejected by the Balanced policy), nodepool and its consolidation policy.",
	}, []string{LabelDecision, LabelNodePool, LabelPolicy})
	// ConsolidationScore observes the score of the moves on Balanced NodePools: the share of
	// their cost saved over the share of their pods moved.
	ConsolidationScore = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "consolidation_score",
		Help:    "Score of consolidation moves on Balanced nodepools (share of cost saved over share of pods moved; approved at 0.5 or more), by decision, nodepool and policy.",
		Buckets: []float64{0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0},
	}, []string{LabelDecision, LabelNodePool, LabelPolicy})
	// PodsDisruptionInitiatedTotal counts the reschedulable pods of the NodeClaims disruption
	// deletes, with karpenter_nodeclaims_disrupted_total's labels.
	PodsDisruptionInitiatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "disruption_initiated_total",
		Help: "Pods whose node Karpenter started disrupting (DaemonSet and mirror pods excluded), by the disruption's reason, nodepool, capacity type, consolidation policy and termination mode.",
	}, []string{LabelReason, LabelNodePool, LabelCapacityType, LabelConsolidationPolicy, LabelTerminationMode})
)

// disruptionMetrics are the disruption controller's metrics beyond its decisions: evaluation
// time, consolidation timeouts, failed validations, queue failures, per-NodePool decisions
// (terminate-first ones too), the pods disrupted and the consolidation moves.
func disruptionMetrics() []prometheus.Collector {
	return []prometheus.Collector{VoluntaryDisruptionEvaluationDurationSeconds, VoluntaryDisruptionDecisionsByNodePoolTotal, VoluntaryDisruptionTerminateFirstDecisionsTotal,
		VoluntaryDisruptionFailedValidationsTotal, VoluntaryDisruptionQueueFailuresTotal, PodsDisruptionInitiatedTotal,
		ConsolidationMovesTotal, ConsolidationScore, VoluntaryDisruptionConsolidationTimeoutsTotal}
}

func init() {
	// As Karpenter's, the series of the two searches that can time out exist from the start.
	for _, t := range []string{ConsolidationTypeMulti, ConsolidationTypeSingle} {
		VoluntaryDisruptionConsolidationTimeoutsTotal.WithLabelValues(t)
	}
}

// ConsolidationTimedOut records a consolidation search of the type (ConsolidationTypeMulti or
// ConsolidationTypeSingle) that reached its time limit.
func ConsolidationTimedOut(consolidationType string) {
	VoluntaryDisruptionConsolidationTimeoutsTotal.WithLabelValues(consolidationType).Inc()
}

// ObserveDisruptionEvaluation records a disruption method's evaluation that took d.
func ObserveDisruptionEvaluation(consolidationType, reason string, d time.Duration) {
	VoluntaryDisruptionEvaluationDurationSeconds.WithLabelValues(consolidationType, reason).Observe(d.Seconds())
}

// NodePoolDisruptionDecision records a command carried out on nodes of the NodePool.
func NodePoolDisruptionDecision(nodePool, decision, reason, consolidationType string) {
	VoluntaryDisruptionDecisionsByNodePoolTotal.WithLabelValues(nodePool, decision, reason, consolidationType).Inc()
}

// TerminateFirstDecision records a terminate-first command carried out on nodes of the
// NodePool, for the disruption reason, and why its replacement could not launch first.
func TerminateFirstDecision(nodePool, reason, terminateFirstReason string) {
	VoluntaryDisruptionTerminateFirstDecisionsTotal.WithLabelValues(nodePool, reason, terminateFirstReason).Inc()
}

// DisruptionValidationFailed records a consolidation command of the type that failed validation.
func DisruptionValidationFailed(consolidationType string) {
	VoluntaryDisruptionFailedValidationsTotal.WithLabelValues(consolidationType).Inc()
}

// DisruptionQueueFailed records n replacements of an abandoned command that failed.
func DisruptionQueueFailed(consolidationType, decision, reason string, n int) {
	VoluntaryDisruptionQueueFailuresTotal.WithLabelValues(consolidationType, decision, reason).Add(float64(n))
}

// PodsDisruptionInitiated records pods, the reschedulable pods of a NodeClaim whose disruption
// NodeClaimDisrupted records with the same labels.
func PodsDisruptionInitiated(pods int, reason, nodePool, capacityType, consolidationPolicy, terminationMode string) {
	PodsDisruptionInitiatedTotal.WithLabelValues(reason, nodePool, capacityType, consolidationPolicy, terminationMode).Add(float64(pods))
}

// Values of LabelDecision for the consolidation moves.
const (
	DecisionApproved = "approved"
	DecisionRejected = "rejected"
)

// moveDecision is the decision label of a move.
func moveDecision(approved bool) string {
	if approved {
		return DecisionApproved
	}
	return DecisionRejected
}

// ConsolidationMove records a consolidation move evaluated on nodes of the NodePool, whose
// consolidation policy is policy.
func ConsolidationMove(nodePool, policy string, approved bool) {
	ConsolidationMovesTotal.WithLabelValues(moveDecision(approved), nodePool, policy).Inc()
}

// ObserveConsolidationScore records the score of a move on a Balanced NodePool.
func ObserveConsolidationScore(nodePool, policy string, approved bool, score float64) {
	ConsolidationScore.WithLabelValues(moveDecision(approved), nodePool, policy).Observe(score)
}
