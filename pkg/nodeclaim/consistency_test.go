package nodeclaim

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// initializedClaim launches a claim that requests cpu and memory, and brings its Node up and
// the claim to Initialized.
func (f *fixture) initializedClaim(name string) *karpv1.NodeClaim {
	f.t.Helper()
	f.createClaim(name, claimOptions{requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
	}})
	f.mustReconcile(name)
	f.stepKubelet()
	f.mustReconcile(name)
	claim := f.claim(name)
	expectCondition(f.t, claim, karpv1.ConditionTypeInitialized, metav1.ConditionTrue, ReasonInitialized)
	return claim
}

// setNodeMemory sets the memory capacity the claim's Node reports.
func (f *fixture) setNodeMemory(claim *karpv1.NodeClaim, memory resource.Quantity) {
	f.t.Helper()
	node := f.nodeOf(claim)
	node.Status.Capacity[corev1.ResourceMemory] = memory
	if err := env.Client.Status().Update(f.ctx, node); err != nil {
		f.t.Fatalf("updating node status: %v", err)
	}
}

func (f *fixture) reconcileConsistency(c *ConsistencyController, name string) reconcile.Result {
	f.t.Helper()
	res, err := c.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		f.t.Fatalf("consistency of %s: %v", name, err)
	}
	return res
}

func TestConsistentStateFound(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	consistency := NewConsistencyController(env.Client, f.clock, f.events)

	// A claim without an instance is not checked.
	f.createClaim("unlaunched", claimOptions{})
	if res := f.reconcileConsistency(consistency, "unlaunched"); res != (reconcile.Result{}) {
		t.Errorf("a claim without a provider id: %+v, want nothing", res)
	}
	if cond := meta.FindStatusCondition(f.claim("unlaunched").Status.Conditions, karpv1.ConditionTypeConsistentStateFound); cond != nil {
		t.Errorf("a claim without a provider id has %+v", cond)
	}

	claim := f.initializedClaim("shape")
	res := f.reconcileConsistency(consistency, "shape")
	if res.RequeueAfter != ConsistencyScanPeriod {
		t.Errorf("RequeueAfter %s, want %s", res.RequeueAfter, ConsistencyScanPeriod)
	}
	claim = f.claim("shape")
	expectCondition(t, claim, karpv1.ConditionTypeConsistentStateFound, metav1.ConditionTrue, ReasonConsistentStateFound)
	// The lifecycle controller leaves the condition alone, and Ready does not depend on it.
	f.mustReconcile("shape")
	claim = f.claim("shape")
	expectCondition(t, claim, karpv1.ConditionTypeConsistentStateFound, metav1.ConditionTrue, ReasonConsistentStateFound)
	expectCondition(t, claim, karpv1.ConditionTypeReady, metav1.ConditionTrue, ReasonReady)

	// The Node shrinks to half the memory the claim expected. Within the scan period nothing
	// is checked; then the check fails, with an Event in Karpenter's words.
	expected := claim.Status.Capacity[corev1.ResourceMemory]
	half := *resource.NewQuantity(expected.Value()/2, resource.BinarySI)
	f.setNodeMemory(claim, half)
	f.clock.Step(time.Minute)
	if res := f.reconcileConsistency(consistency, "shape"); res.RequeueAfter != ConsistencyScanPeriod-time.Minute {
		t.Errorf("RequeueAfter %s within the period, want %s", res.RequeueAfter, ConsistencyScanPeriod-time.Minute)
	}
	expectCondition(t, f.claim("shape"), karpv1.ConditionTypeConsistentStateFound, metav1.ConditionTrue, ReasonConsistentStateFound)

	f.clock.Step(ConsistencyScanPeriod)
	f.reconcileConsistency(consistency, "shape")
	claim = f.claim("shape")
	expectCondition(t, claim, karpv1.ConditionTypeConsistentStateFound, metav1.ConditionFalse, ReasonConsistencyCheckFailed)
	if cond := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeConsistentStateFound); cond.Message != "Consistency Check Failed" {
		t.Errorf("message %q, want Karpenter's", cond.Message)
	}
	f.expectEvent("Warning", EventReasonFailedConsistencyCheck, fmt.Sprintf("expected %s of resource memory, but found %s (50.0%% of expected)", expected.String(), half.String()))

	// Fixed, the Node passes again at the next scan.
	f.setNodeMemory(claim, expected)
	f.clock.Step(ConsistencyScanPeriod)
	f.reconcileConsistency(consistency, "shape")
	expectCondition(t, f.claim("shape"), karpv1.ConditionTypeConsistentStateFound, metav1.ConditionTrue, ReasonConsistentStateFound)
}

func TestConsistencyWaitsForTheNode(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	consistency := NewConsistencyController(env.Client, f.clock, f.events)
	f.createClaim("joining", claimOptions{})
	f.mustReconcile("joining")

	// Launched, no Node yet: passed over until the next scan.
	if res := f.reconcileConsistency(consistency, "joining"); res != (reconcile.Result{}) {
		t.Errorf("no node: %+v, want nothing", res)
	}
	if cond := meta.FindStatusCondition(f.claim("joining").Status.Conditions, karpv1.ConditionTypeConsistentStateFound); cond != nil {
		t.Errorf("no node yet, yet %+v", cond)
	}
	f.stepKubelet()
	f.mustReconcile("joining")
	if res := f.reconcileConsistency(consistency, "joining"); res.RequeueAfter != ConsistencyScanPeriod {
		t.Errorf("the node joined within the period: RequeueAfter %s, want %s", res.RequeueAfter, ConsistencyScanPeriod)
	}
	f.clock.Step(ConsistencyScanPeriod)
	f.reconcileConsistency(consistency, "joining")
	expectCondition(t, f.claim("joining"), karpv1.ConditionTypeConsistentStateFound, metav1.ConditionTrue, ReasonConsistentStateFound)
}

func TestNodeShapeIssues(t *testing.T) {
	initialized := metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}
	claim := func(conds ...metav1.Condition) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{
			Spec: karpv1.NodeClaimSpec{Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("5"),
			}}},
			Status: karpv1.NodeClaimStatus{Conditions: conds, Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("128Gi"), corev1.ResourcePods: resource.MustParse("10"),
				"nvidia.com/gpu": resource.MustParse("1"),
			}},
		}
	}
	node := func(cpu, memory string) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory), corev1.ResourcePods: resource.MustParse("10"),
		}}}
	}
	deleting := claim(initialized)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name  string
		node  *corev1.Node
		claim *karpv1.NodeClaim
		want  []string
	}{
		{"as expected", node("16", "128Gi"), claim(initialized), nil},
		{"within 10%", node("15", "116Gi"), claim(initialized), nil},
		// Karpenter's own example, and every short resource named, in name order; capacity not
		// requested (the GPU) is not checked.
		{"short", node("8", "64Gi"), claim(initialized), []string{
			"expected 16 of resource cpu, but found 8 (50.0% of expected)",
			"expected 128Gi of resource memory, but found 64Gi (50.0% of expected)",
		}},
		{"not initialized", node("8", "64Gi"), claim(), nil},
		{"deleting", node("8", "64Gi"), deleting, nil},
	} {
		got := nodeShapeIssues(tc.node, tc.claim)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The scans of claims that are gone are forgotten once a period old, not kept for ever.
func TestConsistencyForgetsOldScans(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := NewConsistencyController(nil, clk, nil)
	for i := range 3 {
		c.markScanned(types.UID(fmt.Sprint("gone-", i)))
	}
	clk.Step(ConsistencyScanPeriod / 2)
	c.markScanned("recent")
	clk.Step(ConsistencyScanPeriod / 2)
	c.markScanned("now")
	if got := len(c.scanned); got != 2 {
		t.Errorf("%d scans remembered, want 2 (recent and now): %v", got, c.scanned)
	}
	if wait := c.untilNextScan("recent"); wait != ConsistencyScanPeriod/2 {
		t.Errorf("recent waits %s, want %s", wait, ConsistencyScanPeriod/2)
	}
}
