package state

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// TestSchedulingTaints: as in Karpenter, pods must tolerate a NodePool's taints but not its
// startupTaints: the scheduler sees a claim still launching, or a node not yet initialized,
// without its startup taints and the known ephemeral ones (karpenter.sh/unregistered,
// not-ready), and an initialized node with every taint it still carries.
func TestSchedulingTaints(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	unregistered := corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec:       karpv1.NodeClaimSpec{Taints: []corev1.Taint{taint}, StartupTaints: []corev1.Taint{startup}},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint, startup, unregistered, notReady}}}
	initializedClaim := claim.DeepCopy()
	initializedClaim.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	ready := node.DeepCopy()
	ready.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}

	for name, tc := range map[string]struct {
		sn   *StateNode
		want []corev1.Taint
	}{
		"launching":   {&StateNode{NodeClaim: claim}, []corev1.Taint{taint}},
		"registered":  {&StateNode{NodeClaim: claim, Node: node}, []corev1.Taint{taint}},
		"initialized": {&StateNode{NodeClaim: initializedClaim, Node: node}, []corev1.Taint{taint, startup, unregistered, notReady}},
		"unmanaged":   {&StateNode{Node: ready}, []corev1.Taint{taint, startup, unregistered, notReady}},
	} {
		if got := tc.sn.SchedulerNode().Taints; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: taints %v, want %v", name, got, tc.want)
		}
	}
}

// TestLimitCapacity: a launched claim counts its status.capacity against its NodePool's
// limits, one still launching the largest instance type it may become, and each one node.
func TestLimitCapacity(t *testing.T) {
	small := &cloudprovider.InstanceType{Name: "small", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	large := &cloudprovider.InstanceType{Name: "large", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
	huge := &cloudprovider.InstanceType{Name: "huge", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}}
	its := []*cloudprovider.InstanceType{small, large, huge}
	launching := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"small", "large"}}}}}
	launched := launching.DeepCopy()
	launched.Name = "b"
	launched.Status.Capacity = small.Capacity
	nodes := []*StateNode{{NodeClaim: launching}, {NodeClaim: launched}, {Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unmanaged"}}}}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{Limits: karpv1.Limits{corev1.ResourceCPU: resource.MustParse("16"), "nodes": resource.MustParse("5")}}}

	pools, capacity, _ := SchedulerNodePools([]*karpv1.NodePool{np}, map[string][]*cloudprovider.InstanceType{"default": its}, nodes)
	if len(pools) != 1 {
		t.Fatalf("%d pools, want 1", len(pools))
	}
	left := pools[0].Remaining
	if cpu, n := left[corev1.ResourceCPU], left["nodes"]; cpu.String() != "6" || n.String() != "3" {
		t.Errorf("remaining cpu %s nodes %s, want 6 (16 less 8 launching and 2 launched) and 3", cpu.String(), n.String())
	}
	if cpu := capacity["a"][corev1.ResourceCPU]; cpu.String() != "8" {
		t.Errorf("launching claim counts %s cpu, want 8 (the largest type it may become)", cpu.String())
	}
	if cpu := capacity["b"][corev1.ResourceCPU]; cpu.String() != "2" {
		t.Errorf("launched claim counts %s cpu, want its capacity 2", cpu.String())
	}
	if _, ok := capacity["unmanaged"]; ok {
		t.Error("a node without a NodeClaim counts against no limits")
	}
	if Remaining(nil, corev1.ResourceList{}) != nil {
		t.Error("no limits must mean unlimited (nil)")
	}
}

// TestNodeRequests: a node's sum is Requested's, kept while its pods are the same objects, and
// made again when one of them is replaced (a new version), added or gone.
func TestNodeRequests(t *testing.T) {
	pod := func(name, cpu, version string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: version},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	}
	cpu := func(l corev1.ResourceList) string { q := l[corev1.ResourceCPU]; return q.String() }
	var r NodeRequests
	a, b := pod("a", "1", "1"), pod("b", "500m", "1")
	if got := cpu(r.Of("n", []*corev1.Pod{a, b}, nil)); got != "1500m" {
		t.Fatalf("sum %s, want 1500m", got)
	}
	first := r.Of("n", []*corev1.Pod{a, b}, nil)
	if again := r.Of("n", []*corev1.Pod{a, b}, nil); reflect.ValueOf(again).Pointer() != reflect.ValueOf(first).Pointer() {
		t.Error("the same pods were summed again")
	}
	resized := pod("b", "2", "2")
	if got := cpu(r.Of("n", []*corev1.Pod{a, resized}, nil)); got != "3" {
		t.Errorf("after b's new version: %s, want 3", got)
	}
	if got := cpu(r.Of("n", []*corev1.Pod{a}, nil)); got != "1" {
		t.Errorf("after b left: %s, want 1", got)
	}
	r.Prune()
	r.Prune()
	if len(r.sums) != 0 {
		t.Errorf("%d sums kept after two prunes without a call", len(r.sums))
	}
}

// TestSchedulerNodePools: the NodePools with listed types, in order, each with its limits'
// room; one without types is left out, one whose requirements do not parse is an error.
func TestSchedulerNodePools(t *testing.T) {
	large := &cloudprovider.InstanceType{Name: "large", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
	its := []*cloudprovider.InstanceType{large}
	limited := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "limited"}, Spec: karpv1.NodePoolSpec{Limits: karpv1.Limits{corev1.ResourceCPU: resource.MustParse("20")}}}
	free := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "free"}}
	unlisted := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "unlisted"}}
	broken := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "broken"}}
	broken.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: "zone", Operator: "Sometimes", Values: []string{"a"}}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{karpv1.NodePoolLabelKey: "limited"}}}
	claim.Status.Capacity = large.Capacity
	pools, _, errs := SchedulerNodePools([]*karpv1.NodePool{limited, free, unlisted, broken},
		map[string][]*cloudprovider.InstanceType{"limited": its, "free": its, "broken": its}, []*StateNode{{NodeClaim: claim}})
	if len(pools) != 2 || pools[0].Name != "limited" || pools[1].Name != "free" {
		t.Fatalf("pools %v, want limited and free in order", pools)
	}
	if cpu := pools[0].Remaining[corev1.ResourceCPU]; cpu.String() != "12" {
		t.Errorf("limited's remaining cpu %s, want 12 (20 less its 8-cpu claim)", cpu.String())
	}
	if pools[1].Remaining != nil {
		t.Errorf("free's remaining %v, want nil (unlimited)", pools[1].Remaining)
	}
	if len(errs) != 1 || errs["broken"] == nil {
		t.Errorf("errs %v, want broken's", errs)
	}
}
