package state_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// TestNominatedUntil: a node is nominated, as Karpenter's StateNode.Nominated, for the
// nomination window from when a provisioning pass placed a pod on it, while that pod waits,
// and from when it bound; a disruption command's destinations are nominated too; a claim
// launched for pods is nominated while they wait for it, not before; the window then ends.
func TestNominatedUntil(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kube := memory.New(apis.NewScheme(), clk)
	for _, name := range []string{"a", "b", "c"} {
		if err := kube.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := kube.Create(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "new"}}); err != nil {
		t.Fatal(err)
	}
	cluster := state.NewCluster(kube, clk)
	cluster.NominationGrace = 20 * time.Second
	nominated := func() map[string]time.Time {
		t.Helper()
		snap, err := cluster.SyncSnapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for _, sn := range snap.Nodes {
			if sn.Nominated(clk.Now()) {
				out[sn.Name()] = sn.NominatedUntil
			}
		}
		return out
	}
	start := clk.Now()
	if got := nominated(); len(got) != 0 {
		t.Fatalf("nominated before any pass: %v", got)
	}
	cluster.Nominate(pod, "a", false)
	cluster.NominateNodes("b")
	if got := nominated(); len(got) != 2 || !got["a"].Equal(start.Add(20*time.Second)) || !got["b"].Equal(start.Add(20*time.Second)) {
		t.Fatalf("nominated = %v, want a and b until %v", got, start.Add(20*time.Second))
	}
	// The pod waits for a: a stays nominated.
	clk.Step(15 * time.Second)
	if got := nominated(); len(got) != 2 || !got["a"].Equal(clk.Now().Add(20*time.Second)) {
		t.Fatalf("nominated after 15s = %v, want a until %v", got, clk.Now().Add(20*time.Second))
	}
	// It binds 10s later: a stays nominated for the window from when a pass sees that.
	clk.Step(10 * time.Second)
	pod.Spec.NodeName = "a"
	if err := kube.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	bound := clk.Now()
	nominated()
	clk.Step(15 * time.Second)
	if got := nominated(); len(got) != 1 || !got["a"].Equal(bound.Add(20*time.Second)) {
		t.Fatalf("nominated after the bind = %v, want a alone (b's window ended) until %v", got, bound.Add(20*time.Second))
	}
	clk.Step(5 * time.Second)
	if got := nominated(); len(got) != 0 {
		t.Fatalf("nominated once the window ended = %v, want none", got)
	}
	// A claim launched for a pod is not nominated by the launch, only while the pod waits for
	// it (from the next pass on).
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	if err := kube.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	cluster.Nominate(other, "new", true)
	if got := nominated(); len(got) != 1 || !got["new"].Equal(clk.Now().Add(20*time.Second)) {
		t.Fatalf("nominated while a pod waits for claim new = %v", got)
	}
	if err := kube.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	clk.Step(21 * time.Second)
	if got := nominated(); len(got) != 0 {
		t.Fatalf("nominated once the waiting pod is gone and the window ended = %v, want none", got)
	}
}

// TestSpreadPodsArePlannedAgain: a pod with a DoNotSchedule topology spread, nominated to a
// claim, holds no room there and stays pending, to be planned again on the next pass (the
// kube-scheduler, not told of its plan, may give that room to another pod), while its claim
// stays nominated; a pod without one holds its room and leaves the pending pods.
func TestSpreadPodsArePlannedAgain(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kube := memory.New(apis.NewScheme(), clk)
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	spread := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "spread", Namespace: "default", Labels: map[string]string{"app": "spread"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}},
		Status: unschedulable,
	}
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		Status:     unschedulable,
	}
	for _, obj := range []client.Object{spread, plain, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "new"}}} {
		if err := kube.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, pod := range []*corev1.Pod{spread, plain} {
		pod.Status = unschedulable
		if err := kube.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	cluster := state.NewCluster(kube, clk)
	cluster.Nominate(spread, "new", true)
	cluster.Nominate(plain, "new", true)
	snap, err := cluster.SyncSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pending []string
	for _, pod := range snap.Pending {
		pending = append(pending, pod.Name)
	}
	if len(pending) != 1 || pending[0] != "spread" {
		t.Errorf("pending = %v, want the spread pod alone", pending)
	}
	for _, sn := range snap.Nodes {
		var on []string
		for _, pod := range sn.Pods {
			on = append(on, pod.Name)
		}
		if len(on) != 1 || on[0] != "plain" {
			t.Errorf("claim %s holds %v, want the plain pod alone", sn.Name(), on)
		}
		if !sn.Nominated(clk.Now()) {
			t.Errorf("claim %s is not nominated while pods wait for it", sn.Name())
		}
	}
	if target, ok := cluster.NominatedTo(spread.UID); !ok || target != "new" {
		t.Errorf("the spread pod's nomination = %q, %v; want it kept until the next pass plans it", target, ok)
	}
}
