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
