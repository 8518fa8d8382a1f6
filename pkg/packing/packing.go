package packing

import (
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduler/lowerbound"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Pool is one NodePool's share of the fleet: its nodes' cost now and the pods on them.
type Pool struct {
	// NodePool is the NodePool as the scheduler sees it, with the instance types it may launch.
	// Remaining (limits) is ignored: a re-pack from scratch needs no more than the fleet has.
	NodePool *scheduler.NodePool
	// Pods are the pods that run on the NodePool's nodes and would move with them: not
	// daemonset or static pods, not terminal.
	Pods []*corev1.Pod
	// Current is what the NodePool's nodes cost now, $/hour.
	Current float64
	// Nodes counts the NodePool's nodes now.
	Nodes int
}

// Input is the fleet to re-pack.
type Input struct {
	// Pools are the NodePools with nodes, in the order to report them.
	Pools []Pool
	// DaemonPods are the pods the DaemonSets would run on a new node (state.DaemonPods).
	DaemonPods []*corev1.Pod
	// PodInfos, when set, keeps what the re-packs derive from each pod for the next ones.
	PodInfos *scheduler.PodInfos
}

// PoolResult is one NodePool re-packed.
type PoolResult struct {
	// NodePool is the NodePool's name.
	NodePool string
	// Nodes and Current are the NodePool's nodes now and what they cost, $/hour.
	Nodes   int
	Current float64
	// Repacked is what the scheduler's packing of the pods onto new nodes of the NodePool
	// costs, $/hour, and RepackedNodes how many nodes it takes.
	Repacked      float64
	RepackedNodes int
	// Bound is the LP lower bound of packing the pods on the NodePool's instance types: no
	// packing costs less.
	Bound float64
	// Unplaced counts the pods the from-scratch packing could not place (a constraint only
	// the nodes they run on meet); they count in neither Repacked nor Bound.
	Unplaced int
}

// Ratio is Current over Bound: 1 is a fleet that costs what the bound says the pods need;
// 0 when the bound is zero (no pods, or no price).
func (p PoolResult) Ratio() float64 { return ratio(p.Current, p.Bound) }

// RepackRatio is Current over Repacked; 0 when Repacked is zero.
func (p PoolResult) RepackRatio() float64 { return ratio(p.Current, p.Repacked) }

// Result is the fleet re-packed, per NodePool and in total.
type Result struct {
	// Pools are the NodePools, in the Input's order.
	Pools []PoolResult
	// Nodes, Current, Repacked, RepackedNodes, Bound and Unplaced sum the Pools'.
	Nodes, RepackedNodes, Unplaced int
	Current, Repacked, Bound       float64
}

// Ratio is the fleet's packing ratio: Current over Bound (0 when the bound is zero). It is at
// least 1 but for pods the re-pack could not place (or whose NodePool nodes cost nothing).
func (r *Result) Ratio() float64 { return ratio(r.Current, r.Bound) }

// RepackRatio is Current over Repacked: how much cheaper a real packing from scratch would be
// (0 when Repacked is zero).
func (r *Result) RepackRatio() float64 { return ratio(r.Current, r.Repacked) }

// Pool returns the result of the named NodePool, and false when it has none.
func (r *Result) Pool(name string) (PoolResult, bool) {
	for _, p := range r.Pools {
		if p.NodePool == name {
			return p, true
		}
	}
	return PoolResult{}, false
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// Compute re-packs every NodePool's pods from scratch: once with the provisioning scheduler
// (its default, cost-aware packing) onto new nodes of that NodePool only, and once as the LP
// lower bound (package lowerbound) over the NodePool's instance types, each at its cheapest
// allowed offering outside capacity reservations, with capacity net of the kubelet's overhead and of the daemonsets that run
// on every node of the NodePool. The bound counts CPU, memory and pod slots only, and none of
// the pods' placement constraints: it stays a bound, only a looser one. Compute is
// deterministic and does not modify its input.
func Compute(in Input) *Result {
	out := &Result{Pools: make([]PoolResult, 0, len(in.Pools))}
	for _, p := range in.Pools {
		pr := PoolResult{NodePool: p.NodePool.Name, Nodes: p.Nodes, Current: p.Current}
		if len(p.Pods) > 0 {
			pool := *p.NodePool
			pool.Remaining = nil
			res := scheduler.Solve(scheduler.Input{Pods: p.Pods, NodePools: []*scheduler.NodePool{&pool}, DaemonPods: in.DaemonPods, Infos: in.PodInfos})
			unplaced := map[*corev1.Pod]bool{}
			for _, pe := range res.PodErrors {
				unplaced[pe.Pod] = true
			}
			pr.Unplaced = len(unplaced)
			for _, c := range res.NewClaims {
				pr.Repacked += c.Price
			}
			pr.RepackedNodes = len(res.NewClaims)
			placed := p.Pods
			if len(unplaced) > 0 {
				placed = make([]*corev1.Pod, 0, len(p.Pods)-len(unplaced))
				for _, pod := range p.Pods {
					if !unplaced[pod] {
						placed = append(placed, pod)
					}
				}
			}
			pr.Bound = Bound(&pool, placed, in.DaemonPods)
		}
		out.Pools = append(out.Pools, pr)
		out.Nodes += pr.Nodes
		out.Current += pr.Current
		out.Repacked += pr.Repacked
		out.RepackedNodes += pr.RepackedNodes
		out.Bound += pr.Bound
		out.Unplaced += pr.Unplaced
	}
	return out
}

// Bound is the LP lower bound, $/hour, of packing pods onto new nodes of the NodePool (see
// Compute). Pods that fit none of its instance types are left out; zero when none fits.
func Bound(np *scheduler.NodePool, pods []*corev1.Pod, daemonPods []*corev1.Pod) float64 {
	overhead := everywhereDaemons(np, daemonPods)
	its, _ := scheduler.CompatibleInstanceTypes(np, true)
	type lpType struct {
		name  string
		room  scheduling.Resources
		price float64
	}
	var types []lpType
	// Reserved offerings are left out: a reservation has only so many slots, which the LP
	// would take as unlimited at the reservation's near-zero price (Karpenter's 1/10,000,000
	// of on-demand), making the bound nearly nothing and every reserved fleet look unpacked.
	allowed := cloudprovider.NewOfferingFilter(np.Requirements)
	for _, it := range its {
		o, ok := it.Offerings.CheapestWhere(func(o cloudprovider.Offering) bool { return o.Available && !o.Reserved() && allowed.Allows(o) })
		if !ok {
			continue
		}
		room := it.AllocatableResources().Sub(overhead)
		if room.MilliCPU <= 0 || room.Memory <= 0 || room.Pods <= 0 {
			continue
		}
		types = append(types, lpType{it.Name, room, o.Price})
	}
	if len(types) == 0 {
		return 0
	}
	// CPU, memory and pod slots: a pod's ephemeral storage is not counted.
	counts := map[scheduling.Resources]int{}
	for _, pod := range pods {
		r := scheduling.ResourcesOf(scheduling.PodRequests(pod))
		r.Pods, r.EphemeralStorage = 1, 0
		counts[r]++
	}
	type lpShape struct {
		name string
		r    scheduling.Resources
		n    int
	}
	var shapes []lpShape
	for r, n := range counts {
		if slices.ContainsFunc(types, func(t lpType) bool {
			return r.MilliCPU <= t.room.MilliCPU && r.Memory <= t.room.Memory && r.Pods <= t.room.Pods
		}) {
			shapes = append(shapes, lpShape{fmt.Sprintf("%d/%d", r.MilliCPU, r.Memory), r, n})
		}
	}
	if len(shapes) == 0 {
		return 0
	}
	sort.Slice(shapes, func(i, j int) bool { return shapes[i].name < shapes[j].name })
	model := lowerbound.NewModel(1, 0)
	for _, sh := range shapes {
		model.AddShape(sh.name, 0, sh.r, nil, sh.n)
	}
	for _, t := range types {
		model.AddType(t.name, 0, t.room, nil, t.price)
	}
	sol, err := model.Solve()
	if err != nil || math.IsNaN(sol.Cost) {
		return 0
	}
	return sol.Cost
}

// everywhereDaemons sums the requests (and one pod slot each) of the daemon pods that run on
// every node of the NodePool: those that tolerate its taints and select no node. Daemons that
// select some nodes are left out, which keeps the bound a bound.
func everywhereDaemons(np *scheduler.NodePool, daemonPods []*corev1.Pod) scheduling.Resources {
	var total scheduling.Resources
	for _, pod := range daemonPods {
		terms := scheduling.DaemonTerms(&pod.Spec, np.Taints)
		if len(terms) != 1 || terms[0].Len() > 0 {
			continue
		}
		r := scheduling.ResourcesOf(scheduling.PodRequests(pod))
		r.Pods, r.EphemeralStorage = 1, 0
		total = total.Add(r)
	}
	return total
}
