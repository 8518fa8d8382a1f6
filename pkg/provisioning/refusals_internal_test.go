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

// TestJudgedInFull: a refusal of a pod the node now fits is a race only when Mismatch weighs
// all the pod asks for; a pod whose verdict depends on other pods or on volumes is not.
func TestJudgedInFull(t *testing.T) {
	plain := builders.Pod(builders.PodOptions{CPU: "1"})
	antiAffinity := plain.DeepCopy()
	antiAffinity.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
	nodeAffinity := plain.DeepCopy()
	nodeAffinity.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	spread := plain.DeepCopy()
	spread.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway}}
	claim := plain.DeepCopy()
	claim.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	emptyDir := plain.DeepCopy()
	emptyDir.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"requests only", plain, true},
		{"node affinity", nodeAffinity, true},
		{"emptyDir", emptyDir, true},
		{"pod anti-affinity", antiAffinity, false},
		{"topology spread", spread, false},
		{"persistent volume claim", claim, false},
	} {
		if got := judgedInFull(c.pod); got != c.want {
			t.Errorf("%s: judgedInFull = %v, want %v", c.name, got, c.want)
		}
	}
}
