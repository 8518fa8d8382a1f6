package nodeclaim

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Condition reasons the lifecycle controller writes.
const (
	// ReasonLaunched, ReasonRegistered, ReasonInitialized and ReasonReady: the condition holds.
	ReasonLaunched    = "Launched"
	ReasonRegistered  = "Registered"
	ReasonInitialized = "Initialized"
	ReasonReady       = "Ready"
	// ReasonReconcilingDependents: Ready is Unknown, a condition it depends on being Unknown.
	ReasonReconcilingDependents = "ReconcilingDependents"
	// ReasonUnhealthyDependents: Ready is False, a condition it depends on being False.
	ReasonUnhealthyDependents = "UnhealthyDependents"
	// ReasonLaunchFailed: Create failed with an error that carries no reason of its own.
	ReasonLaunchFailed = "LaunchFailed"
	// ReasonNodeNotFound: no Node with the claim's provider ID has joined yet (or the claim has
	// no provider ID yet).
	ReasonNodeNotFound = "NodeNotFound"
	// ReasonMultipleNodesFound: several Nodes carry the claim's provider ID.
	ReasonMultipleNodesFound = "MultipleNodesFound"
	// ReasonAwaitingBatch: the Node has joined and registration waits, at most
	// MaxRegistrationHold, for the nodes launched with it and the pods planned for it
	// (LifecycleOptions.HoldRegistration).
	ReasonAwaitingBatch = "AwaitingBatch"
	// ReasonAwaitingReconciliation: initialization waits for registration (operatorpkg's
	// reason for a condition not reconciled yet, which Karpenter's Initialized keeps until then).
	ReasonAwaitingReconciliation = "AwaitingReconciliation"
	// ReasonNodeNotReady: the Node is not Ready yet.
	ReasonNodeNotReady = "NodeNotReady"
	// ReasonStartupTaintsExist: a startup taint of the claim is still on the Node.
	ReasonStartupTaintsExist = "StartupTaintsExist"
	// ReasonKnownEphemeralTaintsExist: a taint a starting node sheds on its own
	// (scheduling.IsKnownEphemeralTaint: not-ready, unreachable, …) is still on the Node.
	ReasonKnownEphemeralTaintsExist = "KnownEphemeralTaintsExist"
	// ReasonResourceNotRegistered: an extended resource of the claim is not allocatable on the
	// Node yet.
	ReasonResourceNotRegistered = "ResourceNotRegistered"
	// ReasonInstanceTerminating: the instance is being terminated.
	ReasonInstanceTerminating = "InstanceTerminating"
)

// readinessConditions are the conditions whose conjunction is Ready, in lifecycle order.
var readinessConditions = []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized}

// setCondition sets a condition on the claim, with the transition time from the controller's
// clock when its status changes.
func (c *LifecycleController) setCondition(claim *karpv1.NodeClaim, condType string, status metav1.ConditionStatus, reason, message string) {
	setCondition(claim, c.clock.Now(), condType, status, reason, message)
}

// setCondition sets a condition on the claim at the claim's generation; its transition time
// becomes now only when its status changes.
func setCondition(claim *karpv1.NodeClaim, now time.Time, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            truncate(message, 1024),
		ObservedGeneration: claim.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
}

// setReady sets Ready from Launched, Registered and Initialized as Karpenter v1.15.0's root
// condition (operatorpkg's ConditionSet): True when all three are; False, reason
// UnhealthyDependents, when one is False; else Unknown, reason ReconcilingDependents (a claim
// launching or joining). Its message lists those not True, most recently changed first, as
// "Registered=Unknown, Initialized=Unknown"; one not set yet counts as Unknown.
func (c *LifecycleController) setReady(claim *karpv1.NodeClaim) {
	type dependent struct {
		name   string
		status metav1.ConditionStatus
		since  time.Time
	}
	var unhealthy []dependent
	status := metav1.ConditionUnknown
	for _, t := range readinessConditions {
		cond := meta.FindStatusCondition(claim.Status.Conditions, t)
		switch {
		case cond == nil:
			unhealthy = append(unhealthy, dependent{t, metav1.ConditionUnknown, claim.CreationTimestamp.Time})
		case cond.Status != metav1.ConditionTrue:
			unhealthy = append(unhealthy, dependent{t, cond.Status, cond.LastTransitionTime.Time})
			if cond.Status == metav1.ConditionFalse {
				status = metav1.ConditionFalse
			}
		}
	}
	if len(unhealthy) == 0 {
		c.setCondition(claim, karpv1.ConditionTypeReady, metav1.ConditionTrue, ReasonReady, "")
		return
	}
	slices.SortStableFunc(unhealthy, func(a, b dependent) int { return b.since.Compare(a.since) })
	parts := make([]string, len(unhealthy))
	for i, d := range unhealthy {
		parts[i] = d.name + "=" + string(d.status)
	}
	reason := ReasonReconcilingDependents
	if status == metav1.ConditionFalse {
		reason = ReasonUnhealthyDependents
	}
	c.setCondition(claim, karpv1.ConditionTypeReady, status, reason, strings.Join(parts, ", "))
}

func isTrue(claim *karpv1.NodeClaim, condType string) bool {
	return meta.IsStatusConditionTrue(claim.Status.Conditions, condType)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-3], "") + "..."
}
