package nodeclaim

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// TestLivenessClaimFromTheFuture: a claim the API server stamped a second ahead of our clock
// (it stamps whole seconds, on its own clock) is taken as created now: it is looked at again
// when the launch timeout of a claim created now runs out, not later, and not deleted.
func TestLivenessClaimFromTheFuture(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 500_000_000, time.UTC)
	c := &LifecycleController{clock: clocktesting.NewFakeClock(now), opts: LifecycleOptions{RegistrationTTL: DefaultRegistrationTTL}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "ahead", CreationTimestamp: metav1.NewTime(now.Truncate(time.Second).Add(time.Second))}}
	var res result
	if err := c.liveness(context.Background(), claim, &res); err != nil {
		t.Fatal(err)
	}
	if res.deleted || res.requeueAfter != LaunchTimeout {
		t.Errorf("deleted %v, requeue after %s; want kept, requeued after the launch timeout %s", res.deleted, res.requeueAfter, LaunchTimeout)
	}
}

// TestLivenessFromConditionTransition: as Karpenter's Liveness, the launch timeout runs from the
// Launched condition's last transition (a launch that failed a minute ago has four minutes
// more, though the claim is ten minutes old), the registration TTL from Registered's; from
// creation while the condition is not set. (Deleting a claim past its timeout is
// TestLivenessDeletesUnregisteredClaim's, against the API server.)
func TestLivenessFromConditionTransition(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	c := &LifecycleController{clock: clocktesting.NewFakeClock(now), opts: LifecycleOptions{RegistrationTTL: DefaultRegistrationTTL}}
	for _, tc := range []struct {
		name        string
		age         time.Duration
		conditions  []metav1.Condition
		wantRequeue time.Duration
	}{
		{"launch failed a minute ago", 10 * time.Minute, []metav1.Condition{
			{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))},
		}, 4 * time.Minute},
		{"no condition: from creation", 2 * time.Minute, nil, LaunchTimeout - 2*time.Minute},
		{"launched, registration pending since launch", 10 * time.Minute, []metav1.Condition{
			{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-9 * time.Minute))},
			{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionUnknown, LastTransitionTime: metav1.NewTime(now.Add(-9 * time.Minute))},
		}, DefaultRegistrationTTL - 9*time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", CreationTimestamp: metav1.NewTime(now.Add(-tc.age))}}
			claim.Status.Conditions = tc.conditions
			var res result
			if err := c.liveness(context.Background(), claim, &res); err != nil {
				t.Fatal(err)
			}
			if res.deleted || res.requeueAfter != tc.wantRequeue {
				t.Errorf("deleted %v, requeue after %s; want kept, requeued after %s", res.deleted, res.requeueAfter, tc.wantRequeue)
			}
		})
	}
}
