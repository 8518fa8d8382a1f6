package state

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// This file is the one adapter from the cluster's state to the scheduler's input: the nodes
// and in-flight claims pods may go to (their room, their taints, the daemonset pods they will
// run), the NodePools new capacity may come from with what their limits still allow, and the
// pods the daemonsets would run on a new node. The provisioner, disruption's simulations and
// the simulate binder all read the cluster through it, so they agree on what a node can take.

// DaemonPods are the pods the DaemonSets would run on a new node, one per DaemonSet, built from
// its pod template; the scheduler decides per NodePool and instance type which of them run
// there.
func DaemonPods(daemonSets []*appsv1.DaemonSet) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(daemonSets))
	for _, ds := range daemonSets {
		pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}
		pod.Namespace, pod.Name = ds.Namespace, ds.Name
		out = append(out, pod)
	}
	return out
}

// ExpectedDaemonSets are the daemonsets whose pods will run on a node with these labels and
// taints (they tolerate the taints and select the labels) but are not among its pods yet.
func ExpectedDaemonSets(pods []*corev1.Pod, labels map[string]string, taints []corev1.Taint, daemonSets []*appsv1.DaemonSet) []*appsv1.DaemonSet {
	present := map[types.UID]bool{}
	for _, pod := range pods {
		if owner := daemonSetOwner(pod); owner != "" {
			present[owner] = true
		}
	}
	var out []*appsv1.DaemonSet
	for _, ds := range daemonSets {
		if !present[ds.UID] && DaemonSetSchedules(ds, labels, taints) {
			out = append(out, ds)
		}
	}
	return out
}

// Requested sums the requests of a node's pods and of the daemonset pods expected there but
// not bound yet, through cache (which keys a daemonset's template by its UID and version).
func Requested(cache *scheduling.RequestsCache, pods []*corev1.Pod, daemonSets []*appsv1.DaemonSet) corev1.ResourceList {
	lists := make([]corev1.ResourceList, 0, len(pods)+len(daemonSets))
	for _, pod := range pods {
		lists = append(lists, cache.Get(pod))
	}
	for _, ds := range daemonSets {
		lists = append(lists, cache.Get(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: ds.UID, ResourceVersion: ds.ResourceVersion}, Spec: ds.Spec.Template.Spec}))
	}
	return scheduling.Merge(lists...)
}

// NodeRequests is Requested with memory: it keeps each node's sum, and sums again only the
// nodes whose pods or expected daemonsets changed since: pods by object identity (the
// read-only objects of a cache or of the simulator's store are replaced, never modified, when
// they change), daemonsets by UID and version. Components that sum every node on every pass
// keep one; most nodes' pods stay as they were from one pass to the next. It is not safe for
// concurrent use; the zero value is ready.
type NodeRequests struct {
	// Requests are the pods' own requests.
	Requests scheduling.RequestsCache
	sums     map[string]*nodeSum
	round    uint64
}

type nodeSum struct {
	pods       []*corev1.Pod
	daemonSets []*appsv1.DaemonSet
	sum        corev1.ResourceList
	round      uint64
}

// Of returns Requested for the node's pods and daemonsets: read-only, shared with the next
// calls for the same pods.
func (r *NodeRequests) Of(node string, pods []*corev1.Pod, daemonSets []*appsv1.DaemonSet) corev1.ResourceList {
	if s := r.sums[node]; s != nil && slices.Equal(s.pods, pods) && slices.EqualFunc(s.daemonSets, daemonSets, sameVersion) {
		s.round = r.round
		return s.sum
	}
	sum := Requested(&r.Requests, pods, daemonSets)
	if r.sums == nil {
		r.sums = map[string]*nodeSum{}
	}
	r.sums[node] = &nodeSum{pods: slices.Clone(pods), daemonSets: slices.Clone(daemonSets), sum: sum, round: r.round}
	return sum
}

// sameVersion: the same daemonset, unchanged (lists of a client without a cache copy them).
func sameVersion(a, b *appsv1.DaemonSet) bool {
	return a.UID == b.UID && a.ResourceVersion == b.ResourceVersion
}

// Prune forgets the nodes and pods not asked for since the last Prune.
func (r *NodeRequests) Prune() {
	for node, s := range r.sums {
		if s.round != r.round {
			delete(r.sums, node)
		}
	}
	r.round++
	r.Requests.Prune()
}

func daemonSetOwner(pod *corev1.Pod) types.UID {
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "DaemonSet" {
		return ref.UID
	}
	return ""
}

// SchedulingTaints are the taints the scheduler holds pods to on this node, Karpenter's rule:
// the Node's, or the NodeClaim's while it has no Node; while a node Karpenter manages is not
// initialized, or reboots, its startup taints, the known ephemeral ones
// (scheduling.IsKnownEphemeralTaint) and the karpenter.sh/rebooting fence are left out, since
// they go once it is (back): its room is coming, not gone, so no node launches for the pods
// its reboot's drain evicts; after that, every taint counts.
func (n *StateNode) SchedulingTaints() []corev1.Taint {
	if n.NodeClaim == nil {
		return n.Node.Spec.Taints
	}
	taints := n.NodeClaim.Spec.Taints
	if n.Node != nil {
		taints = n.Node.Spec.Taints
	}
	if n.Initialized() && !n.Rebooting() {
		return taints
	}
	var out []corev1.Taint
	for _, t := range taints {
		startup := slices.ContainsFunc(n.NodeClaim.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) })
		if !startup && !scheduling.IsKnownEphemeralTaint(t) && t.Key != karpv1.RebootingTaintKey {
			out = append(out, t)
		}
	}
	return out
}

// SchedulerNode describes the node, or the in-flight claim, to the scheduler: its labels (an
// in-flight claim's are those its labels and requirements pin, and its name as hostname), its
// SchedulingTaints, its room less the pods and expected daemonset pods, and the host ports of
// those daemonset pods.
func (n *StateNode) SchedulerNode() *scheduler.Node {
	out := &scheduler.Node{Name: n.Name(), Available: n.Available(), Pods: n.Pods, NodePool: n.NodePool(), Taints: n.SchedulingTaints()}
	if n.Node != nil {
		out.Labels = n.Node.Labels
	} else {
		out.InFlight = true
		out.Labels = map[string]string{}
		for k, v := range n.NodeClaim.Labels {
			out.Labels[k] = v
		}
		if reqs, err := scheduling.FromNodePoolRequirements(n.NodeClaim.Spec.Requirements...); err == nil {
			out.Requirements = &reqs
			for k, v := range reqs.Labels() {
				out.Labels[k] = v
			}
		}
		out.Labels[corev1.LabelHostname] = n.NodeClaim.Name
	}
	for _, ds := range n.DaemonSets {
		out.HostPorts = append(out.HostPorts, scheduling.PodHostPorts(&corev1.Pod{Spec: ds.Spec.Template.Spec})...)
	}
	return out
}

// SchedulerNodes are the snapshot's nodes and in-flight claims not marked for deletion, as the
// scheduler sees them: initialized capacity first, then capacity still launching.
func (s *Snapshot) SchedulerNodes() []*scheduler.Node {
	var ready, launching []*scheduler.Node
	for _, sn := range s.Nodes {
		if sn.MarkedForDeletion {
			continue
		}
		if sn.Initialized() {
			ready = append(ready, sn.SchedulerNode())
		} else {
			launching = append(launching, sn.SchedulerNode())
		}
	}
	return append(ready, launching...)
}

// SchedulerNodePool describes a NodePool to the scheduler, with the instance types it may
// launch (its), without limits (SchedulerNodePools adds them). It fails when the NodePool's
// requirements do not parse.
func SchedulerNodePool(np *karpv1.NodePool, its []*cloudprovider.InstanceType) (*scheduler.NodePool, error) {
	reqs, err := scheduling.NodePoolRequirements(np, nil)
	if err != nil {
		return nil, err
	}
	weight := int32(0)
	if np.Spec.Weight != nil {
		weight = *np.Spec.Weight
	}
	return &scheduler.NodePool{
		Name: np.Name, Weight: weight, Requirements: reqs, Labels: np.Spec.Template.Labels,
		Taints: np.Spec.Template.Spec.Taints, InstanceTypes: its,
	}, nil
}

// SchedulerNodePools describes the NodePools to the scheduler, in their order, each with the
// instance types it may launch (typesByPool; a NodePool without an entry is left out) and what
// its limits still allow given its nodes and claims, those marked for deletion too (they hold
// their capacity until they are gone). It also gives, by node name, what each claim of a
// NodePool with limits counts against them (LimitCapacity), which disruption's what-if gives
// back for the candidates it removes. A NodePool whose requirements do not parse is left out,
// its error kept in errs under its name. The provisioner and disruption's what-if both
// describe the NodePools through it.
func SchedulerNodePools(nodePools []*karpv1.NodePool, typesByPool map[string][]*cloudprovider.InstanceType, nodes []*StateNode) (pools []*scheduler.NodePool, limitCapacity map[string]corev1.ResourceList, errs map[string]error) {
	var claimsOf map[string][]*StateNode // by NodePool, made for the first one with limits
	for _, np := range nodePools {
		its, listed := typesByPool[np.Name]
		if !listed {
			continue
		}
		pool, err := SchedulerNodePool(np, its)
		if err != nil {
			if errs == nil {
				errs = map[string]error{}
			}
			errs[np.Name] = err
			continue
		}
		if len(np.Spec.Limits) > 0 {
			if claimsOf == nil {
				claimsOf, limitCapacity = map[string][]*StateNode{}, map[string]corev1.ResourceList{}
				for _, sn := range nodes {
					if sn.NodeClaim != nil {
						claimsOf[sn.NodePool()] = append(claimsOf[sn.NodePool()], sn)
					}
				}
			}
			used := corev1.ResourceList{resourceNodes: *resource.NewQuantity(0, resource.DecimalSI)}
			for _, sn := range claimsOf[np.Name] {
				capacity := sn.LimitCapacity(its)
				limitCapacity[sn.Name()] = capacity
				used = scheduling.Merge(used, capacity)
			}
			pool.Remaining = Remaining(np.Spec.Limits, used)
		}
		pools = append(pools, pool)
	}
	return pools, limitCapacity, errs
}

// resourceNodes is the limits' count of nodes.
const resourceNodes corev1.ResourceName = "nodes"

// LimitCapacity is what the node's claim counts against its NodePool's limits, with "nodes": 1:
// the claim's status.capacity once launched, and before that the capacity of the largest (by
// cpu) of its NodePool's instance types its requirements allow, since it may become any of
// them (its requests when none is known). It is nil for a node without a NodeClaim.
func (n *StateNode) LimitCapacity(its []*cloudprovider.InstanceType) corev1.ResourceList {
	if n.NodeClaim == nil {
		return nil
	}
	capacity := n.NodeClaim.Status.Capacity
	if len(capacity) == 0 {
		capacity = largestAllowed(n.NodeClaim, its)
	}
	out := capacity.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	out[resourceNodes] = *resource.NewQuantity(1, resource.DecimalSI)
	return out
}

func largestAllowed(claim *karpv1.NodeClaim, its []*cloudprovider.InstanceType) corev1.ResourceList {
	reqs, err := scheduling.FromNodePoolRequirements(claim.Spec.Requirements...)
	if err != nil {
		return claim.Spec.Resources.Requests
	}
	allowed, _ := reqs.Get(corev1.LabelInstanceTypeStable)
	var best corev1.ResourceList
	for _, it := range its {
		if allowed.Key != "" && !allowed.Has(it.Name) {
			continue
		}
		if best == nil || it.Capacity.Cpu().Cmp(*best.Cpu()) > 0 {
			best = it.Capacity
		}
	}
	if best == nil {
		return claim.Spec.Resources.Requests
	}
	return best
}

// Remaining is what limits still allow once used is taken: for each limited resource, the
// limit less its use. It is nil (unlimited) when limits are empty.
func Remaining(limits karpv1.Limits, used corev1.ResourceList) corev1.ResourceList {
	if len(limits) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for name, limit := range limits {
		left := limit.DeepCopy()
		left.Sub(used[name])
		out[name] = left
	}
	return out
}

// LaunchableInstanceTypes lists, for each NodePool that launches nodes from pending pods (not
// being deleted, not static), its instance types as the cloud offers them, keyed by the
// NodePool's name, with the offerings unavailable marks out of capacity made unavailable (nil:
// none), so that no new node is planned on what just ran out. A NodePool whose types cannot be
// listed is left out, its error kept in errs under its name. The provisioner, disruption and
// its packing measure all read the NodePools' instance types through it.
func LaunchableInstanceTypes(ctx context.Context, cloud cloudprovider.InstanceTypeProvider, nodePools []*karpv1.NodePool,
	unavailable *cloudprovider.UnavailableOfferings) (byPool map[string][]*cloudprovider.InstanceType, errs map[string]error) {
	byPool = make(map[string][]*cloudprovider.InstanceType, len(nodePools))
	for _, np := range nodePools {
		// A static NodePool (nodepool.IsStatic, a controller this package may not import) keeps its
		// replicas and launches nothing for pending pods.
		if np.DeletionTimestamp != nil || np.Spec.Replicas != nil {
			continue
		}
		its, err := cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			if errs == nil {
				errs = map[string]error{}
			}
			errs[np.Name] = err
			continue
		}
		if unavailable != nil {
			its = unavailable.Apply(its)
		}
		byPool[np.Name] = its
	}
	return byPool, errs
}
