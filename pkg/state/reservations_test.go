package state_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openkarpenter/karpenter/pkg/apis"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// TestReservations: room a pass planned for pods a ReplicaSet has yet to create counts on its
// node; the ReplicaSet's next pod waiting for capacity takes it as its nomination (at once,
// through TakeReservation, or at the next snapshot); a pod of the ReplicaSet that bound
// without one drops a reservation, preferably on its own node; and the reservations end with
// their nomination grace.
func TestReservations(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kube := memory.New(apis.NewScheme(), clk)
	for _, name := range []string{"a", "b"} {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}},
		}
		if err := kube.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	const rsUID = types.UID("rs-uid")
	yes := true
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: rsUID, Controller: &yes}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
		}
	}
	cluster := state.NewCluster(kube, clk)
	cluster.NominationGrace = 20 * time.Second
	nominated := map[string]bool{}
	snapshot := func() (requested map[string]int64, pending int) {
		t.Helper()
		snap, err := cluster.SyncSnapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		requested = map[string]int64{}
		for _, sn := range snap.Nodes {
			requested[sn.Name()] = sn.Requested.Cpu().Value()
			nominated[sn.Name()] = sn.Nominated(clk.Now())
		}
		return requested, len(snap.Pending)
	}
	// A ReplicaSet of 4 replicas has created none: a pass planned 2 on a, 2 on b.
	for i, target := range []string{"a", "a", "b", "b"} {
		standIn := pod("web-arriving-" + string(rune('0'+i)))
		cluster.Reserve(rsUID, 4, standIn, target, false)
	}
	if got, _ := snapshot(); got["a"] != 2 || got["b"] != 2 {
		t.Fatalf("requested = %v, want the reserved 2 cpu on a and on b", got)
	}
	if !nominated["a"] || !nominated["b"] {
		t.Fatalf("nominated = %v: room reserved on a node keeps it from disruption", nominated)
	}
	// Its first pod is created and waits: it takes a reservation at once.
	first := pod("web-1")
	if err := kube.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	target, ok := cluster.TakeReservation(first)
	if !ok || target != "a" {
		t.Fatalf("TakeReservation = %q, %v; want a", target, ok)
	}
	if _, ok := cluster.TakeReservation(first); ok {
		t.Fatal("a nominated pod took a second reservation")
	}
	// The second is created and waits: the snapshot gives it one; neither is pending.
	second := pod("web-2")
	if err := kube.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	got, pending := snapshot()
	if pending != 0 || got["a"] != 2 || got["b"] != 2 {
		t.Fatalf("requested = %v with %d pending; want 2 cpu on each and none pending", got, pending)
	}
	if to, ok := cluster.NominatedTo(second.UID); !ok || to != "a" {
		t.Fatalf("the second pod is nominated to %q (%v), want a", to, ok)
	}
	if cluster.Reserved(rsUID) != 2 {
		t.Fatalf("reserved = %d, want 2", cluster.Reserved(rsUID))
	}
	// The third binds to b on its own: the reservation dropped for it is one on b.
	third := pod("web-3")
	third.Spec.NodeName = "b"
	if err := kube.Create(ctx, third); err != nil {
		t.Fatal(err)
	}
	if got, _ := snapshot(); got["a"] != 2 || got["b"] != 2 || cluster.Reserved(rsUID) != 1 {
		t.Fatalf("requested = %v, reserved %d; want 2 cpu on each (one bound, one reserved on b), 1 reserved", got, cluster.Reserved(rsUID))
	}
	// The last reservation ends with its nomination grace (b is a node ready for pods).
	clk.Step(21 * time.Second)
	if got, _ := snapshot(); got["b"] != 1 || cluster.Reserved(rsUID) != 0 {
		t.Fatalf("after the grace requested = %v, reserved %d; want 1 cpu on b, none reserved", got, cluster.Reserved(rsUID))
	}
}

// TestHoldsRegistration: the claims one pass launched with room for pods not told their node
// (a DoNotSchedule spread, a ReplicaSet's pods still to be created) register together, once
// each has a Node (a claim deleted meanwhile does not hold the others) and no room on any of
// them is reserved; a pass whose pods are all told their node does not wait.
func TestHoldsRegistration(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cluster := state.NewCluster(memory.New(apis.NewScheme(), clk), clk)
	cluster.RecordBatch("a", "b", "c")
	// Room on a is planned for a pod the kube-scheduler places itself.
	cluster.Nominate(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "spread", UID: "spread"},
		Spec: corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1,
			TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}}}, "a", true)
	if !cluster.HoldsRegistration("a") {
		t.Fatal("a registered while b and c have no node")
	}
	if !cluster.HoldsRegistration("b") {
		t.Fatal("b registered while c has no node")
	}
	cluster.ClaimDeleted("c")
	if cluster.HoldsRegistration("b") || cluster.HoldsRegistration("a") {
		t.Fatal("a and b held by c, deleted")
	}
	if cluster.HoldsRegistration("alone") {
		t.Fatal("a claim of no batch held")
	}
	// A batch whose pods are all told their node does not wait for its other claims.
	cluster.RecordBatch("f", "g")
	cluster.Nominate(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", UID: "plain"}}, "g", true)
	cluster.Announced("plain", "g")
	if cluster.HoldsRegistration("f") {
		t.Fatal("f held for g, though every pod planned on them is told its node")
	}
	cluster.RecordBatch("d", "e")
	cluster.Reserve("rs", 1, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-arriving-0"}}, "e", true)
	cluster.HoldsRegistration("e")
	if !cluster.HoldsRegistration("d") {
		t.Fatal("d registered while room on e waits for a pod to be created")
	}
}

// TestRegistrationWaitsForAnnouncements: a claim registers once every pod nominated to it has
// been told its node, never waiting for a pod that is not told (a DoNotSchedule spread).
func TestRegistrationWaitsForAnnouncements(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cluster := state.NewCluster(memory.New(apis.NewScheme(), clk), clk)
	spread := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "spread", Namespace: "default", UID: "spread"},
		Spec: corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1,
			TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}},
	}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default", UID: "plain"}}
	cluster.Nominate(spread, "new", true)
	cluster.Nominate(plain, "new", true)
	if !cluster.HoldsRegistration("new") {
		t.Fatal("the claim registered before its plain pod was told its node")
	}
	cluster.Announced(plain.UID, "new")
	if cluster.HoldsRegistration("new") {
		t.Fatal("the claim waits for its spread pod to be told its node, which it never is")
	}
}
