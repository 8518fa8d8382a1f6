package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestRoomTaken: a nominated node that could not take its pod only because other pods filled
// it is a race, and no reason to back off launches; a node too small for the pod with only
// its daemonset pods is not.
func TestRoomTaken(t *testing.T) {
	node := func(allocatableCPU string, pods ...*corev1.Pod) *state.StateNode {
		sn := &state.StateNode{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(allocatableCPU), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}, Pods: pods}
		var lists []corev1.ResourceList
		for _, p := range pods {
			lists = append(lists, scheduling.PodRequests(p))
		}
		sn.Requested = scheduling.Merge(lists...)
		return sn
	}
	daemon := builders.Pod(builders.PodOptions{CPU: "500m"})
	controller := true
	daemon.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: &controller}}
	pod := builders.Pod(builders.PodOptions{CPU: "1"})
	for _, c := range []struct {
		name string
		sn   *state.StateNode
		want bool
	}{
		{"filled by other pods", node("2", daemon, builders.Pod(builders.PodOptions{CPU: "1"})), true},
		{"too small with its daemonset pod alone", node("1", daemon, builders.Pod(builders.PodOptions{CPU: "250m"})), false},
		{"no other pods", node("1", daemon), false},
	} {
		if got := roomTaken(pod, c.sn); got != c.want {
			t.Errorf("%s: roomTaken = %v, want %v", c.name, got, c.want)
		}
	}
}
