package state_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openkarpenter/karpenter/pkg/state"
)

// TestPodInTheSchedulersQueue: a pod the kube-scheduler has not tried yet counts as waiting for
// capacity once it has waited SchedulerBacklog (a burst of thousands of pods is marked
// Unschedulable a slice at a time), not before, and never for another scheduler or behind
// scheduling gates; a pod the kube-scheduler tried counts only when it found it Unschedulable.
func TestPodInTheSchedulersQueue(t *testing.T) {
	created := time.Now()
	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", CreationTimestamp: metav1.NewTime(created)}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	later := created.Add(state.SchedulerBacklog)
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		at   time.Time
		want bool
		wait time.Duration
	}{
		{"just created", pod(nil), created.Add(time.Second), false, state.SchedulerBacklog - time.Second},
		{"waited its backlog", pod(nil), later, true, 0},
		{"another scheduler", pod(func(p *corev1.Pod) { p.Spec.SchedulerName = "custom" }), later, false, 0},
		{"gated", pod(func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}} }), later, false, 0},
		{"tried and scheduled elsewhere soon", pod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		}), later, false, 0},
		{"unschedulable", pod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		}), created, true, 0},
	} {
		got, wait := state.IsProvisionableAt(c.pod, c.at)
		if got != c.want || wait != c.wait {
			t.Errorf("%s: provisionable %v after %s, want %v after %s", c.name, got, wait, c.want, c.wait)
		}
	}
	if state.IsProvisionable(pod(nil)) {
		t.Error("IsProvisionable (no clock) counts a pod the kube-scheduler has not tried")
	}
}
