package provisioning_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/test/metricstest"
)

// A provisioning pass reports what it did in the scheduler metrics: the pods it ignored (a
// missing volume), those it could place nowhere, its pending pods by effective zone and its
// finished run; the pods the pod controller acknowledged are observed once, at their first
// decision, and the cluster state remembers which pods were placed.
func TestProvisionReportsSchedulerMetrics(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	volumes(t)
	ctx := context.Background()
	web := builders.Pods(3, builders.PodOptions{Name: "web", CPU: "500m", Memory: "1Gi"})
	s390x := builders.Pod(builders.PodOptions{Name: "s390x", CPU: "1", NodeSelector: map[string]string{corev1.LabelArchStable: "s390x"}})
	stranded, zonal, pinned := withClaims("stranded", "classless"), withClaims("zonal", "zonal"), withClaims("pinned", "bound")
	pods := append(web, s390x, stranded, zonal, pinned)
	pending(t, pods...)
	acks := provisioning.NewPodController(env.Client, f.provisioner)
	for _, pod := range pods {
		if _, err := acks.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	decisions0, decisionSum0 := metricstest.Observations(t, metrics.PodsSchedulingDecisionDurationSeconds)
	f.clock.Step(3 * time.Second)

	decision, err := f.provisioner.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(decision.Results.PodErrors) != 2 {
		t.Fatalf("pod errors %v, want s390x's and stranded's", decision.Results.PodErrors)
	}
	if n, sum := metricstest.Observations(t, metrics.PodsSchedulingDecisionDurationSeconds); n-decisions0 != uint64(len(pods)) || sum-decisionSum0 != 3*float64(len(pods)) {
		t.Errorf("%d first decisions observed summing %vs, want %d of 3s", n-decisions0, sum-decisionSum0, len(pods))
	}
	if got := testutil.ToFloat64(metrics.SchedulerIgnoredPodsCount); got != 1 {
		t.Errorf("ignored pods %v, want 1 (stranded: its StorageClass does not exist)", got)
	}
	if got := testutil.ToFloat64(metrics.SchedulerUnschedulablePodsCount.WithLabelValues(metrics.ControllerProvisioner)); got != 1 {
		t.Errorf("unschedulable pods %v, want 1 (s390x)", got)
	}
	for zone, want := range map[string]float64{
		scheduler.EffectiveZoneFlexible: 5, // web, s390x, zonal (its class allows us-east-1a and -c)
		"us-east-1b":                    1, // pinned by its bound volume
	} {
		if got := testutil.ToFloat64(metrics.SchedulerPendingPodsByEffectiveZoneCount.WithLabelValues(metrics.ControllerProvisioner, zone)); got != want {
			t.Errorf("pending pods in effective zone %s: %v, want %v", zone, got, want)
		}
	}
	depth := metricstest.Gathered(t, crmetrics.Registry, "karpenter_scheduler_queue_depth", map[string]string{metrics.LabelController: metrics.ControllerProvisioner})
	if len(depth) != 1 || depth[0].GetGauge().GetValue() != 0 {
		t.Errorf("queue depth after the run: %v, want one series (the run's) at 0", depth)
	}
	if s := metricstest.Gathered(t, crmetrics.Registry, "karpenter_scheduler_unfinished_work_seconds", map[string]string{metrics.LabelController: metrics.ControllerProvisioner}); len(s) != 0 {
		t.Errorf("unfinished work reported after the run: %v", s)
	}
	for _, pod := range pods {
		moments := f.cluster.PodScheduling(pod.UID)
		placed := pod != s390x && pod != stranded
		if moments.Decided.IsZero() || moments.Acknowledged.IsZero() || moments.Schedulable.IsZero() == placed {
			t.Errorf("%s: %+v, want acknowledged and decided, schedulable %v", pod.Name, moments, placed)
		}
	}

	// The next pass decides on s390x and stranded again: not a first decision; a new run.
	if _, err := f.provisioner.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := metricstest.Observations(t, metrics.PodsSchedulingDecisionDurationSeconds); n-decisions0 != uint64(len(pods)) {
		t.Errorf("%d first decisions observed after a second pass, want still %d", n-decisions0, len(pods))
	}
	again := metricstest.Gathered(t, crmetrics.Registry, "karpenter_scheduler_queue_depth", map[string]string{metrics.LabelController: metrics.ControllerProvisioner})
	if len(again) != 1 || len(depth) != 1 || metricstest.Label(again[0], metrics.LabelSchedulingID) == metricstest.Label(depth[0], metrics.LabelSchedulingID) {
		t.Errorf("queue depth series %v after a second run, want one with a new scheduling id", again)
	}
	if got := testutil.ToFloat64(metrics.SchedulerPendingPodsByEffectiveZoneCount.WithLabelValues(metrics.ControllerProvisioner, scheduler.EffectiveZoneFlexible)); got != 1 {
		t.Errorf("pending pods in no particular zone after the second pass: %v, want 1 (s390x; the others are nominated)", got)
	}
}
