package scheduler

import (
	"fmt"
	"math"
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
	daemon         cloudprovider.Resources
	daemonExtended corev1.ResourceList
	remaining      corev1.ResourceList // nil: unlimited
	// candidates caches, per requirements, the compatible instance types cheapest first.
	candidates map[string][]*candidate
	// cpuPrice and memoryPrice ($ per millicore-hour and per byte-hour) value a pod's requests
	// at what the cheapest mix of instance types charges for them.
	cpuPrice, memoryPrice float64
	largestRoom           *cloudprovider.Resources
}

// candidate is an instance type as a claim under some requirements sees it.
type candidate struct {
	it *cloudprovider.InstanceType
	// room is allocatable less the daemonset overhead.
	room cloudprovider.Resources
	// price is the cheapest available offering the requirements allow.
	price float64
}

func newPoolState(np *NodePool) *poolState {
	ps := &poolState{
		NodePool:       np,
		daemon:         cloudprovider.ResourcesOf(np.DaemonOverhead),
		daemonExtended: extendedOf(np.DaemonOverhead),
		candidates:     map[string][]*candidate{},
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
	key := reqs.String()
	if cached, ok := ps.candidates[key]; ok {
		return cached
	}
	var out []*candidate
	for _, it := range ps.InstanceTypes {
		if !labelsCompatible(it, reqs) {
			continue
		}
		price, ok := cheapestOffering(it, reqs)
		if !ok {
			continue
		}
		out = append(out, &candidate{it: it, room: it.AllocatableResources().Sub(ps.daemon), price: price})
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
// zone, capacity type), which are checked elsewhere.
func labelsCompatible(it *cloudprovider.InstanceType, reqs scheduling.Requirements) bool {
	for _, r := range reqs.All() {
		if v, ok := it.Labels[r.Key]; ok {
			if !r.Has(v) {
				return false
			}
			continue
		}
		switch r.Key {
		case corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey, karpv1.NodePoolLabelKey, corev1.LabelHostname:
			continue
		}
		if scheduling.IsWellKnownLabel(r.Key) && !r.AllowsAbsent() {
			return false
		}
	}
	return true
}

// cheapestOffering is the lowest price of an available offering in an allowed zone and
// capacity type.
func cheapestOffering(it *cloudprovider.InstanceType, reqs scheduling.Requirements) (float64, bool) {
	zones, hasZones := reqs.Get(corev1.LabelTopologyZone)
	capacityTypes, hasCapacityTypes := reqs.Get(karpv1.CapacityTypeLabelKey)
	best, found := math.Inf(1), false
	for _, o := range it.Offerings {
		if !o.Available || (hasZones && !zones.Has(o.Zone)) || (hasCapacityTypes && !capacityTypes.Has(o.CapacityType)) {
			continue
		}
		if o.Price < best {
			best, found = o.Price, true
		}
	}
	return best, found
}

// withinLimits reports whether launching an instance type keeps the NodePool within its limits,
// given capacity already reserved for the claim being resized (released first).
func (ps *poolState) withinLimits(it *cloudprovider.InstanceType, released *cloudprovider.InstanceType) error {
	if ps.remaining == nil {
		return nil
	}
	for name, left := range ps.remaining {
		q := left.DeepCopy()
		if released != nil {
			q.Add(capacityOf(released, name))
		}
		need := capacityOf(it, name)
		if need.Cmp(q) > 0 {
			return fmt.Errorf("nodepool %s: limits exceeded: %s %s (room left %s)", ps.Name, name, need.String(), q.String())
		}
	}
	return nil
}

func capacityOf(it *cloudprovider.InstanceType, name corev1.ResourceName) resource.Quantity {
	if name == "nodes" {
		return *resource.NewQuantity(1, resource.DecimalSI)
	}
	return it.Capacity[name]
}

// reserve moves capacity between the limits and a claim: it takes `take` (if any) and gives
// back `give` (if any).
func (ps *poolState) reserve(take, give *cloudprovider.InstanceType) {
	if ps.remaining == nil {
		return
	}
	for name, left := range ps.remaining {
		if give != nil {
			left.Add(capacityOf(give, name))
		}
		if take != nil {
			left.Sub(capacityOf(take, name))
		}
		ps.remaining[name] = left
	}
}

// setMarketPrices sets the NodePool's per-resource prices: the prices c = (c_cpu, c_mem) ≥ 0
// that maximise the value c·D of the batch's total demand D while no instance type is worth more
// than it costs (c·room ≤ price). That is the dual of covering D with fractional instances. In
// the primal, a dollar spent on instance type t buys q_t = room_t/price_t; a dollar spread over
// two types buys any point between them; s* is the farthest multiple of D a dollar covers (waste
// allowed), and the value of D is 1/s*. A two-dimensional LP: the optimum uses one type or a
// mix of two, so trying every pair finds it exactly.
func (ps *poolState) setMarketPrices(demand cloudprovider.Resources) {
	type point struct{ x, y float64 } // millicores and bytes per dollar
	var pts []point
	for _, c := range ps.candidatesFor(ps.Requirements) {
		if c.price > 0 && c.room.MilliCPU > 0 && c.room.Memory > 0 {
			pts = append(pts, point{float64(c.room.MilliCPU) / c.price, float64(c.room.Memory) / c.price})
		}
	}
	if len(pts) == 0 {
		return
	}
	dx, dy := float64(demand.MilliCPU), float64(demand.Memory)
	if dx <= 0 && dy <= 0 {
		dx, dy = 1000, 2<<30 // no demand to weigh: a core and 2Gi
	}
	reach := func(x, y float64) float64 { // how many D a bundle (x, y) covers
		sx, sy := math.Inf(1), math.Inf(1)
		if dx > 0 {
			sx = x / dx
		}
		if dy > 0 {
			sy = y / dy
		}
		return math.Min(sx, sy)
	}
	best, bestA, bestB, pair := 0.0, 0, 0, false
	for i, a := range pts {
		if s := reach(a.x, a.y); s > best {
			best, bestA, pair = s, i, false
		}
		for j := i + 1; j < len(pts); j++ {
			b := pts[j]
			if dx <= 0 || dy <= 0 {
				continue // one dimension: a single type is optimal
			}
			// λ where λa + (1-λ)b covers D equally in both dimensions.
			den := (a.x-b.x)/dx - (a.y-b.y)/dy
			if den == 0 {
				continue
			}
			lambda := (b.y/dy - b.x/dx) / den
			if lambda <= 0 || lambda >= 1 {
				continue
			}
			if s := reach(lambda*a.x+(1-lambda)*b.x, lambda*a.y+(1-lambda)*b.y); s > best {
				best, bestA, bestB, pair = s, i, j, true
			}
		}
	}
	if best <= 0 {
		return
	}
	if pair {
		// The supporting line through both types: c·a = 1 and c·b = 1.
		a, b := pts[bestA], pts[bestB]
		det := a.x*b.y - a.y*b.x
		ps.cpuPrice, ps.memoryPrice = (b.y-a.y)/det, (a.x-b.x)/det
		return
	}
	a := pts[bestA]
	if dy <= 0 || (dx > 0 && a.x/dx <= a.y/dy) {
		ps.cpuPrice, ps.memoryPrice = 1/a.x, 0 // cpu binds
	} else {
		ps.cpuPrice, ps.memoryPrice = 0, 1/a.y // memory binds
	}
}

// value is what a pod's requests are worth at the NodePool's market prices, $/hour.
func (ps *poolState) value(r cloudprovider.Resources) float64 {
	return ps.cpuPrice*float64(r.MilliCPU) + ps.memoryPrice*float64(r.Memory)
}
