package deletioncost

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var rankTypes = []*cloudprovider.InstanceType{
	builders.InstanceType(builders.InstanceTypeOptions{Name: "small", CPU: 2, MemoryGiB: 4, PricePerHour: 0.1}),
	builders.InstanceType(builders.InstanceTypeOptions{Name: "large", CPU: 8, MemoryGiB: 16, PricePerHour: 0.4}),
}

// rankNode is an initialized, ready node of pool with its NodeClaim; drifted sets the claim's
// Drifted condition.
func rankNode(pool, name, instanceType string, drifted bool) *state.StateNode {
	labels := map[string]string{karpv1.NodePoolLabelKey: pool, corev1.LabelInstanceTypeStable: instanceType,
		karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand, corev1.LabelTopologyZone: "test-zone-1"}
	claim := builders.NodeClaim(builders.NodeClaimOptions{Name: name, NodePool: pool, Labels: labels})
	claim.Status.NodeName = name
	claim.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	if drifted {
		claim.Status.Conditions = append(claim.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue})
	}
	return &state.StateNode{Node: builders.Node(name, labels, builders.Resources("cpu", "2")), NodeClaim: claim}
}

// rsPod is a pod a ReplicaSet controls, bound to node.
func rsPod(node string, annotations map[string]string) *corev1.Pod {
	p := builders.Pod(builders.PodOptions{NodeName: node, OwnerKind: "ReplicaSet"})
	p.Annotations = annotations
	return p
}

func names(nodes []*state.StateNode) []string {
	out := []string{}
	for _, sn := range nodes {
		out = append(out, sn.Name())
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRankGroups checks Rank against Karpenter v1.15.0's RankNodes
// (pkg/controllers/pod/deletioncost/ranking.go) and the specs of ranking_test.go that pin its
// partition: ties broken by name, the savings ratio ignoring pod-deletion-cost (Karpenter
// writes it), a kube-system bare pod not pinning its node, drifted first even in a NodePool that
// never consolidates, a static NodePool's drifted node ranked with the others, an
// unpriceable node cleared, and each NodePool's budget sending the rest to the cleared group.
func TestRankGroups(t *testing.T) {
	never := builders.NodePool(builders.NodePoolOptions{Name: "never", ConsolidateAfter: "Never", Budgets: []karpv1.Budget{{Nodes: "100%"}}})
	tight := builders.NodePool(builders.NodePoolOptions{Name: "tight", ConsolidateAfter: "0s", Budgets: []karpv1.Budget{{Nodes: "1"}}})
	open := builders.NodePool(builders.NodePoolOptions{Name: "open", ConsolidateAfter: "0s", Budgets: []karpv1.Budget{{Nodes: "100%"}}})
	replicas := int64(2)
	static := builders.NodePool(builders.NodePoolOptions{Name: "static", ConsolidateAfter: "0s", Budgets: []karpv1.Budget{{Nodes: "100%"}}, Replicas: &replicas})
	nodes := []*state.StateNode{
		rankNode("open", "open-b", "small", false),
		rankNode("open", "open-a", "small", false),
		rankNode("open", "open-large", "large", false),
		rankNode("open", "open-unpriced", "xlarge", false),
		rankNode("never", "never-drifted", "small", true),
		rankNode("never", "never-idle", "small", false),
		rankNode("static", "static-drifted", "large", true),
		rankNode("tight", "tight-1", "large", false),
		rankNode("tight", "tight-2", "large", false),
	}
	kubeSystem := builders.Pod(builders.PodOptions{Namespace: "kube-system", NodeName: "open-a"})
	pods := []*corev1.Pod{
		// A pod-deletion-cost as high as it gets would put open-b last were it read.
		rsPod("open-b", map[string]string{corev1.PodDeletionCost: "2147483647"}),
		rsPod("open-a", nil), kubeSystem,
		rsPod("open-large", nil), rsPod("never-drifted", nil), rsPod("never-idle", nil), rsPod("static-drifted", nil),
		rsPod("tight-1", nil), rsPod("tight-2", nil),
	}
	plan := Rank(Input{
		Now: time.Now(), Nodes: nodes, Pods: pods, NodePools: []*karpv1.NodePool{never, tight, open, static},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{"open": rankTypes, "never": rankTypes, "tight": rankTypes, "static": rankTypes},
	})
	// Drifted first, then the others by savings ratio: large nodes (0.4/2) before small ones
	// (open-b 0.1/2, its pod-deletion-cost unread, then open-a 0.1/3, its kube-system pod
	// counted as a pod to move but not pinning it), names breaking ties.
	if want := []string{"never-drifted", "open-large", "static-drifted", "tight-1", "open-b", "open-a"}; !equal(names(plan.Ranked), want) {
		t.Errorf("ranked %v, want %v", names(plan.Ranked), want)
	}
	if want := []string{"never-idle", "open-unpriced", "tight-2"}; !equal(names(plan.Cleared), want) {
		t.Errorf("cleared %v, want %v", names(plan.Cleared), want)
	}
	if len(plan.Disrupting) != 0 {
		t.Errorf("disrupting %v, want none", names(plan.Disrupting))
	}
	if RankAt(0, 6) != -6 || RankAt(5, 6) != -1 {
		t.Errorf("RankAt(0, 6) = %d, RankAt(5, 6) = %d; want -6 and -1", RankAt(0, 6), RankAt(5, 6))
	}
}

// TestRankDisruptingAndProtected: a node being deleted or tainted karpenter.sh/disrupted is
// disrupting whatever protects it (Karpenter's "keep a disrupted-tainted node in Group A even
// when do-not-disrupt is set"); a do-not-disrupt pod, a pod no controller recreates, a
// nominated or unmanaged node are not ranked.
func TestRankDisruptingAndProtected(t *testing.T) {
	open := builders.NodePool(builders.NodePoolOptions{Name: "open", ConsolidateAfter: "0s", Budgets: []karpv1.Budget{{Nodes: "100%"}}})
	now := time.Now()
	tainted := rankNode("open", "tainted", "small", false)
	tainted.Node.Spec.Taints = []corev1.Taint{{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	tainted.Node.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	deleting := rankNode("open", "deleting", "small", false)
	deleting.MarkedForDeletion = true
	nominated := rankNode("open", "nominated", "small", false)
	nominated.NominatedUntil = now.Add(time.Minute)
	unmanaged := rankNode("open", "unmanaged", "small", false)
	unmanaged.NodeClaim = nil
	unmanaged.MarkedForDeletion = true
	nodes := []*state.StateNode{tainted, deleting, nominated, unmanaged,
		rankNode("open", "guarded", "small", false), rankNode("open", "bare", "small", false), rankNode("open", "free", "small", false)}
	pods := []*corev1.Pod{
		rsPod("guarded", map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}),
		builders.Pod(builders.PodOptions{NodeName: "bare"}),
		rsPod("free", nil),
	}
	plan := Rank(Input{Now: now, Nodes: nodes, Pods: pods, NodePools: []*karpv1.NodePool{open},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{"open": rankTypes}})
	if want := []string{"deleting", "tainted"}; !equal(names(plan.Disrupting), want) {
		t.Errorf("disrupting %v, want %v", names(plan.Disrupting), want)
	}
	if want := []string{"free"}; !equal(names(plan.Ranked), want) {
		t.Errorf("ranked %v, want %v", names(plan.Ranked), want)
	}
	// In savings ratio order: nominated has no pod to move.
	if want := []string{"nominated", "bare", "guarded"}; !equal(names(plan.Cleared), want) {
		t.Errorf("cleared %v, want %v (the unmanaged node in none)", names(plan.Cleared), want)
	}
}
