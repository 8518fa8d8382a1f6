package scheduler

import (
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// poolState is a NodePool during a run: its instance types prepared for fast checks, what its
// limits still allow, and the market prices that value pods on it.
type poolState struct {
	*NodePool
	// daemons is what the daemonsets take on a node, per instance type.
	daemons   map[*cloudprovider.InstanceType]*daemonLoad
	remaining corev1.ResourceList // nil: unlimited
	// candidates caches, per requirements, the compatible instance types cheapest first.
	candidates map[string][]*candidate
	// domainValues caches creatableValues per topology key and requirements.
	domainValues map[domainKey][]string
	// values caches value() per request vector.
	values      map[scheduling.Resources]float64
	largestRoom *scheduling.Resources
	// ledger counts the run's capacity reservation slots (nil without reservations): a
	// reservation with none left is not offered to claims that do not hold one.
	ledger *ledger
	// refused counts the refusals of the NodePool's claims in the run, by stage.
	refused [numStages]int
}

// candidate is an instance type as a claim under some requirements sees it.
type candidate struct {
	it *cloudprovider.InstanceType
	// room is allocatable less the daemonset overhead.
	room scheduling.Resources
	// daemon is what the daemonsets take on a node of this type.
	daemon *daemonLoad
	// price is the cheapest available offering the requirements allow.
	price float64
}

func newPoolState(np *NodePool, daemonPods []*corev1.Pod) *poolState {
	ps := &poolState{
		NodePool:     np,
		daemons:      daemonLoads(np, daemonPods),
		candidates:   map[string][]*candidate{},
		values:       map[scheduling.Resources]float64{},
		domainValues: map[domainKey][]string{},
	}
	if np.Remaining != nil {
		ps.remaining = np.Remaining.DeepCopy()
	}
	return ps
}

func extendedOf(rl corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
		default:
			out[name] = q
		}
	}
	return out
}

// candidatesFor returns the instance types compatible with reqs (labels, and an available
// offering in an allowed zone and capacity type), cheapest first, ties by name.
func (ps *poolState) candidatesFor(reqs scheduling.Requirements) []*candidate {
	key := reqs.Fingerprint()
	if cached, ok := ps.candidates[key]; ok {
		return cached
	}
	var out []*candidate
	for _, it := range ps.InstanceTypes {
		if !labelsCompatible(it, reqs) {
			continue
		}
		o, ok := ps.ledger.cheapest(it, reqs)
		if !ok {
			continue
		}
		price := o.Price
		daemon := ps.daemons[it]
		out = append(out, &candidate{it: it, room: it.AllocatableResources().Sub(daemon.res), daemon: daemon, price: price})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].price != out[j].price {
			return out[i].price < out[j].price
		}
		return out[i].it.Name < out[j].it.Name
	})
	ps.candidates[key] = out
	return out
}

// labelsCompatible checks an instance type's labels against requirements. Labels the type
// lacks must be allowed to be absent, unless they are not instance-type facts (NodePool labels,
// and the offering keys: zone, capacity type, reservation, placement group partition), which
// are checked elsewhere, or are chosen at launch (the tenancy), which must allow one of their
// values.
func labelsCompatible(it *cloudprovider.InstanceType, reqs scheduling.Requirements) bool {
	for _, r := range reqs.All() {
		if v, ok := it.Labels[r.Key]; ok {
			if !r.Has(v) {
				return false
			}
			continue
		}
		if values, ok := scheduling.LaunchChoices(r.Key); ok {
			if !slices.ContainsFunc(values, r.Has) {
				return false
			}
			continue
		}
		if cloudprovider.IsOfferingKey(r.Key) || r.Key == karpv1.NodePoolLabelKey || r.Key == corev1.LabelHostname {
			continue
		}
		if scheduling.IsWellKnownLabel(r.Key) && !r.AllowsAbsent() {
			return false
		}
	}
	return true
}

// forgetPrices drops what the NodePool cached from its offerings' prices and availability, once
// a capacity reservation has no slot left to offer.
func (ps *poolState) forgetPrices() {
	clear(ps.candidates)
	clear(ps.values)
	clear(ps.domainValues)
	ps.largestRoom = nil
}

// withinLimits reports whether launching an instance type keeps the NodePool within what its
// limits have left.
func (ps *poolState) withinLimits(it *cloudprovider.InstanceType) error {
	for name, left := range ps.remaining {
		if need := capacityOf(it, name); need.Cmp(left) > 0 {
			// Karpenter's words first, then which limit.
			if name == resourceNodes {
				return fmt.Errorf("node limits have been exhausted for nodepool (NodePool=%s): %s left under spec.limits", ps.Name, left.String())
			}
			return fmt.Errorf("all available instance types exceed limits for nodepool (NodePool=%s): %s %s of a %s, %s left under spec.limits",
				ps.Name, name, need.String(), it.Name, left.String())
		}
	}
	return nil
}

// resourceNodes is the limits' count of nodes.
const resourceNodes corev1.ResourceName = "nodes"

func capacityOf(it *cloudprovider.InstanceType, name corev1.ResourceName) resource.Quantity {
	if name == resourceNodes {
		return *resource.NewQuantity(1, resource.DecimalSI)
	}
	return it.Capacity[name]
}

// launchable is the instance types a claim of these requirements and pods could launch as:
// those with room for the pods beside their daemonsets and within the NodePool's limits.
func (ps *poolState) launchable(reqs scheduling.Requirements, used scheduling.Resources, extended corev1.ResourceList, ports []scheduling.HostPort) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, cand := range ps.candidatesFor(reqs) {
		if cand.admits(used, extended, ports) == nil && ps.withinLimits(cand.it) == nil {
			out = append(out, cand.it)
		}
	}
	return out
}

// charge is what a new claim that may launch as any of its instance types holds of the
// NodePool's limits: per limited resource, the most any of them has (Karpenter's
// subtractMax), and one node. A claim charged so never takes the NodePool over its limits
// whichever type launches. It is nil when the NodePool has no limits.
func (ps *poolState) charge(its []*cloudprovider.InstanceType) corev1.ResourceList {
	if ps.remaining == nil {
		return nil
	}
	charged := corev1.ResourceList{}
	for name := range ps.remaining {
		var most resource.Quantity
		for _, it := range its {
			if q := capacityOf(it, name); q.Cmp(most) > 0 {
				most = q
			}
		}
		charged[name] = most
	}
	return charged
}

// take subtracts a claim's charge from what the NodePool's limits have left.
func (ps *poolState) take(charged corev1.ResourceList) {
	for name, q := range charged {
		left := ps.remaining[name]
		left.Sub(q)
		ps.remaining[name] = left
	}
}

// refund gives a claim's charge back to the NodePool's limits.
func (ps *poolState) refund(charged corev1.ResourceList) {
	for name, q := range charged {
		left := ps.remaining[name]
		left.Add(q)
		ps.remaining[name] = left
	}
}

// value is what a pod's requests are worth, $/hour: their standalone fractional cost, the
// least any instance type charges for the share of it they take (their largest share across
// cpu, memory and pod slots). A node's fill is worth the sum of its pods' values, so a fill
// that mixes complementary pods is worth more than its price would suggest: packing by value
// per dollar rewards exactly that.
func (ps *poolState) value(r scheduling.Resources) float64 {
	if v, ok := ps.values[r]; ok {
		return v
	}
	best := math.Inf(1)
	for _, c := range ps.candidatesFor(ps.Requirements) {
		share := 0.0
		for _, d := range [][2]int64{{r.MilliCPU, c.room.MilliCPU}, {r.Memory, c.room.Memory}, {r.Pods, c.room.Pods}, {r.EphemeralStorage, c.room.EphemeralStorage}} {
			if d[0] <= 0 {
				continue
			}
			if d[1] <= 0 {
				share = math.Inf(1)
				break
			}
			share = math.Max(share, float64(d[0])/float64(d[1]))
		}
		if share <= 1 {
			best = math.Min(best, share*c.price)
		}
	}
	if math.IsInf(best, 1) {
		best = 0
	}
	ps.values[r] = best
	return best
}

// CompatibleInstanceTypes returns the NodePool's instance types its own requirements allow
// (labels, and an available offering in an allowed zone and capacity type), cheapest first, and
// an error when they are too few to meet the requirements' minValues (never with
// minValuesBestEffort). It is Karpenter's check, before any pod is considered, that a NodePool
// can launch anything at all.
func CompatibleInstanceTypes(np *NodePool, minValuesBestEffort bool) ([]*cloudprovider.InstanceType, error) {
	candidates := newPoolState(np, nil).candidatesFor(np.Requirements)
	its := make([]*cloudprovider.InstanceType, len(candidates))
	for i, c := range candidates {
		its[i] = c.it
	}
	return its, minValuesMet(np.Requirements, candidates, func(*candidate) bool { return true }, minValuesBestEffort)
}
