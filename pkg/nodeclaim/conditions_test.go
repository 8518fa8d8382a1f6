package nodeclaim

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// TestReadyAsKarpentersRootCondition: Ready follows its three dependents as operatorpkg's root
// condition in Karpenter v1.15.0: True when all are, False (UnhealthyDependents) when one is
// False, else Unknown (ReconcilingDependents), the message naming those not True, the most
// recently changed first, one not set counting as Unknown.
func TestReadyAsKarpentersRootCondition(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	c := &LifecycleController{clock: clocktesting.NewFakeClock(now)}
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	for _, tc := range []struct {
		name            string
		conditions      []metav1.Condition
		status          metav1.ConditionStatus
		reason, message string
	}{
		{"none set", nil, metav1.ConditionUnknown, ReasonReconcilingDependents, "Launched=Unknown, Registered=Unknown, Initialized=Unknown"},
		{"one false", []metav1.Condition{
			{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, LastTransitionTime: at(3 * time.Minute)},
			{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionUnknown, LastTransitionTime: at(2 * time.Minute)},
			{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionFalse, LastTransitionTime: at(time.Minute)},
		}, metav1.ConditionFalse, ReasonUnhealthyDependents, "Initialized=False, Registered=Unknown"},
		{"all true", []metav1.Condition{
			{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, LastTransitionTime: at(3 * time.Minute)},
			{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue, LastTransitionTime: at(2 * time.Minute)},
			{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, LastTransitionTime: at(time.Minute)},
		}, metav1.ConditionTrue, ReasonReady, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", CreationTimestamp: at(5 * time.Minute)}}
			claim.Status.Conditions = tc.conditions
			c.setReady(claim)
			got := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeReady)
			if got == nil || got.Status != tc.status || got.Reason != tc.reason || got.Message != tc.message {
				t.Errorf("Ready = %+v, want %s (%s: %q)", got, tc.status, tc.reason, tc.message)
			}
		})
	}
}
