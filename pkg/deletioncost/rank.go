package deletioncost

import (
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// DisruptingCost is the annotation of the pods of nodes being disrupted: the lowest int32.
const DisruptingCost = math.MinInt32

// Input is what one ranking looks at. Rank does no I/O.
type Input struct {
	// Now is the ranking's time (nominations, do-not-disrupt durations, budget schedules).
	Now time.Time
	// Nodes are the cluster's nodes (state.Snapshot.Nodes).
	Nodes []*state.StateNode
	// Pods are the cluster's pods (state.Snapshot.Pods); those bound to a node are its pods.
	Pods []*corev1.Pod
	// NodePools in the cluster.
	NodePools []*karpv1.NodePool
	// InstanceTypes per NodePool name; a NodePool whose instance types could not be listed,
	// or has none, is absent, and its nodes have no price. Nil: nothing was priced, and no
	// node is left out for it.
	InstanceTypes map[string][]*cloudprovider.InstanceType
	// PDBs are the PodDisruptionBudgets in the cluster.
	PDBs []*policyv1.PodDisruptionBudget
}

// Plan is a ranking: the managed nodes in three groups, each in order.
type Plan struct {
	// Disrupting are the nodes being deleted or tainted karpenter.sh/disrupted: their pods get
	// DisruptingCost.
	Disrupting []*state.StateNode
	// Ranked are the drifted nodes then the others consolidation may act on, each part by
	// savings ratio: the i-th pods get RankAt(i, len(Ranked)).
	Ranked []*state.StateNode
	// Cleared are the other managed nodes: their pods' annotation is removed.
	Cleared []*state.StateNode
	// Pods are the pods bound to each node, by node name.
	Pods map[string][]*corev1.Pod
}

// RankAt is the annotation of the pods of the i-th of n ranked nodes: -n for the first,
// rising to -1 for the last. The ReplicaSet controller removes the lowest first.
func RankAt(i, n int) int { return i - n }

type group int

const (
	groupDisrupting group = iota
	groupDrifted
	groupConsolidatable
	groupCleared
)

// Rank ranks the managed nodes as Karpenter v1.15.0's RankNodes
// (pkg/controllers/pod/deletioncost/ranking.go). It is deterministic and does not modify its
// input.
func Rank(in Input) Plan {
	plan := Plan{Pods: map[string][]*corev1.Pod{}}
	for _, pod := range in.Pods {
		if pod.Spec.NodeName != "" {
			plan.Pods[pod.Spec.NodeName] = append(plan.Pods[pod.Spec.NodeName], pod)
		}
	}
	var nodes []*state.StateNode
	for _, sn := range in.Nodes {
		// Only Karpenter's nodes: an unmanaged node being deleted is none of its business.
		if sn.NodeClaim != nil {
			nodes = append(nodes, sn)
		}
	}
	pools := map[string]*karpv1.NodePool{}
	for _, np := range in.NodePools {
		pools[np.Name] = np
	}
	pdbs := state.NewPDBIndex(in.PDBs)

	// One order for every group: consolidation's, the most saved per unit of reschedule cost
	// first, names breaking ties.
	ratio := make(map[*state.StateNode]float64, len(nodes))
	for _, sn := range nodes {
		ratio[sn] = savingsRatio(sn, plan.Pods[nodeName(sn)], in.InstanceTypes)
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		if ri, rj := ratio[nodes[i]], ratio[nodes[j]]; ri != rj {
			return ri > rj
		}
		return nodes[i].Name() < nodes[j].Name()
	})

	var drifted, consolidatable []*state.StateNode
	for _, sn := range nodes {
		switch classify(sn, plan.Pods[nodeName(sn)], pools, in, pdbs) {
		case groupDisrupting:
			plan.Disrupting = append(plan.Disrupting, sn)
		case groupDrifted:
			drifted = append(drifted, sn)
		case groupConsolidatable:
			consolidatable = append(consolidatable, sn)
		default:
			plan.Cleared = append(plan.Cleared, sn)
		}
	}
	total, disrupting := budgetCounts(nodes)
	budgets := func(reason karpv1.DisruptionReason) map[string]int {
		out := map[string]int{}
		for name, np := range pools {
			// An invalid budget allows nothing, as AllowedDisruptions says.
			out[name], _ = disruption.AllowedDisruptions(np, reason, total[name], disrupting[name], in.Now)
		}
		return out
	}
	drifted, driftOverflow := withinBudget(drifted, budgets(karpv1.DisruptionReasonDrifted))
	consolidatable, consolidationOverflow := withinBudget(consolidatable, budgets(karpv1.DisruptionReasonUnderutilized))
	plan.Cleared = append(append(plan.Cleared, driftOverflow...), consolidationOverflow...)
	plan.Ranked = append(drifted, consolidatable...)
	return plan
}

// nodeName is the name pods bind to: the Node's, "" while the claim has none.
func nodeName(sn *state.StateNode) string {
	if sn.Node == nil {
		return ""
	}
	return sn.Node.Name
}

// classify puts a managed node in its group, as Karpenter's classifyNode.
func classify(sn *state.StateNode, pods []*corev1.Pod, pools map[string]*karpv1.NodePool, in Input, pdbs *state.PDBIndex) group {
	if goingAway(sn) {
		return groupDisrupting
	}
	// Karpenter's ValidateNodeDisruptable: registered, initialized, not nominated, not
	// do-not-disrupt, of a NodePool.
	if sn.Node == nil || !sn.Initialized() || disruption.NodeProtection(sn, in.Now) != "" {
		return groupCleared
	}
	poolName, ok := sn.Node.Labels[karpv1.NodePoolLabelKey]
	if !ok {
		return groupCleared
	}
	// Karpenter's ValidatePodsDisruptable, as disruption here protects a candidate's pods.
	var reschedulable []*corev1.Pod
	for _, pod := range pods {
		if state.IsReschedulable(pod) {
			reschedulable = append(reschedulable, pod)
		}
	}
	if disruption.PodProtection(reschedulable, pdbs, in.Now) != "" || pinned(pods) || unpriceable(sn, in.InstanceTypes) {
		return groupCleared
	}
	np := pools[poolName]
	// Drift first, so a drifted node of a NodePool that never consolidates still ranks.
	if (np == nil || !nodepool.IsStatic(np)) && meta.IsStatusConditionTrue(sn.NodeClaim.Status.Conditions, karpv1.ConditionTypeDrifted) {
		return groupDrifted
	}
	if np != nil && np.Spec.Disruption.ConsolidateAfter.IsNever() {
		return groupCleared
	}
	return groupConsolidatable
}

// goingAway: the node is being deleted (or disruption marked it), or carries the
// karpenter.sh/disrupted taint.
func goingAway(sn *state.StateNode) bool {
	if sn.MarkedForDeletion {
		return true
	}
	if sn.Node == nil {
		return false
	}
	for _, t := range sn.Node.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// pinned reports whether a pod on the node would come back nowhere else if it went: outside
// kube-system, no ReplicaSet, Job or DaemonSet is its controller (a StatefulSet's pod keeps its
// zone's volumes; a bare pod has nothing to recreate it), as Karpenter's hasPinningPods.
func pinned(pods []*corev1.Pod) bool {
	for _, pod := range pods {
		if pod.Namespace == metav1.NamespaceSystem {
			continue
		}
		if !controlledBy(pod, "apps/v1", "ReplicaSet") && !controlledBy(pod, "batch/v1", "Job") && !controlledBy(pod, "apps/v1", "DaemonSet") {
			return true
		}
	}
	return false
}

// controlledBy reports whether the pod's controller reference is of that kind (an owner
// reference that is not the controller's does not recreate the pod).
func controlledBy(pod *corev1.Pod, apiVersion, kind string) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	return ref != nil && ref.APIVersion == apiVersion && ref.Kind == kind
}

// unpriceable reports whether the node's NodePool offers no instance type of the node's:
// such a node would tie with every other at ratio 0, a place that says nothing, so it is
// cleared, as Karpenter's isUnpriceable. Nothing priced at all (nil), or a node without the
// labels to look it up, is not unpriceable.
func unpriceable(sn *state.StateNode, types map[string][]*cloudprovider.InstanceType) bool {
	if types == nil {
		return false
	}
	pool, it := sn.Node.Labels[karpv1.NodePoolLabelKey], sn.Node.Labels[corev1.LabelInstanceTypeStable]
	if pool == "" || it == "" {
		return false
	}
	for _, t := range types[pool] {
		if t.Name == it {
			return false
		}
	}
	return true
}

// savingsRatio is consolidation's order of candidates: the node's price over 1 plus its
// reschedulable pods' eviction costs, pod-deletion-cost not read (the gate is on).
func savingsRatio(sn *state.StateNode, pods []*corev1.Pod, types map[string][]*cloudprovider.InstanceType) float64 {
	price := 0.0
	if sn.Node != nil {
		price = disruption.NodePrice(sn, types[sn.Node.Labels[karpv1.NodePoolLabelKey]])
	}
	var reschedulable []*corev1.Pod
	for _, pod := range pods {
		if state.IsReschedulable(pod) {
			reschedulable = append(reschedulable, pod)
		}
	}
	return price / disruption.RescheduleCost(reschedulable, true)
}

// budgetCounts counts, per NodePool, the initialized managed nodes (not those whose instance
// is terminating) and those of them disrupting (being deleted or not Ready), as Karpenter's
// NodePoolStatsFromNodes counts for the Drifted and Underutilized budgets.
func budgetCounts(nodes []*state.StateNode) (total, disrupting map[string]int) {
	total, disrupting = map[string]int{}, map[string]int{}
	for _, sn := range nodes {
		if sn.Node == nil || !sn.Initialized() ||
			meta.IsStatusConditionTrue(sn.NodeClaim.Status.Conditions, karpv1.ConditionTypeInstanceTerminating) {
			continue
		}
		pool := sn.Node.Labels[karpv1.NodePoolLabelKey]
		total[pool]++
		if sn.MarkedForDeletion || !state.NodeReady(sn.Node) {
			disrupting[pool]++
		}
	}
	return total, disrupting
}

// withinBudget keeps the nodes, in order, while their NodePool's budget allows (a NodePool
// not known allows none); the rest overflow.
func withinBudget(nodes []*state.StateNode, budget map[string]int) (kept, overflow []*state.StateNode) {
	used := map[string]int{}
	for _, sn := range nodes {
		pool := sn.Node.Labels[karpv1.NodePoolLabelKey]
		if used[pool] < budget[pool] {
			used[pool]++
			kept = append(kept, sn)
		} else {
			overflow = append(overflow, sn)
		}
	}
	return kept, overflow
}
