package clustermetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openkarpenter/karpenter/pkg/apis"
	"github.com/openkarpenter/karpenter/pkg/clustermetrics"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/metricstest"
)

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
	c := clustermetrics.NewPodController(kube, nil, clk)
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
	count0, sum0 := metricstest.Observations(t, metrics.PodStartupDurationSeconds)

	// Ready before the controller looked: a restart or another leader saw it.
	upsert(readyPod("old", "uid-old", start.Add(-time.Hour), start.Add(-50*time.Minute)))
	pending := readyPod("web", "uid-web", start.Add(-10*time.Second), time.Time{})
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending}
	upsert(pending)
	reconcileAll("old", "web", "gone")
	if count, _ := metricstest.Observations(t, metrics.PodStartupDurationSeconds); count != count0 {
		t.Fatalf("%d startups observed before any pod became ready, want none", count-count0)
	}

	// web becomes ready 15s after its creation: observed once, however often it is reconciled.
	upsert(readyPod("web", "uid-web", start.Add(-10*time.Second), start.Add(5*time.Second)))
	reconcileAll("web", "web", "old")
	if count, sum := metricstest.Observations(t, metrics.PodStartupDurationSeconds); count-count0 != 1 || sum-sum0 != 15 {
		t.Fatalf("after web became ready: %d observations summing %vs, want 1 of 15s", count-count0, sum-sum0)
	}

	// A new pod of the same name is a new startup.
	upsert(readyPod("web", "uid-web-2", start.Add(time.Minute), start.Add(time.Minute+3*time.Second)))
	reconcileAll("web")
	if count, sum := metricstest.Observations(t, metrics.PodStartupDurationSeconds); count-count0 != 2 || sum-sum0 != 18 {
		t.Errorf("after web was recreated: %d observations summing %vs, want 2 summing 18s", count-count0, sum-sum0)
	}
}

// gauge returns the value of the vec's series for the pod, if it has one (reading it does not
// create it).
func gauge(t *testing.T, vec *prometheus.GaugeVec, pod string) (float64, bool) {
	t.Helper()
	series := metricstest.Collected(t, vec, map[string]string{metrics.LabelName: pod})
	if len(series) == 0 {
		return 0, false
	}
	return series[len(series)-1].GetGauge().GetValue(), true
}

// A pod waits for capacity: the provisioner acknowledges it, a pass places it, it is bound and
// becomes ready. Each gauge reports the pod while it waits that way and drops it after; each
// histogram observes the pod once, from its creation and from its first placement.
func TestPodMetricsFollowAPodFromPendingToReady(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).Build()
	memory := state.NewCluster(kube, clk)
	c := clustermetrics.NewPodController(kube, memory, clk)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", CreationTimestamp: metav1.NewTime(t0.Add(-10 * time.Second))},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(t0.Add(-9 * time.Second))},
		}},
	}
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	update := func(change func(*corev1.Pod)) {
		t.Helper()
		change(pod)
		status := pod.Status
		if err := kube.Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status = status
		if err := kube.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	reconcileWeb := func() reconcile.Result {
		t.Helper()
		result, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "web"}})
		if err != nil {
			t.Fatal(err)
		}
		return result
	}
	type want struct{ unbound, provisioningUnbound, unstarted, provisioningUnstarted, undecided float64 } // -1: no series
	expect := func(when string, w want) {
		t.Helper()
		for _, g := range []struct {
			name string
			vec  *prometheus.GaugeVec
			want float64
		}{
			{"unbound", metrics.PodsUnboundTimeSeconds, w.unbound},
			{"provisioning unbound", metrics.PodsProvisioningUnboundTimeSeconds, w.provisioningUnbound},
			{"unstarted", metrics.PodsUnstartedTimeSeconds, w.unstarted},
			{"provisioning unstarted", metrics.PodsProvisioningUnstartedTimeSeconds, w.provisioningUnstarted},
			{"undecided", metrics.PodsSchedulingUndecidedTimeSeconds, w.undecided},
		} {
			got, ok := gauge(t, g.vec, "web")
			switch {
			case g.want < 0 && ok:
				t.Errorf("%s: %s time %vs reported, want no series", when, g.name, got)
			case g.want >= 0 && (!ok || got != g.want):
				t.Errorf("%s: %s time %vs (reported %v), want %vs", when, g.name, got, ok, g.want)
			}
		}
	}
	bound0, boundSum0 := metricstest.Observations(t, metrics.PodsBoundDurationSeconds.WithLabelValues("false"))
	provBound0, provBoundSum0 := metricstest.Observations(t, metrics.PodsProvisioningBoundDurationSeconds.WithLabelValues("false"))
	provStart0, provStartSum0 := metricstest.Observations(t, metrics.PodsProvisioningStartupDurationSeconds)
	decisions0, decisionSum0 := metricstest.Observations(t, metrics.PodsSchedulingDecisionDurationSeconds)

	// Created 10s ago and not seen by the provisioner yet: waiting to be bound and to start.
	if r := reconcileWeb(); r.RequeueAfter != clustermetrics.PodRefreshInterval {
		t.Errorf("a waiting pod is requeued after %v, want %v", r.RequeueAfter, clustermetrics.PodRefreshInterval)
	}
	expect("before the acknowledgement", want{10, -1, 10, -1, -1})

	// Acknowledged now; 4s later no pass has decided on it yet.
	memory.AckPods(pod)
	clk.Step(4 * time.Second)
	reconcileWeb()
	expect("while undecided", want{14, -1, 14, -1, 4})

	// A pass places it 5s after the acknowledgement; 3s later it is still unbound.
	clk.Step(time.Second)
	metrics.ObserveSchedulingDecisions(memory.MarkSchedulingDecisions([]*corev1.Pod{pod}, nil))
	if n, sum := metricstest.Observations(t, metrics.PodsSchedulingDecisionDurationSeconds); n-decisions0 != 1 || sum-decisionSum0 != 5 {
		t.Errorf("%d scheduling decisions observed summing %vs, want 1 of 5s", n-decisions0, sum-decisionSum0)
	}
	clk.Step(3 * time.Second)
	reconcileWeb()
	expect("placed, unbound", want{18, 3, 18, 3, -1})

	// Bound 10s after the pass (t0+15s), still starting at t0+17s.
	update(func(p *corev1.Pod) {
		p.Spec.NodeName = "node-a"
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(15 * time.Second))}}
	})
	clk.Step(9 * time.Second)
	reconcileWeb()
	reconcileWeb() // observed once, however often it is reconciled
	expect("bound, starting", want{-1, -1, 27, 12, -1})
	if n, sum := metricstest.Observations(t, metrics.PodsBoundDurationSeconds.WithLabelValues("false")); n-bound0 != 1 || sum-boundSum0 != 25 {
		t.Errorf("%d bindings observed summing %vs, want 1 of 25s (creation to binding)", n-bound0, sum-boundSum0)
	}
	if n, sum := metricstest.Observations(t, metrics.PodsProvisioningBoundDurationSeconds.WithLabelValues("false")); n-provBound0 != 1 || sum-provBoundSum0 != 10 {
		t.Errorf("%d provisioning bindings observed summing %vs, want 1 of 10s (placement to binding)", n-provBound0, sum-provBoundSum0)
	}

	// Running but not ready yet: still unstarted. Ready at t0+20s: observed, and no longer waiting.
	update(func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning })
	reconcileWeb()
	expect("running, not ready", want{-1, -1, 27, 12, -1})
	update(func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(20 * time.Second))})
	})
	clk.Step(5 * time.Second)
	if r := reconcileWeb(); r.RequeueAfter != 0 {
		t.Errorf("a ready pod is requeued after %v", r.RequeueAfter)
	}
	expect("ready", want{-1, -1, -1, -1, -1})
	if n, sum := metricstest.Observations(t, metrics.PodsProvisioningStartupDurationSeconds); n-provStart0 != 1 || sum-provStartSum0 != 15 {
		t.Errorf("%d provisioning startups observed summing %vs, want 1 of 15s (placement to ready)", n-provStart0, sum-provStartSum0)
	}

	// Losing readiness later is not a startup to wait for again.
	update(func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionFalse })
	reconcileWeb()
	expect("ready once, then not", want{-1, -1, -1, -1, -1})
}

// A pod that leaves while it waits takes its series with it.
func TestPodMetricsDropDeletedAndFinishedPods(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).Build()
	memory := state.NewCluster(kube, clk)
	c := clustermetrics.NewPodController(kube, memory, clk)
	ctx := context.Background()
	for _, name := range []string{"job", "gone"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0)},
			Status:     corev1.PodStatus{Phase: corev1.PodPending},
		}
		if err := kube.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		memory.AckPods(pod)
	}
	reconcilePod := func(name string) {
		t.Helper()
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Step(time.Second)
	for _, name := range []string{"job", "gone"} {
		reconcilePod(name)
		for _, vec := range []*prometheus.GaugeVec{metrics.PodsUnboundTimeSeconds, metrics.PodsUnstartedTimeSeconds, metrics.PodsSchedulingUndecidedTimeSeconds} {
			if _, ok := gauge(t, vec, name); !ok {
				t.Fatalf("%s: pending pod not reported", name)
			}
		}
	}
	job := &corev1.Pod{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: "default", Name: "job"}, job); err != nil {
		t.Fatal(err)
	}
	job.Status.Phase = corev1.PodFailed
	if err := kube.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"job", "gone"} {
		reconcilePod(name)
		for _, vec := range []*prometheus.GaugeVec{metrics.PodsUnboundTimeSeconds, metrics.PodsUnstartedTimeSeconds, metrics.PodsSchedulingUndecidedTimeSeconds} {
			if v, ok := gauge(t, vec, name); ok {
				t.Errorf("%s: still reported (%vs) after it finished or was deleted", name, v)
			}
		}
	}
}
