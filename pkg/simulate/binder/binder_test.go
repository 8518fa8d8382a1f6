package binder_test

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	node := builders.Node("node-1", map[string]string{corev1.LabelHostname: "node-1"}, builders.Resources("cpu", "2", "memory", "4Gi", "pods", "10"))
	status := node.Status
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status = status
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	// Admission taints new nodes not-ready; the node lifecycle controller lifts it once Ready.
	node.Spec.Taints = nil
	if err := env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	small := builders.Pods(3, builders.PodOptions{Name: "small", CPU: "500m"})
	big := builders.Pod(builders.PodOptions{Name: "big", CPU: "4"})
	for _, pod := range append(small, big) {
		pod.UID = ""
		pod.Status = corev1.PodStatus{}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	res, err := binder.New(env.Client, clock.RealClock{}).Step(ctx)
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
