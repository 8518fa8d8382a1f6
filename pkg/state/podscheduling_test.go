package state_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openkarpenter/karpenter/pkg/apis"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// The cluster remembers when a pod was acknowledged, first decided on and first placed; a pass
// that cannot place it forgets the placement; a snapshot forgets the pods that are gone,
// finished, or ready for longer than StartedPodRetention.
func TestPodSchedulingMoments(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	kube := memory.New(apis.NewScheme(), clk)
	c := state.NewCluster(kube, clk)
	newPod := func(name string) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
		if err := kube.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		return pod
	}
	web, api, batch := newPod("web"), newPod("api"), newPod("batch")

	c.AckPods(web, api)
	clk.Step(2 * time.Second)
	c.AckPods(web) // a later acknowledgement does not move the first
	clk.Step(3 * time.Second)
	waits := c.MarkSchedulingDecisions([]*corev1.Pod{web, batch}, []*corev1.Pod{api})
	if len(waits) != 2 || waits[0] != 5*time.Second || waits[1] != 5*time.Second {
		t.Fatalf("first decisions waited %v, want 5s for web and api (batch was never acknowledged)", waits)
	}
	want := map[*corev1.Pod]state.PodScheduling{
		web:   {Acknowledged: t0, Decided: t0.Add(5 * time.Second), Schedulable: t0.Add(5 * time.Second)},
		api:   {Acknowledged: t0, Decided: t0.Add(5 * time.Second)},
		batch: {Decided: t0.Add(5 * time.Second), Schedulable: t0.Add(5 * time.Second)},
	}
	for pod, w := range want {
		if got := c.PodScheduling(pod.UID); got != w {
			t.Errorf("%s: %+v, want %+v", pod.Name, got, w)
		}
	}

	// The next pass places api and cannot place web: no first decision any more; web's
	// placement is forgotten, api's is now.
	clk.Step(time.Second)
	if waits := c.MarkSchedulingDecisions([]*corev1.Pod{api, batch}, []*corev1.Pod{web}); len(waits) != 0 {
		t.Errorf("second decisions reported waits %v, want none", waits)
	}
	if got := c.PodScheduling(web.UID).Schedulable; !got.IsZero() {
		t.Errorf("web schedulable since %v after a pass could not place it", got)
	}
	if got := c.PodScheduling(api.UID).Schedulable; !got.Equal(t0.Add(6 * time.Second)) {
		t.Errorf("api schedulable since %v, want the second pass", got)
	}
	if got := c.PodScheduling(batch.UID).Schedulable; !got.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("batch schedulable since %v, want its first placement kept", got)
	}

	// web is deleted, batch finishes, api becomes ready: a snapshot forgets web and batch, and
	// api once it has been ready for longer than the retention.
	if err := kube.Delete(ctx, web); err != nil {
		t.Fatal(err)
	}
	batch.Status.Phase = corev1.PodSucceeded
	api.Status.Phase = corev1.PodRunning
	api.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(clk.Now())}}
	for _, pod := range []*corev1.Pod{batch, api} {
		if err := kube.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.SyncSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pod := range []*corev1.Pod{web, batch} {
		if got := c.PodScheduling(pod.UID); got != (state.PodScheduling{}) {
			t.Errorf("%s remembered as %+v after it is gone or finished", pod.Name, got)
		}
	}
	if got := c.PodScheduling(api.UID); got.Decided.IsZero() {
		t.Errorf("api forgotten as soon as it became ready")
	}
	clk.Step(state.StartedPodRetention + time.Second)
	if _, err := c.SyncSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.PodScheduling(api.UID); got != (state.PodScheduling{}) {
		t.Errorf("api remembered as %+v after being ready for longer than the retention", got)
	}
}
