package provisioning_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// replicaSet creates a ReplicaSet wanting replicas pods (no controller runs it here), with a
// ReplicaFailure condition when failing.
func replicaSet(t *testing.T, name string, replicas int32, failing bool) *appsv1.ReplicaSet {
	t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause"}}},
			},
		},
	}
	create(t, rs)
	t.Cleanup(func() { env.Purge(t, []client.ObjectList{&appsv1.ReplicaSetList{}}, "default") })
	if failing {
		rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}
		if err := env.Client.Status().Update(context.Background(), rs); err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

// ownedPods builds n pending pods of 2 cpu / 4Gi controlled by the ReplicaSet.
func ownedPods(rs *appsv1.ReplicaSet, first, n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	controller := true
	for i := range pods {
		pods[i] = builders.Pod(builders.PodOptions{Name: rs.Name + "-" + string(rune('a'+first+i)), CPU: "2", Memory: "4Gi", Labels: rs.Spec.Template.Labels})
		pods[i].OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &controller}}
	}
	return pods
}

// TestReplicasStillToComeAreSizedFor: a ReplicaSet that wants 20 pods and has created 4 so far
// gets, from the pass that plans the 4, room for all 20; only the 4 are nominated, the room of
// the other 16 is reserved for them, and they take it as they come, without a launch. A ReplicaSet
// that reports it fails to create pods gets room for the pods it has only.
func TestReplicasStillToComeAreSizedFor(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	ctx := context.Background()
	rs := replicaSet(t, "web", 20, false)
	first := ownedPods(rs, 0, 4)
	pending(t, first...)
	decision, err := f.provisioner.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cpu int64
	nominated := 0
	for _, c := range decision.Results.NewClaims {
		cpu += c.InstanceTypes[0].AllocatableResources().MilliCPU
		nominated += len(c.Pods)
	}
	if cpu < 20*2000 {
		t.Errorf("the first pass launched %dm of cpu for a ReplicaSet of 20 pods of 2 cpu", cpu)
	}
	if nominated != 4 || len(decision.Results.ExistingPlacements) != 0 || len(decision.Results.PodErrors) != 0 {
		t.Errorf("the first pass put %d pods on its claims, %d on existing ones and %d nowhere; want the 4 that exist on its claims",
			nominated, len(decision.Results.ExistingPlacements), len(decision.Results.PodErrors))
	}
	for _, pod := range first {
		if _, ok := f.cluster.NominatedTo(pod.UID); !ok {
			t.Errorf("pod %s not nominated", pod.Name)
		}
	}
	// The other 16 take the room reserved for them: nominated to the first pass's claims,
	// they are not pending for the next pass, which launches nothing.
	launched := map[string]bool{}
	for _, claim := range decision.Created {
		launched[claim.Name] = true
	}
	rest := ownedPods(rs, 4, 16)
	pending(t, rest...)
	again, err := f.provisioner.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Created) != 0 || len(again.Results.ExistingPlacements) != 0 {
		t.Errorf("the pass after the rest arrived created %d claims and placed %d pods; want none: they took their reserved room",
			len(again.Created), len(again.Results.ExistingPlacements))
	}
	for _, pod := range rest {
		if target, ok := f.cluster.NominatedTo(pod.UID); !ok || !launched[target] {
			t.Errorf("pod %s nominated to %q (%v), want a claim of the first pass", pod.Name, target, ok)
		}
	}

	failing := replicaSet(t, "quota", 20, true)
	pending(t, ownedPods(failing, 0, 2)...)
	stuck, err := f.provisioner.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cpu = 0
	for _, c := range stuck.Results.NewClaims {
		cpu += c.InstanceTypes[0].AllocatableResources().MilliCPU
	}
	if cpu >= 20*2000 {
		t.Errorf("a ReplicaSet failing to create its pods got %dm of cpu for its 20 replicas; want room for the 2 it has", cpu)
	}
}
