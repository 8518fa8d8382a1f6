package cluster_test

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openkarpenter/karpenter/pkg/apis"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/metrics/cluster"
)

// startups is the number and sum of the startup durations observed so far.
func startups(t *testing.T) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := metrics.PodStartupDurationSeconds.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetSummary().GetSampleCount(), m.GetSummary().GetSampleSum()
}

func readyPod(name string, uid types.UID, created, ready time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, CreationTimestamp: metav1.NewTime(created)},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ready)},
		}},
	}
}

func TestPodStartupIsObservedOncePerPodThatBecomesReady(t *testing.T) {
	start := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).Build()
	c := cluster.NewPodController(kube, nil, clk)
	ctx := context.Background()
	reconcileAll := func(names ...string) {
		t.Helper()
		for _, name := range names {
			if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	upsert := func(pod *corev1.Pod) {
		t.Helper()
		if err := kube.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		if err := kube.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	count0, sum0 := startups(t)

	// Ready before the controller looked: a restart or another leader saw it.
	upsert(readyPod("old", "uid-old", start.Add(-time.Hour), start.Add(-50*time.Minute)))
	pending := readyPod("web", "uid-web", start.Add(-10*time.Second), time.Time{})
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending}
	upsert(pending)
	reconcileAll("old", "web", "gone")
	if count, _ := startups(t); count != count0 {
		t.Fatalf("%d startups observed before any pod became ready, want none", count-count0)
	}

	// web becomes ready 15s after its creation: observed once, however often it is reconciled.
	upsert(readyPod("web", "uid-web", start.Add(-10*time.Second), start.Add(5*time.Second)))
	reconcileAll("web", "web", "old")
	if count, sum := startups(t); count-count0 != 1 || sum-sum0 != 15 {
		t.Fatalf("after web became ready: %d observations summing %vs, want 1 of 15s", count-count0, sum-sum0)
	}

	// A new pod of the same name is a new startup.
	upsert(readyPod("web", "uid-web-2", start.Add(time.Minute), start.Add(time.Minute+3*time.Second)))
	reconcileAll("web")
	if count, sum := startups(t); count-count0 != 2 || sum-sum0 != 18 {
		t.Errorf("after web was recreated: %d observations summing %vs, want 2 summing 18s", count-count0, sum-sum0)
	}
}
