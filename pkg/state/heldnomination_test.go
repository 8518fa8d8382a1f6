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
// expired), holds room there for StaleNominationAfter; then, as the name may outlive a
// failure there (k8s.io/kubernetes v1.35.8 pkg/scheduler: preemption clears it when it finds no
// victim, but a pod that may not preempt keeps it, and this process may have set it again),
// the node has turned it away: the pod is pending again, with one refused miss to avoid the
// node, and its name is stale.
func TestStaleNominatedNodeName(t *testing.T) {
	ctx := context.Background()
	clk, kube := withReadyNode(t, "n1")
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

// TestNominatedNodeFilledByOthers: pending pods counted on a Ready node (one holding its name
// in status.nominatedNodeName, one nominated by this process) stay counted there while the
// pods bound to the node leave them room, the earlier nomination first; one the bound pods
// leave no room for (the kube-scheduler gave its room to another pod) is refused at once: it
// is pending again, with a refused miss, and its name, if it names the node, is stale.
func TestNominatedNodeFilledByOthers(t *testing.T) {
	ctx := context.Background()
	clk, kube := withReadyNode(t, "n1")
	newPod := func(name, cpu, nominated string) *corev1.Pod {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		}
		if err := kube.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: nominated,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
		if err := kube.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		return pod
	}
	newPod("a-held", "1", "n1")
	nominated := newPod("b-nominated", "1", "")
	cluster := state.NewCluster(kube, clk)
	cluster.Nominate(nominated, "n1", false)
	counted := func() (pending, onNode map[string]bool) {
		t.Helper()
		snap, err := cluster.SyncSnapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pending, onNode = map[string]bool{}, map[string]bool{}
		for _, p := range snap.Pending {
			pending[p.Name] = true
		}
		for _, sn := range snap.Nodes {
			for _, p := range sn.Pods {
				onNode[p.Name] = sn.Name() == "n1"
			}
		}
		return pending, onNode
	}
	if pending, onNode := counted(); len(pending) != 0 || !onNode["a-held"] || !onNode["b-nominated"] {
		t.Fatalf("with room: pending %v, on n1 %v; want both counted on n1", pending, onNode)
	}
	// The kube-scheduler binds another pod of 2500m to the node: 1500m are left, for one.
	intruder := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "intruder", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "app",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2500m")}}}}},
	}
	if err := kube.Create(ctx, intruder); err != nil {
		t.Fatal(err)
	}
	pending, onNode := counted()
	if !onNode["a-held"] || pending["a-held"] {
		t.Errorf("the earlier nomination lost its room: pending %v, on n1 %v", pending, onNode)
	}
	if !pending["b-nominated"] || onNode["b-nominated"] {
		t.Errorf("the pod the node has no room left for: pending %v, on n1 %v; want it pending", pending, onNode)
	}
	misses := cluster.TakeMisses()
	if len(misses) != 1 || misses[0].Pod.Name != "b-nominated" || misses[0].Node != "n1" || !misses[0].Refused {
		t.Fatalf("misses %+v, want one refusal of b-nominated by n1", misses)
	}
	if _, ok := cluster.NominatedTo(nominated.UID); ok {
		t.Error("the refused pod is still nominated")
	}
	// Its name set again (the nomination controller had re-announced it): stale at once.
	nominated.Status.NominatedNodeName = "n1"
	if err := kube.Status().Update(ctx, nominated); err != nil {
		t.Fatal(err)
	}
	if pending, _ := counted(); !pending["b-nominated"] || !cluster.StaleNomination(nominated.UID, "n1") || len(cluster.TakeMisses()) != 1 {
		t.Errorf("with the node's name back: pending %v, stale %v; want it pending, the name stale, refused once", pending, cluster.StaleNomination(nominated.UID, "n1"))
	}
	if pending, _ := counted(); !pending["b-nominated"] || len(cluster.TakeMisses()) != 0 {
		t.Error("the stale pod is not pending, or was missed again")
	}
}

// withReadyNode returns a fake clock and a store holding one Ready node of that name with 4
// cpu and 10 pods allocatable.
func withReadyNode(t *testing.T, name string) (*clocktesting.FakeClock, *memory.Client) {
	t.Helper()
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kube := memory.New(apis.NewScheme(), clk)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := kube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status = corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("10")}}
	if err := kube.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	return clk, kube
}
