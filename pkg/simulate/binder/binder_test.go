package binder_test

import (
	"context"
	"os"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/simulate/binder"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

func TestBindsWhatFitsAndMarksTheRest(t *testing.T) {
	ctx := context.Background()
	readyNode(t, "node-1", "2")
	small := builders.Pods(3, builders.PodOptions{Name: "small", CPU: "500m"})
	big := builders.Pod(builders.PodOptions{Name: "big", CPU: "4"})
	createPods(t, "", append(small, big)...)
	res, err := binder.New(env.Client, clock.RealClock{}, binder.Options{}).Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Bound) != 3 || len(res.Unschedulable) != 1 || res.Unschedulable[0] != "default/big" {
		t.Fatalf("bound %v, unschedulable %v", res.Bound, res.Unschedulable)
	}
	got := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "small-0"}, got); err != nil || got.Spec.NodeName != "node-1" {
		t.Fatalf("small-0 on %q (%v)", got.Spec.NodeName, err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "big"}, got); err != nil {
		t.Fatal(err)
	}
	marked := false
	for _, c := range got.Status.Conditions {
		marked = marked || c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
	}
	if !marked {
		t.Fatalf("big not marked unschedulable: %+v", got.Status.Conditions)
	}
}

// readyNode creates a Ready, untainted node of the given cpu, deleted when the test ends.
func readyNode(t *testing.T, name, cpu string) {
	t.Helper()
	ctx := context.Background()
	node := builders.Node(name, map[string]string{corev1.LabelHostname: name}, builders.Resources("cpu", cpu, "memory", "16Gi", "pods", "20"))
	status := node.Status
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	node.Status = status
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	// Admission taints new nodes not-ready; the node lifecycle controller lifts it once Ready.
	node.Spec.Taints = nil
	if err := env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
}

// createPods creates pods (deleted when the test ends), with nominatedNodeName set when node
// is not empty.
func createPods(t *testing.T, node string, pods ...*corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	for _, pod := range pods {
		pod.UID = ""
		pod.Status = corev1.PodStatus{}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
		if node != "" {
			pod.Status.NominatedNodeName = node
			if err := env.Client.Status().Update(ctx, pod); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func getPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	got := &corev1.Pod{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestNominatedPodsGoToTheirNode: as the kube-scheduler, the binder binds a pod to its
// nominated node when it fits there (though first fit would take another), and a pod whose
// nominated node cannot take it and that fits nowhere else loses the nomination.
func TestNominatedPodsGoToTheirNode(t *testing.T) {
	ctx := context.Background()
	readyNode(t, "nom-a", "4")
	readyNode(t, "nom-b", "4")
	planned := builders.Pods(2, builders.PodOptions{Name: "planned", CPU: "1"})
	createPods(t, "nom-b", planned...)
	tooBig := builders.Pod(builders.PodOptions{Name: "too-big", CPU: "6"})
	createPods(t, "nom-b", tooBig)

	res, err := binder.New(env.Client, clock.RealClock{}, binder.Options{}).Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range planned {
		if got := res.Bound["default/"+pod.Name]; got != "nom-b" {
			t.Errorf("%s bound to %q, want its nominated node nom-b", pod.Name, got)
		}
	}
	got := getPod(t, tooBig.Name)
	if got.Spec.NodeName != "" || got.Status.NominatedNodeName != "" {
		t.Errorf("too-big: bound to %q, nominated to %q; want unbound with the nomination cleared", got.Spec.NodeName, got.Status.NominatedNodeName)
	}
}

// TestDaemonSetRoomIsKept: a node keeps the room of the daemonset pods it will run (a
// simulation has no daemonset controller to create them), so it takes fewer pods.
func TestDaemonSetRoomIsKept(t *testing.T) {
	ctx := context.Background()
	readyNode(t, "ds-node", "2")
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent",
					Resources: corev1.ResourceRequirements{Requests: builders.Resources("cpu", "1")}}}},
			},
		},
	}
	if err := env.Client.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ds) })
	createPods(t, "", builders.Pods(2, builders.PodOptions{Name: "web", CPU: "600m"})...)

	res, err := binder.New(env.Client, clock.RealClock{}, binder.Options{}).Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Bound) != 1 || len(res.Unschedulable) != 1 {
		t.Errorf("bound %v, unschedulable %v; want one 600m pod beside the daemonset's 1 cpu on 2 cpu", res.Bound, res.Unschedulable)
	}
}

// TestUnschedulablePodWaitsForAChange: a pod that fit no node is not tried again while the
// nodes and the pods bound to them stay as they were, and is tried, and bound, as soon as a
// bound pod leaves or a node is added.
func TestUnschedulablePodWaitsForAChange(t *testing.T) {
	ctx := context.Background()
	readyNode(t, "node-1", "2")
	filler := builders.Pod(builders.PodOptions{Name: "filler", CPU: "1500m"})
	createPods(t, "", filler)
	b := binder.New(env.Client, clock.RealClock{}, binder.Options{})
	if res, err := b.Step(ctx); err != nil || len(res.Bound) != 1 {
		t.Fatalf("filler not bound: %+v, %v", res, err)
	}
	waiter := builders.Pods(2, builders.PodOptions{Name: "waiter", CPU: "1200m"})
	createPods(t, "", waiter...)
	res, err := b.Step(ctx)
	if err != nil || len(res.Unschedulable) != 2 || res.NotRetried != 0 {
		t.Fatalf("first try: %+v, %v", res, err)
	}
	// Marking them Unschedulable changed them: they are tried once more, then left alone.
	if res, err = b.Step(ctx); err != nil || res.NotRetried != 0 || len(res.Bound) != 0 {
		t.Fatalf("second try: %+v, %v", res, err)
	}
	if res, err = b.Step(ctx); err != nil || res.NotRetried != 2 || len(res.Bound) != 0 {
		t.Fatalf("nothing changed, yet the pods were tried again: %+v, %v", res, err)
	}

	// The filler leaves: the room it frees takes one waiter.
	if err := env.Client.Delete(ctx, filler, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if res, err = b.Step(ctx); err != nil || res.NotRetried != 0 || len(res.Bound) != 1 {
		t.Fatalf("after the filler left: %+v, %v", res, err)
	}
	// A new node takes the other.
	readyNode(t, "node-2", "2")
	if res, err = b.Step(ctx); err != nil || res.NotRetried != 0 || len(res.Bound) != 1 || res.Bound["default/waiter-1"] != "node-2" && res.Bound["default/waiter-0"] != "node-2" {
		t.Fatalf("after node-2 came: %+v, %v", res, err)
	}
}
