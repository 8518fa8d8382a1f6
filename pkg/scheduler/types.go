package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Input is the snapshot a scheduling run works on.
type Input struct {
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// Nodes are the existing nodes and in-flight NodeClaims pods may be placed on, in the order
	// they should be tried. Nodes being deleted must be left out by the caller.
	Nodes []*Node
	// NodePools are the NodePools new capacity may come from.
	NodePools []*NodePool
	// VolumeRequirements are extra requirements per pod (by UID) that its volumes impose: the
	// zones a bound PersistentVolume or a StorageClass's allowed topologies allow. The caller
	// resolves them; the scheduler ANDs them into every reading of the pod.
	VolumeRequirements map[types.UID]scheduling.Requirements
	// DaemonPods are the pods the cluster's DaemonSets would run on a new node, one per
	// DaemonSet (built from its template). Per NodePool and instance type, those whose
	// tolerations and node selection admit such a node take their requests and host ports
	// there, as Karpenter's daemon overhead groups do.
	DaemonPods []*corev1.Pod
	// NamespaceLabels are the labels of the cluster's Namespaces, by name, which the
	// namespaceSelector of a pod (anti-)affinity term selects namespaces by; nil when they were
	// not read, and a namespaceSelector then counts as every namespace (the safe side for
	// anti-affinity).
	NamespaceLabels map[string]map[string]string
	// Avoid names, per pod (by UID), existing nodes and in-flight claims it must not be placed
	// on: they turned it away before, for a reason the scheduler may not see.
	Avoid map[types.UID][]string
	// Options tune the run.
	Options Options
	// Progress, when set, tells how far the run has got while it runs.
	Progress *Progress
	// Infos, when set, keeps what the run derives from each pod on its own for the next runs
	// given the same pods (see PodInfos).
	Infos *PodInfos
}

// Options tune a scheduling run. The zero value is Karpenter's behaviour.
type Options struct {
	// IgnorePreferences treats preferred affinities and ScheduleAnyway spread as absent instead
	// of trying them first.
	IgnorePreferences bool
	// MinValuesBestEffort relaxes minValues when it cannot be met instead of failing the pod.
	MinValuesBestEffort bool
	// GrowClaims packs as Karpenter's scheduler does: a pod joins the first open claim for
	// which some instance type still fits all its pods (Karpenter tries the claims with the
	// fewest pods first, this scheduler in the order they were opened), with no regard to the
	// cost of the type that ends up fitting, and no look-ahead sizes new claims. Batches so
	// packed become a few large claims, costlier than the default's (about 1.5× the per-pod
	// lower bound on the EC2 catalog), so provisioning never uses it; the benchmarks do, to
	// compare.
	//
	// Disruption uses it on purpose: when the default packing would replace consolidation
	// candidates with more new nodes than the method allows (one for single-node and
	// multi-node consolidation), it asks again with GrowClaims, because the question there is
	// whether the pods fit in that few nodes at all, which growing claims answers; whether
	// the replacement is cheaper is judged afterwards, on the instance types it names.
	GrowClaims bool
	// karpenterOrder, with GrowClaims, tries the pods in Karpenter's order (scheduling/queue.go,
	// v1.15.0: cpu, then memory, descending; the oldest first; then by UID) rather than this
	// scheduler's (see solver.sortQueue): Solve's last resort when its answers leave pods
	// unplaced.
	karpenterOrder bool
	// CountEffectiveZones counts the pending pods by effective zone in
	// Results.PendingByEffectiveZone.
	CountEffectiveZones bool
}

// Node is an existing node, or an in-flight NodeClaim that has not registered yet, as the
// scheduler sees it.
type Node struct {
	// Name identifies the node (or the NodeClaim while it has no node).
	Name string
	// Labels of the node; for an in-flight claim, the labels its requirements pin.
	Labels map[string]string
	// Requirements of an in-flight claim (nil for a registered node: Labels say it all).
	Requirements *scheduling.Requirements
	// Taints of the node, without startup taints and Karpenter's own lifecycle taints.
	Taints []corev1.Taint
	// Available is allocatable less the requests of the pods bound or nominated to it
	// (including daemonsets).
	Available corev1.ResourceList
	// Pods are the pods bound or nominated to it, for topology and affinity counting.
	Pods []*corev1.Pod
	// HostPorts are host ports in use beyond those of Pods: the daemonset pods it will run.
	HostPorts []scheduling.HostPort
	// NodePool that created it, if any.
	NodePool string
	// InFlight marks a NodeClaim still launching.
	InFlight bool
	// prepared is what every solve derives from the fields above, computed once by Prepare;
	// copies of the Node share it.
	prepared *preparedNode
}

// NodePool is a NodePool with what the scheduler needs to create capacity from it.
type NodePool struct {
	// Name of the NodePool.
	Name string
	// Weight orders NodePools; higher is tried first, and among equal weights the name that
	// sorts last (as Karpenter's OrderByWeight).
	Weight int32
	// Requirements are the template's requirements and its labels (as In requirements).
	Requirements scheduling.Requirements
	// Labels are the template's labels, put on every node.
	Labels map[string]string
	// Taints are the template's taints (startup taints are not needed for placement).
	Taints []corev1.Taint
	// InstanceTypes the NodePool may launch.
	InstanceTypes []*cloudprovider.InstanceType
	// Remaining is what the NodePool's limits still allow (limits minus current usage), with a
	// "nodes" entry when limits.nodes is set. Nil means unlimited.
	Remaining corev1.ResourceList
}

// Results are the decisions of a scheduling run.
type Results struct {
	// ExistingPlacements place pods on existing nodes or in-flight claims.
	ExistingPlacements []Placement
	// NewClaims are the claims to create, each with the pods that will land on it.
	NewClaims []*Claim
	// PodErrors say, for each pod that could not be placed, why.
	PodErrors []PodError
	// PendingByEffectiveZone counts the run's pending pods (phase Pending) by the zone their
	// zonal constraints left before the run placed any: the zone, EffectiveZoneFlexible or
	// EffectiveZoneNone. Only with Options.CountEffectiveZones.
	PendingByEffectiveZone map[string]int
	// Refusals count how often each stage of the pipeline turned pods away, per NodePool
	// (existing nodes and in-flight claims first, under ""), in pipeline order; only stages
	// that refused.
	Refusals []Refusal
}

// Extract removes the pods match selects from the results and returns where they went: their
// placements, the new claims that hold any of them (each with only those pods, in the order of
// NewClaims) and their errors. A claim keeps its place in the results, with its other pods (or
// none), so the capacity the extracted pods asked for is still launched.
func (r *Results) Extract(match func(*corev1.Pod) bool) Results {
	var out Results
	r.ExistingPlacements, out.ExistingPlacements = partition(r.ExistingPlacements, func(pl Placement) bool { return match(pl.Pod) })
	for i, c := range r.NewClaims {
		kept, taken := partition(c.Pods, match)
		if len(taken) == 0 {
			continue
		}
		remaining, extracted := *c, *c
		remaining.Pods, extracted.Pods = kept, taken
		r.NewClaims[i] = &remaining
		out.NewClaims = append(out.NewClaims, &extracted)
	}
	r.PodErrors, out.PodErrors = partition(r.PodErrors, func(pe PodError) bool { return match(pe.Pod) })
	return out
}

// partition splits items into those taken does not select and those it does, each in order.
func partition[T any](items []T, taken func(T) bool) (kept, took []T) {
	for _, item := range items {
		if taken(item) {
			took = append(took, item)
		} else {
			kept = append(kept, item)
		}
	}
	return kept, took
}

// Placement binds a pod to an existing node or in-flight claim.
type Placement struct {
	// Pod placed.
	Pod *corev1.Pod
	// Node is the name of the node or in-flight claim.
	Node string
}

// PodError is why a pod could not be placed.
type PodError struct {
	// Pod that was not placed.
	Pod *corev1.Pod
	// Err explains, per NodePool, why none could take it.
	Err error
}

// Claim is new capacity to create: a NodeClaim for a NodePool, and the pods it is for.
type Claim struct {
	// NodePool creating the claim.
	NodePool string
	// Requirements of the claim: the NodePool's, narrowed by its pods' (zone, arch, …).
	Requirements scheduling.Requirements
	// InstanceTypes that satisfy the requirements and fit the pods and daemonsets, cheapest
	// compatible offering first.
	InstanceTypes []*cloudprovider.InstanceType
	// Pods that will land on the claim.
	Pods []*corev1.Pod
	// Requests of the pods plus the daemonset overhead.
	Requests corev1.ResourceList
	// Taints of the node (the NodePool's).
	Taints []corev1.Taint
	// Labels to put on the node (the NodePool's template labels).
	Labels map[string]string
	// Price is the cheapest compatible offering of the first instance type, $/hour.
	Price float64
	// Hostname is a placeholder name, unique in the run, that pods' hostname topology used.
	Hostname string
	// MinValuesRelaxed: with Options.MinValuesBestEffort, the minValues its instance types do
	// not meet were lowered in Requirements to what they do meet.
	MinValuesRelaxed bool
}

// MaxInstanceTypes is how many instance types a NodeClaim names at most, the cheapest first, as
// in Karpenter: enough to fall back on when offerings run out, short enough to keep the object
// small. A claim whose requirements have minValues keeps them all.
const MaxInstanceTypes = 60

// NodeSelectorRequirements returns the claim's requirements for its NodeClaim spec, with
// node.kubernetes.io/instance-type narrowed to its (at most MaxInstanceTypes cheapest) types.
func (c *Claim) NodeSelectorRequirements() []karpv1.NodeSelectorRequirementWithMinValues {
	types := c.InstanceTypes
	if len(types) > MaxInstanceTypes && !hasMinValues(c.Requirements) {
		types = types[:MaxInstanceTypes]
	}
	names := make([]string, len(types))
	for i, it := range types {
		names[i] = it.Name
	}
	reqs := c.Requirements
	if len(names) > 0 {
		r := scheduling.MustRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...)
		if existing, ok := reqs.Get(corev1.LabelInstanceTypeStable); ok {
			r.MinValues = existing.MinValues
		}
		reqs = reqs.With(r)
	}
	return reqs.NodeSelectorRequirements()
}

func hasMinValues(reqs scheduling.Requirements) bool {
	for _, r := range reqs.All() {
		if r.MinValues != nil {
			return true
		}
	}
	return false
}
