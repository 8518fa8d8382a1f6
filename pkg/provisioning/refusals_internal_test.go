package provisioning

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openkarpenter/karpenter/pkg/metrics"
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

// TestMismatch: what keeps a node from taking a pod, through the scheduler pipeline's checks of
// one pod on one node (scheduler.CheckNode), read lasting differences first.
func TestMismatch(t *testing.T) {
	node := func(ready bool, taints ...corev1.Taint) *state.StateNode {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: "zone-a"}},
			Spec:   corev1.NodeSpec{Taints: taints},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
		web := builders.Pod(builders.PodOptions{Name: "web", CPU: "1", HostPorts: []int32{8080}, NodeName: "n1"})
		return &state.StateNode{Node: n, Pods: []*corev1.Pod{web},
			Allocatable: builders.Resources("cpu", "3", "memory", "8Gi", "pods", "10"), Requested: scheduling.PodRequests(web)}
	}
	dedicated := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	zone := func(zones ...string) *corev1.NodeSelectorTerm {
		return &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}}
	}
	affinity := func(required []corev1.NodeSelectorTerm, preferred ...corev1.PreferredSchedulingTerm) *corev1.Affinity {
		na := &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}
		if required != nil {
			na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: required}
		}
		return &corev1.Affinity{NodeAffinity: na}
	}
	for _, c := range []struct {
		name     string
		pod      builders.PodOptions
		sn       *state.StateNode
		volumes  scheduling.Requirements
		kind     string
		contains string
	}{
		{"fits", builders.PodOptions{CPU: "1"}, node(true), scheduling.Requirements{}, "", ""},
		{"node selector", builders.PodOptions{CPU: "1", NodeSelector: map[string]string{corev1.LabelTopologyZone: "zone-b"}}, node(true), scheduling.Requirements{}, metrics.RefusalLabel, "zone-b"},
		{"one of its ORed terms matches", builders.PodOptions{CPU: "1", Affinity: affinity([]corev1.NodeSelectorTerm{*zone("zone-b"), *zone("zone-a")})}, node(true), scheduling.Requirements{}, "", ""},
		{"no ORed term matches", builders.PodOptions{CPU: "1", Affinity: affinity([]corev1.NodeSelectorTerm{*zone("zone-b"), *zone("zone-c")})}, node(true), scheduling.Requirements{}, metrics.RefusalLabel, "zone"},
		{"a preference is no filter", builders.PodOptions{CPU: "1", Affinity: affinity(nil, corev1.PreferredSchedulingTerm{Weight: 1, Preference: *zone("zone-b")})}, node(true), scheduling.Requirements{}, "", ""},
		{"volumes", builders.PodOptions{CPU: "1"}, node(true), scheduling.NewRequirements(scheduling.MustRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")), metrics.RefusalLabel, "its volumes: "},
		{"taint", builders.PodOptions{CPU: "1"}, node(true, dedicated), scheduling.Requirements{}, metrics.RefusalTaint, "the pod "},
		{"a taint the node sheds", builders.PodOptions{CPU: "1"}, node(true, notReady), scheduling.Requirements{}, "", ""},
		{"taint before room", builders.PodOptions{CPU: "4"}, node(true, dedicated), scheduling.Requirements{}, metrics.RefusalTaint, "dedicated"},
		{"room", builders.PodOptions{CPU: "4"}, node(true), scheduling.Requirements{}, metrics.RefusalResource, "insufficient cpu (wants 4, has 2)"},
		{"host port", builders.PodOptions{CPU: "1", HostPorts: []int32{8080}}, node(true), scheduling.Requirements{}, metrics.RefusalHostPort, "8080"},
		{"not ready: labels only", builders.PodOptions{CPU: "4"}, node(false, dedicated), scheduling.Requirements{}, "", ""},
		{"not ready, wrong label", builders.PodOptions{CPU: "1", NodeSelector: map[string]string{corev1.LabelTopologyZone: "zone-b"}}, node(false), scheduling.Requirements{}, metrics.RefusalLabel, "zone-b"},
	} {
		kind, why := Mismatch(builders.Pod(c.pod), c.sn, c.volumes)
		if kind != c.kind || !strings.Contains(why, c.contains) {
			t.Errorf("%s: Mismatch = %q, %q; want %q containing %q", c.name, kind, why, c.kind, c.contains)
		}
	}
}
