package state_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
	"github.com/openkarpenter/karpenter/pkg/state"
)

func TestLaunchBackoff(t *testing.T) {
	for _, tc := range []struct {
		launches int
		want     time.Duration
	}{{0, 0}, {1, 0}, {2, 5 * time.Minute}, {3, 10 * time.Minute}, {4, 20 * time.Minute}, {5, 40 * time.Minute}, {6, time.Hour}, {60, time.Hour}} {
		if got := state.LaunchBackoff(tc.launches, state.LaunchBackoffBase, state.LaunchBackoffMax); got != tc.want {
			t.Errorf("LaunchBackoff(%d) = %s, want %s", tc.launches, got, tc.want)
		}
	}
}

// A pod whose every launched node turns it away (it becomes ready and never takes the pod)
// gets at most five launches in its first hour, and about one an hour after: the provisioner
// here penalizes every miss (as it does a node that cannot take its pod) and launches whenever
// the snapshot lists the pod as pending.
func TestRefusedPodLaunchesBounded(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kube := memory.New(apis.NewScheme(), clk)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	if err := kube.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	cluster := state.NewCluster(kube, clk)
	var launches []time.Duration
	var misses []state.Miss
	start := clk.Now()
	for clk.Since(start) < 3*time.Hour {
		snap, err := cluster.SyncSnapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		missed := cluster.TakeMisses()
		misses = append(misses, missed...)
		backedOff := map[types.UID]bool{}
		for _, m := range missed {
			penalty := cluster.Penalize(m)
			if penalty.Launches != len(misses) || (penalty.Launches >= 2) != !penalty.RetryAt.IsZero() {
				t.Errorf("miss %d: penalty %+v", len(misses), penalty)
			}
			if !penalty.RetryAt.IsZero() {
				backedOff[m.UID] = true
			} else {
				snap.Avoid = map[types.UID][]string{m.UID: penalty.Avoid}
			}
		}
		for _, p := range snap.Pending {
			if backedOff[p.UID] {
				continue
			}
			if last := fmt.Sprintf("claim-%d", len(launches)-1); len(launches) > 0 && !slices.Contains(snap.Avoid[p.UID], last) {
				t.Fatalf("pending again at %s after launches %v without avoiding the node that refused it (misses %+v)", clk.Since(start), launches, misses)
			}
			// Launch a node for it, ready (initialized) a minute later.
			claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("claim-%d", len(launches))}}
			if err := kube.Create(ctx, claim); err != nil {
				t.Fatal(err)
			}
			claim.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized",
				LastTransitionTime: metav1.NewTime(clk.Now().Add(time.Minute))}}
			if err := kube.Status().Update(ctx, claim); err != nil {
				t.Fatal(err)
			}
			cluster.Nominate(p, claim.Name, true)
			launches = append(launches, clk.Since(start))
		}
		clk.Step(10 * time.Second)
	}
	t.Logf("launches at %v", launches)
	inFirstHour := 0
	for _, at := range launches {
		if at < time.Hour {
			inFirstHour++
		}
	}
	if inFirstHour > 5 || len(launches) > 8 {
		t.Errorf("launches at %v: %d in the first hour (want at most 5), %d in three hours (want at most 8)", launches, inFirstHour, len(launches))
	}
	if len(misses) != len(launches)-1 && len(misses) != len(launches) {
		t.Errorf("%d misses reported for %d launches", len(misses), len(launches))
	}
	for i, m := range misses {
		if !m.Launched || m.Refused || m.Pod.Name != "app" || m.Target != fmt.Sprintf("claim-%d", i) {
			t.Errorf("miss %d = %+v: want launched, run out, pod app, target claim-%d", i, m, i)
		}
	}
}
