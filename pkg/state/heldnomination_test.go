package state_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openkarpenter/karpenter/pkg/apis"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// TestStaleNominatedNodeName: a pending pod whose status.nominatedNodeName names a Ready node,
// with no nomination of this process behind it (set before a restart, or by a nomination that
// expired), holds room there for StaleNominationAfter; then, as the kube-scheduler
// leaves the name in place when the pod fails on the node without a preemption
// (k8s.io/kubernetes v1.35.8 pkg/scheduler/schedule_one.go: a FitError takes the PostFilter
// result's nominating info, none when no victim is found), the node has turned it away: the
// pod is pending again, with one refused miss to avoid the node, and its name is stale.
func TestStaleNominatedNodeName(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kube := memory.New(apis.NewScheme(), clk)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if err := kube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status = corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("10")}}
	if err := kube.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: "n1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	if err := kube.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	cluster := state.NewCluster(kube, clk)
	held := func() (pending, onNode bool) {
		t.Helper()
		snap, err := cluster.SyncSnapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range snap.Pending {
			pending = pending || p.Name == "app"
		}
		for _, sn := range snap.Nodes {
			for _, p := range sn.Pods {
				onNode = onNode || p.Name == "app" && sn.Name() == "n1"
			}
		}
		return pending, onNode
	}
	if pending, onNode := held(); pending || !onNode {
		t.Fatalf("at first: pending %v, on n1 %v; want its room held on n1", pending, onNode)
	}
	clk.Step(state.StaleNominationAfter)
	if pending, onNode := held(); pending || !onNode || cluster.StaleNomination(pod.UID, "n1") {
		t.Fatalf("after StaleNominationAfter: pending %v, on n1 %v; want it still held", pending, onNode)
	}
	cluster.TakeMisses()
	clk.Step(time.Second)
	if pending, onNode := held(); !pending || onNode {
		t.Fatalf("past StaleNominationAfter: pending %v, on n1 %v; want it planned again", pending, onNode)
	}
	misses := cluster.TakeMisses()
	if len(misses) != 1 || misses[0].Node != "n1" || !misses[0].Refused {
		t.Fatalf("misses %+v, want one refusal by n1", misses)
	}
	if !cluster.StaleNomination(pod.UID, "n1") {
		t.Error("the name is not stale")
	}
	if pending, _ := held(); !pending || len(cluster.TakeMisses()) != 0 {
		t.Error("the stale pod is not pending, or was missed twice")
	}
}
