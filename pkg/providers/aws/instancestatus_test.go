package aws

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

// launchRegistered launches a claim of the NodePool, records it with the termination
// finalizer (so a deleted claim stays until terminated, as in a cluster) and registers its
// Node, and returns the claim and its instance's ID.
func (f *fixture) launchRegistered(np *karpv1.NodePool, name string) (*karpv1.NodeClaim, string) {
	f.t.Helper()
	claim := f.launchRecorded(np, name)
	id, err := instanceIDOf(claim.Status.ProviderID)
	if err != nil {
		f.t.Fatal(err)
	}
	patch := client.MergeFrom(claim.DeepCopy())
	claim.Finalizers = []string{karpv1.TerminationFinalizer}
	if err := env.Client.Patch(f.ctx, claim, patch); err != nil {
		f.t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-" + name}, Spec: corev1.NodeSpec{ProviderID: claim.Status.ProviderID}}
	if err := env.Client.Create(f.ctx, node); err != nil {
		f.t.Fatal(err)
	}
	claim.Status.NodeName = node.Name
	if err := env.Client.Status().Update(f.ctx, claim); err != nil {
		f.t.Fatal(err)
	}
	return claim, id
}

// claimNow reads a claim back from the API server.
func (f *fixture) claimNow(c *karpv1.NodeClaim) *karpv1.NodeClaim {
	f.t.Helper()
	got := &karpv1.NodeClaim{}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(c), got); err != nil {
		f.t.Fatal(err)
	}
	return got
}

// unhealthyCounts are karpenter_interruption_instance_status_unhealthy_total's values by
// category.
func unhealthyCounts() map[string]float64 {
	out := map[string]float64{}
	for _, c := range []string{metrics.CategoryInstanceStatus, metrics.CategorySystemStatus, metrics.CategoryEventStatus} {
		out[c] = testutil.ToFloat64(metrics.InterruptionInstanceStatusUnhealthyTotal.WithLabelValues(c))
	}
	return out
}

// disruptedCount is karpenter_nodeclaims_disrupted_total's value for the claim's NodePool,
// capacity type and termination mode with the reason.
func disruptedCount(claim *karpv1.NodeClaim, reason string) float64 {
	return testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues(reason, claim.Labels[karpv1.NodePoolLabelKey],
		claim.Labels[karpv1.CapacityTypeLabelKey], "", metrics.TerminationMode(claim)))
}

// TestInstanceStatusHandlesUnhealthyInstances: a failed instance or system status check is
// handled once it has failed for two minutes, a scheduled event at once; the claim gets the
// InstanceUnhealthy and TerminatingOnInterruption Events (on it and its Node) and is deleted,
// with its termination timestamp set to now when a check failed (no graceful drain), and
// counted in karpenter_nodeclaims_disrupted_total by category. Healthy instances, and unhealthy
// instances that are no claim's, are left alone. The unhealthy counter counts an instance
// once per category until a poll finds it healthy there again.
func TestInstanceStatusHandlesUnhealthyInstances(t *testing.T) {
	f := newFixture(t)
	t.Cleanup(func() { env.Purge(t, []client.ObjectList{&corev1.NodeList{}}) })
	_, np := f.seed004()
	broken, brokenID := f.launchRegistered(np, "instance-check")
	host, hostID := f.launchRegistered(np, "system-check")
	retiring, retiringID := f.launchRegistered(np, "retirement")
	healthy, healthyID := f.launchRegistered(np, "healthy")
	both, bothID := f.launchRegistered(np, "both-checks")
	// An instance that is no NodeClaim's: another cluster's, to the controller.
	stranger, err := f.provider.Create(f.ctx, claimFor(np, "stranger", nil))
	if err != nil {
		t.Fatal(err)
	}
	strangerID, _ := instanceIDOf(stranger.Status.ProviderID)

	log := &eventlog.Log{}
	c := NewInstanceStatusController(f.provider, log)
	counted, disrupted := unhealthyCounts(), func(claim *karpv1.NodeClaim) map[string]float64 {
		return map[string]float64{
			metrics.MessageTypeInstanceStatus: disruptedCount(claim, metrics.MessageTypeInstanceStatus),
			metrics.MessageTypeSystemStatus:   disruptedCount(claim, metrics.MessageTypeSystemStatus),
			metrics.MessageTypeEventStatus:    disruptedCount(claim, metrics.MessageTypeEventStatus),
		}
	}
	disruptedBefore := disrupted(broken)
	newlyCounted := func() map[string]float64 {
		now, out := unhealthyCounts(), map[string]float64{}
		for k, v := range now {
			if d := v - counted[k]; d != 0 {
				out[k] = d
			}
		}
		counted = now
		return out
	}
	poll := func() {
		t.Helper()
		if err := c.Poll(f.ctx); err != nil {
			t.Fatal(err)
		}
	}

	// The checks start failing; the retirement is scheduled.
	for id, kind := range map[string]fake.StatusCheckKind{brokenID: fake.StatusCheckInstance, hostID: fake.StatusCheckSystem, strangerID: fake.StatusCheckInstance} {
		f.aws.SetStatusCheck(id, kind, fake.StatusCheck{Status: "impaired"})
	}
	f.aws.SetStatusCheck(bothID, fake.StatusCheckInstance, fake.StatusCheck{Status: "impaired"})
	f.aws.SetStatusCheck(bothID, fake.StatusCheckSystem, fake.StatusCheck{Status: "impaired"})
	f.aws.ScheduleEvent(retiringID, fake.InstanceEvent{Code: "instance-retirement"})
	// The attached EBS check is not one Karpenter acts on.
	f.aws.SetStatusCheck(healthyID, fake.StatusCheckAttachedEBS, fake.StatusCheck{Status: "impaired", ImpairedSince: f.clock.Now().Add(-time.Hour)})
	poll()
	if got := newlyCounted(); !sameCounts(got, map[string]float64{metrics.CategoryEventStatus: 1}) {
		t.Errorf("counted %v at once, want only the event", got)
	}
	if got := f.claimNow(retiring); got.DeletionTimestamp == nil || got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] != "" {
		t.Errorf("the retiring claim: deleting %v, termination timestamp %q; want deleted, drained gracefully", got.DeletionTimestamp != nil, got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey])
	}
	if got := f.claimNow(broken); got.DeletionTimestamp != nil {
		t.Error("a check failing for less than two minutes was acted on")
	}

	f.clock.Step(UnhealthyThreshold)
	poll()
	if got := newlyCounted(); !sameCounts(got, map[string]float64{metrics.CategoryInstanceStatus: 2, metrics.CategorySystemStatus: 2}) {
		t.Errorf("counted %v after two minutes, want two instance and two system statuses", got)
	}
	now := f.clock.Now().UTC().Format(time.RFC3339)
	for _, claim := range []*karpv1.NodeClaim{broken, host, both} {
		got := f.claimNow(claim)
		if got.DeletionTimestamp == nil || got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] != now {
			t.Errorf("claim %s: deleting %v, termination timestamp %q; want deleted, terminating at once (%s)", claim.Name, got.DeletionTimestamp != nil,
				got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey], now)
		}
	}
	if got := f.claimNow(healthy); got.DeletionTimestamp != nil || len(got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]) > 0 {
		t.Error("the healthy claim was acted on")
	}
	if inst, ok := f.aws.Instance(strangerID); !ok || inst.State != "running" {
		t.Error("the instance of no claim was touched")
	}
	// Events as Karpenter's, on each claim and its Node.
	for _, claim := range []*karpv1.NodeClaim{broken, host, retiring, both} {
		for _, want := range []eventlog.Event{
			{Kind: "NodeClaim", Name: claim.Name, Type: corev1.EventTypeWarning, Reason: "InstanceUnhealthy", Message: "An unhealthy warning was triggered for the instance"},
			{Kind: "Node", Name: claim.Status.NodeName, Type: corev1.EventTypeWarning, Reason: "InstanceUnhealthy", Message: "An unhealthy warning was triggered for the instance"},
			{Kind: "NodeClaim", Name: claim.Name, Type: corev1.EventTypeWarning, Reason: "TerminatingOnInterruption", Message: "Interruption triggered termination for the NodeClaim"},
			{Kind: "Node", Name: claim.Status.NodeName, Type: corev1.EventTypeWarning, Reason: "TerminatingOnInterruption", Message: "Interruption triggered termination for the Node"},
		} {
			if !slices.Contains(log.Events(), want) {
				t.Errorf("no event %s", want)
			}
		}
	}
	for _, e := range log.Events() {
		if e.Name == healthy.Name || e.Name == healthy.Status.NodeName || e.Name == "stranger" {
			t.Errorf("event on an instance left alone: %s", e)
		}
	}
	// Each claim is disrupted once: the one failing both checks for the first, its instance
	// status.
	disruptedAfter := disrupted(broken)
	for reason, want := range map[string]float64{metrics.MessageTypeInstanceStatus: 2, metrics.MessageTypeSystemStatus: 1, metrics.MessageTypeEventStatus: 1} {
		if got := disruptedAfter[reason] - disruptedBefore[reason]; got != want {
			t.Errorf("karpenter_nodeclaims_disrupted_total{reason=%q}: %v more, want %v", reason, got, want)
		}
	}

	// Still unhealthy a minute later, and in a second category: counted once per category, the
	// claims not deleted nor counted as disrupted again.
	f.aws.ScheduleEvent(brokenID, fake.InstanceEvent{Code: "system-maintenance"})
	f.clock.Step(time.Minute)
	poll()
	if got := newlyCounted(); !sameCounts(got, map[string]float64{metrics.CategoryEventStatus: 1}) {
		t.Errorf("counted %v on the next poll, want only the new event", got)
	}
	if got := disrupted(broken); !sameCounts(got, disruptedAfter) {
		t.Errorf("claims counted as disrupted again: %v, was %v", got, disruptedAfter)
	}

	// Healthy again, then failing anew: counted again.
	f.aws.SetStatusCheck(brokenID, fake.StatusCheckInstance, fake.StatusCheck{Status: "ok"})
	f.clock.Step(time.Minute)
	poll()
	if got := newlyCounted(); len(got) != 0 {
		t.Errorf("counted %v while nothing newly failed", got)
	}
	f.aws.SetStatusCheck(brokenID, fake.StatusCheckInstance, fake.StatusCheck{Status: "impaired"})
	f.clock.Step(UnhealthyThreshold)
	poll()
	if got := newlyCounted(); !sameCounts(got, map[string]float64{metrics.CategoryInstanceStatus: 1}) {
		t.Errorf("counted %v when the instance failed again, want one instance status", got)
	}
}

// sameCounts says two sets of metric values by label are equal.
func sameCounts(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestInstanceStatusUnauthorized: without ec2:DescribeInstanceStatus the controller logs it
// and stops polling after its one call, as Karpenter's does; it neither crashes nor retries.
func TestInstanceStatusUnauthorized(t *testing.T) {
	f := newFixture(t)
	f.aws.DenyEC2("DescribeInstanceStatus")
	c := NewInstanceStatusController(f.provider, nil)
	if err := c.Poll(f.ctx); errorCode(err) != "UnauthorizedOperation" {
		t.Fatalf("Poll: %v, want UnauthorizedOperation", err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run still polls after UnauthorizedOperation")
	}
	f.clock.Step(time.Hour)
	if n := f.aws.Calls("DescribeInstanceStatus"); n != 2 {
		t.Errorf("%d calls, want 2 (one Poll, one Run)", n)
	}
}

// TestInstanceStatusRetriesFailures: a poll that fails (here throttled past every retry of the
// SDK) is tried again after a backoff; then the controller polls every Interval.
func TestInstanceStatusRetriesFailures(t *testing.T) {
	f := newFixture(t)
	f.aws.Throttle("DescribeInstanceStatus", MaxAttempts)
	c := NewInstanceStatusController(f.provider, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	// Each poll makes three calls, one per query, when nothing fails.
	for i, want := range []int{MaxAttempts, MaxAttempts + 3, MaxAttempts + 6} {
		waitUntil(t, fmt.Sprintf("poll %d waiting", i+1), func() (bool, string) {
			n := f.aws.Calls("DescribeInstanceStatus")
			return n == want && f.clock.HasWaiters(), fmt.Sprintf("%d calls, want %d", n, want)
		})
		step := c.Interval
		if i == 0 {
			step = 5 * time.Millisecond // the first backoff
		}
		f.clock.Step(step)
	}
}

// waitUntil checks cond every few milliseconds until it holds, failing the test with cond's
// last detail after 30 seconds.
func waitUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, detail)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
