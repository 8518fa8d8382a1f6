package sim

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// TestInstanceLossRate: each instance draws its loss time at launch from the rate, the same for
// the same seed; at that time it is terminated as Lost, without any call, and the provider no
// longer knows it.
func TestInstanceLossRate(t *testing.T) {
	run := func() (*Cloud, []Instance) {
		c, clk := newTestCloud(t, Options{Seed: 9, Faults: FaultPlan{InstanceLossRate: 1}})
		for i := range 20 {
			mustCreate(t, c, testClaim(fmt.Sprintf("claim-%d", i)))
		}
		clk.Step(time.Hour)
		return c, c.Instances()
	}
	c, a := run()
	_, b := run()
	lost := 0
	for i, in := range a {
		if in.LossTime.IsZero() || !in.LossTime.Equal(b[i].LossTime) {
			t.Fatalf("%s: loss time %v, the same seed's %v: want one drawn at launch, the same each run", in.ID, in.LossTime, b[i].LossTime)
		}
		gone := !in.LossTime.After(epoch.Add(time.Hour))
		if !gone {
			if in.State == InstanceStateTerminated {
				t.Errorf("%s terminated before its loss at %v", in.ID, in.LossTime)
			}
			continue
		}
		lost++
		if in.State != InstanceStateTerminated || in.TerminationReason != TerminationReasonLost || !in.TerminationTime.Equal(in.LossTime) {
			t.Errorf("%s: %s (%s at %v), want terminated as %s at its loss time %v", in.ID, in.State, in.TerminationReason, in.TerminationTime, TerminationReasonLost, in.LossTime)
		}
		if _, err := c.Get(context.Background(), in.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Errorf("Get of lost instance %s: %v, want not found", in.ID, err)
		}
	}
	// At one loss per instance-hour, 1-1/e of the instances are lost within the hour.
	if lost < 6 || lost > 19 {
		t.Errorf("%d of 20 instances lost within an hour at a rate of one an hour", lost)
	}
	if _, err := New(Options{NodeClasses: fakeReader(), Faults: FaultPlan{InstanceLossRate: -1}}); err == nil {
		t.Error("New accepted a negative instance loss rate")
	}
}

// TestStoreKeepsLossTime: a cloud restored from the store loses an instance when the cloud that
// launched it would have, though it was restarted in between.
func TestStoreKeepsLossTime(t *testing.T) {
	ctx := context.Background()
	store := NewConfigMapStore(env.Client, "default", "sim-state-loss")
	t.Cleanup(func() {
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = "default", "sim-state-loss"
		_ = env.Client.Delete(ctx, cm)
	})
	first, _ := newTestCloud(t, Options{Store: store, Seed: 3, Faults: FaultPlan{InstanceLossRate: 2}})
	claim := mustCreate(t, first, testClaim("a"))
	lossAt := first.Instances()[0].LossTime

	// The second cloud has no loss rate: what it knows of the loss comes from the store.
	second, clk := newTestCloud(t, Options{Store: store})
	clk.SetTime(lossAt.Add(-time.Second))
	if _, err := second.Get(ctx, claim.Status.ProviderID); err != nil {
		t.Fatalf("a second before its loss: %v", err)
	}
	if got := second.Instances()[0].LossTime; !got.Equal(lossAt) {
		t.Fatalf("restored loss time %v, want %v", got, lossAt)
	}
	clk.SetTime(lossAt)
	if _, err := second.Get(ctx, claim.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("at its loss time: %v, want not found", err)
	}
	if _, _, err := second.snapshotLive(ctx); err != nil { // as the kubelet's next step, which saves
		t.Fatal(err)
	}
	st, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Instances) != 0 {
		t.Errorf("the store still holds %d instances after the loss", len(st.Instances))
	}
}

// TestThrottleRate: about the rate's share of calls fail with a ThrottlingError and do nothing;
// a throttled Create is a retryable CreateError that says RequestLimitExceeded; retrying gets
// through, and launches once.
func TestThrottleRate(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t, Options{Seed: 11, Faults: FaultPlan{ThrottleRate: 0.5}})
	const n = 200
	throttled := 0
	for i := range n {
		claim := testClaim(fmt.Sprintf("claim-%d", i))
		for {
			_, err := c.Create(ctx, claim)
			if err == nil {
				break
			}
			throttled++
			var ce *cloudprovider.CreateError
			if !IsThrottlingError(err) || !cloudprovider.IsRetryable(err) || !errors.As(err, &ce) || ce.ConditionReason != ReasonRequestLimitExceeded {
				t.Fatalf("throttled create: %v, want a retryable CreateError (%s) wrapping a ThrottlingError", err, ReasonRequestLimitExceeded)
			}
		}
	}
	if throttled < n/2 || throttled > 2*n {
		t.Errorf("%d throttled creates for %d launches at rate 0.5", throttled, n)
	}
	if got := len(c.Instances()); got != n {
		t.Errorf("%d instances for %d claims: throttled calls must launch nothing", got, n)
	}
	id := c.Instances()[0].ProviderID
	calls := map[string]func() error{
		"Get":       func() error { _, err := c.Get(ctx, id); return err },
		"List":      func() error { _, err := c.List(ctx); return err },
		"IsDrifted": func() error { _, err := c.IsDrifted(ctx, testClaim("claim-0")); return err },
	}
	for op, call := range calls {
		seen := 0
		for range 100 {
			if err := call(); err != nil {
				if !IsThrottlingError(err) {
					t.Fatalf("%s: %v, want a ThrottlingError", op, err)
				}
				seen++
			}
		}
		if seen == 0 || seen == 100 {
			t.Errorf("%s throttled %d of 100 calls at rate 0.5", op, seen)
		}
	}
	// A throttled Delete terminates nothing; retried, it does.
	claim := testClaim("claim-1")
	for {
		err := c.Delete(ctx, claim)
		if err == nil {
			break
		}
		if !IsThrottlingError(err) {
			t.Fatalf("Delete: %v", err)
		}
		if got := c.Instances()[1].State; got == InstanceStateTerminated {
			t.Fatal("a throttled Delete terminated the instance")
		}
	}
	if got := c.Instances()[1].State; got != InstanceStateTerminated {
		t.Errorf("after Delete the instance is %s", got)
	}
	for _, rate := range []float64{-0.1, 1.5} {
		if _, err := New(Options{NodeClasses: fakeReader(), Faults: FaultPlan{ThrottleRate: rate}}); err == nil {
			t.Errorf("New accepted throttle rate %v", rate)
		}
	}
}
