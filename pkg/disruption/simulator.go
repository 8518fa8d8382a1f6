package disruption

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/capacitybuffer"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// This file holds the what-if simulator every method that moves pods asks: would the
// candidates' pods schedule on the rest of the cluster and on what replacements, and is the
// command it makes cheaper.

// maxPodSchedulingErrors is how many pods' errors podSchedulingErrors names, as Karpenter.
const maxPodSchedulingErrors = 5

// podSchedulingErrors says which pods would not schedule elsewhere, as Karpenter's
// Unconsolidatable and DisruptionBlocked Events do: "Not all pods would schedule, ns/name =>
// error " for each of the first five, then " and N other(s)".
func podSchedulingErrors(errs []scheduler.PodError) string {
	var b strings.Builder
	b.WriteString("Not all pods would schedule, ")
	for i, pe := range errs {
		if i == maxPodSchedulingErrors {
			fmt.Fprintf(&b, " and %d other(s)", len(errs)-maxPodSchedulingErrors)
			break
		}
		fmt.Fprintf(&b, "%s/%s => %s ", pe.Pod.Namespace, pe.Pod.Name, pe.Err)
	}
	return b.String()
}

func sumPrices(cands []*Candidate) float64 {
	total := 0.0
	for _, c := range cands {
		total += c.Price
	}
	return total
}

// simulate removes cands and places their pods on the remaining nodes and at most maxClaims
// new ones (negative: any number), then judges the outcome (see command). It returns the
// command, or why there is none.
func (d *decider) simulate(method string, reason karpv1.DisruptionReason, cands []*Candidate, maxClaims int, consolidation bool) (*Command, string) {
	return d.command(method, reason, cands, maxClaims, consolidation, d.schedule(cands, maxClaims, consolidation))
}

// schedule places the pods of cands with cands removed, on the remaining nodes and new ones,
// trying for at most maxClaims new ones (negative: any number); with buffers, the
// CapacityBuffers' virtual pods too.
func (d *decider) schedule(cands []*Candidate, maxClaims int, buffers bool) *scheduler.Results {
	return d.sim.schedule(cands, maxClaims, buffers, 0)
}

// schedule is decider.schedule on one worker's PodInfos. When the pending pods and those of
// deleting nodes alone, with every node still there, need more than maxClaims new nodes
// (packed into the fewest), a what-if that also removes cands needs as many at least: that
// outcome (baseline) stands for it, so a scale-up's thousands of pending pods are placed once
// per decision, not once per candidate.
func (s *simulator) schedule(cands []*Candidate, maxClaims int, buffers bool, worker int) *scheduler.Results {
	if maxClaims >= 0 && s.extra != nil {
		if base := s.baseline(buffers, worker); len(base.NewClaims) > maxClaims {
			return base
		}
	}
	res := s.solve(cands, false, buffers, worker)
	if maxClaims >= 0 && len(res.NewClaims) > maxClaims {
		// The cost-aware packing may prefer several well-filled nodes; a consolidation wants
		// the fewest, so look again packing into as few new nodes as fit (the replacement is
		// still required to be strictly cheaper below).
		res = s.solve(cands, true, buffers, worker)
	}
	return res
}

// command judges a simulation's outcome res: every pod placed, on at most maxClaims new
// nodes. For consolidation, a replacement must be strictly cheaper than the candidates (and,
// for one node, of another instance type; for several, cheaper than any candidate of a type
// the replacement may launch as, else deleting fewer nodes is better), spot nodes follow
// Karpenter's spot-to-spot rules (see cheaperReplacement), and Balanced NodePools must find
// the move worth it. It returns the command, or why there is none.
func (d *decider) command(method string, reason karpv1.DisruptionReason, cands []*Candidate, maxClaims int, consolidation bool, res *scheduler.Results) (*Command, string) {
	if len(res.PodErrors) > 0 {
		return nil, podSchedulingErrors(res.PodErrors)
	}
	if maxClaims >= 0 && len(res.NewClaims) > maxClaims {
		return nil, fmt.Sprintf("Can't remove without creating %d candidates", len(res.NewClaims))
	}
	total := sumPrices(cands)
	cmd := &Command{Method: method, Reason: reason, Candidates: cands, Placements: res.ExistingPlacements}
	replacementCost := 0.0
	for _, claim := range res.NewClaims {
		np := d.pools[claim.NodePool]
		r := &Replacement{NodePool: np, Claim: claim, Price: claim.Price}
		if consolidation {
			var why string
			if r.Price, why = d.cheaperReplacement(claim, cands, total); why != "" {
				return nil, why
			}
		}
		replacementCost += r.Price
		cmd.Replacements = append(cmd.Replacements, r)
	}
	cmd.Savings = total - replacementCost
	if consolidation && !d.balancedAllows(cmd) {
		return nil, "not worth the disruption under the Balanced policy"
	}
	return cmd, ""
}

// cheaperReplacement narrows a consolidation's replacement claim to what Karpenter would
// launch, and returns its price, or why there is no replacement:
//   - when every candidate is spot and the replacement may be spot, it is spot-to-spot: refused
//     without Options.SpotToSpotConsolidation; with it, the claim is spot only, and for one
//     node it needs MinInstanceTypesForSpotToSpot cheaper types and offers only that many of the
//     cheapest (more if minValues needs them);
//   - otherwise a claim that may be spot or on-demand is made spot only, as priced: a launch
//     that fell back to on-demand would cost more than the nodes it replaces;
//   - the types must cost less than the candidates together; a single node's own offering is
//     left out, and for several nodes nothing may cost as much as a candidate whose type the
//     replacement could launch as (deleting fewer nodes would do).
func (d *decider) cheaperReplacement(claim *scheduler.Claim, cands []*Candidate, total float64) (float64, string) {
	for _, c := range cands {
		if c.Price <= 0 {
			return 0, fmt.Sprintf("price of node %s is unknown", c.Name())
		}
	}
	capacityTypes, constrained := claim.Requirements.Get(karpv1.CapacityTypeLabelKey)
	maySpot := !constrained || capacityTypes.Has(karpv1.CapacityTypeSpot)
	mayOnDemand := !constrained || capacityTypes.Has(karpv1.CapacityTypeOnDemand)
	allSpot := true
	for _, c := range cands {
		allSpot = allSpot && c.CapacityType == karpv1.CapacityTypeSpot
	}
	spotToSpot := allSpot && maySpot
	if spotToSpot && !d.opts.SpotToSpotConsolidation {
		return 0, spotToSpotDisabled
	}
	spotOnly := scheduling.MustRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot)
	if spotToSpot {
		claim.Requirements = claim.Requirements.With(spotOnly)
	}
	limit := total
	excludeType, excludeCapacityType := "", ""
	if len(cands) == 1 {
		excludeType, excludeCapacityType = cands[0].InstanceType, cands[0].CapacityType
	} else {
		offered := map[string]bool{}
		for _, it := range claim.InstanceTypes {
			offered[it.Name] = true
		}
		for _, c := range cands {
			if offered[c.InstanceType] && c.Price < limit {
				limit = c.Price
			}
		}
	}
	price, ok := cheaperTypes(claim, limit, func(name, capacityType string) bool {
		return name == excludeType && capacityType == excludeCapacityType
	})
	if !ok {
		return 0, noCheaperNode
	}
	switch {
	case spotToSpot && len(cands) == 1:
		if n := len(claim.InstanceTypes); n < MinInstanceTypesForSpotToSpot {
			return 0, fmt.Sprintf("SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d", MinInstanceTypesForSpotToSpot, n)
		}
		claim.InstanceTypes = claim.InstanceTypes[:max(MinInstanceTypesForSpotToSpot, cloudprovider.MinValuesPrefix(claim.Requirements, claim.InstanceTypes))]
	case !spotToSpot && maySpot && mayOnDemand:
		claim.Requirements = claim.Requirements.With(spotOnly)
	}
	return price, ""
}

// cheaperTypes narrows a claim's instance types to those whose cheapest allowed offering costs
// less than limit and returns the cheapest price left; it fails when those are too few for a
// minValues of the claim's requirements, as Karpenter's consolidation does. Types whose
// cheapest allowed offering is excluded (by type name and capacity type) are dropped too:
// replacing a node with its own offering again would be churn, but an on-demand node may become
// the same type on spot. The types left are sorted cheapest first.
func cheaperTypes(claim *scheduler.Claim, limit float64, exclude func(name, capacityType string) bool) (float64, bool) {
	type priced struct {
		it    *cloudprovider.InstanceType
		price float64
	}
	var kept []priced
	for _, it := range claim.InstanceTypes {
		o, ok := it.CheapestOffering(claim.Requirements)
		if !ok || o.Price >= limit || exclude(it.Name, o.CapacityType) {
			continue
		}
		kept = append(kept, priced{it, o.Price})
	}
	if len(kept) == 0 {
		return 0, false
	}
	its := make([]*cloudprovider.InstanceType, len(kept))
	for i, k := range kept {
		its[i] = k.it
	}
	if len(cloudprovider.UnmetMinValues(claim.Requirements, its)) > 0 {
		return 0, false // the cheaper types are too few for the claim's minValues
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].price < kept[j].price })
	claim.InstanceTypes = claim.InstanceTypes[:0]
	for _, k := range kept {
		claim.InstanceTypes = append(claim.InstanceTypes, k.it)
	}
	claim.Price = kept[0].price
	return claim.Price, true
}

// balancedAllows applies the Balanced policy, as Karpenter v1.15.0's EvaluateBalancedMove
// (pkg/controllers/disruption/balanced.go): each Balanced NodePool among the candidates' must
// save a share of its cost at least BalancedThreshold times the share of its reschedule cost
// the move disrupts (its candidates' RescheduleCost over its nodes'); a move from several
// NodePools credits each with the savings in proportion to the price of its candidates.
//
// As Karpenter, every consolidation move evaluated is noted per NodePool of its candidates
// (Decision.Moves), approved or rejected, with its score on Balanced NodePools.
func (d *decider) balancedAllows(cmd *Command) bool {
	pools := map[string]*karpv1.NodePool{}
	sourceCost, poolSource, poolMoved := 0.0, map[string]float64{}, map[string]float64{}
	for _, c := range cmd.Candidates {
		pools[c.NodePool.Name] = c.NodePool
		sourceCost += c.Price
		poolSource[c.NodePool.Name] += c.Price
		poolMoved[c.NodePool.Name] += c.RescheduleCost
	}
	allowed := true
	scores := map[string]Move{}
	for name, np := range pools {
		if np.Spec.Disruption.ConsolidationPolicy != karpv1.ConsolidationPolicyBalanced {
			continue
		}
		savings := cmd.Savings
		if len(pools) > 1 && sourceCost > 0 {
			savings *= poolSource[name] / sourceCost
		}
		m := Move{NodePool: name, Policy: np.Spec.Disruption.ConsolidationPolicy}
		if cost, rc := d.poolCost[name], d.poolRescheduleCost[name]; cost > 0 && rc > 0 {
			m.SavingsShare, m.DisruptionShare = savings/cost, poolMoved[name]/rc
			m.Score = m.SavingsShare / m.DisruptionShare
		}
		scores[name] = m
		allowed = allowed && m.Score >= BalancedThreshold
	}
	cmd.Scores = nil
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		m := Move{NodePool: name, Policy: pools[name].Spec.Disruption.ConsolidationPolicy, Approved: allowed, Score: -1}
		if scored, ok := scores[name]; ok {
			m.Score, m.SavingsShare, m.DisruptionShare = scored.Score, scored.SavingsShare, scored.DisruptionShare
			cmd.Scores = append(cmd.Scores, m)
		}
		d.moves = append(d.moves, m)
	}
	return allowed
}

// simulator runs the provisioning scheduler for what-if questions: the cluster less some
// nodes, their pods to place.
type simulator struct {
	// targets are the nodes pods may move to: initialized ones first, then those launching
	// (see launching).
	targets []*scheduler.Node
	// launching names, by target, the targets not initialized yet, as Karpenter's
	// UninitializedNodeError does ("nodeclaim/x, node/y"): a what-if whose candidates' pods
	// need one of them proves nothing yet, as in Karpenter; pending pods and the pods of
	// deleting nodes may go there.
	launching map[string]string
	// pending are Input.Pending; deleting are the pods on nodes being deleted that will need a
	// place (Karpenter's CurrentlyReschedulablePods of the deleting nodes: reschedulable, not
	// do-not-disrupt, not held by a fully blocking PodDisruptionBudget). Every what-if places
	// both; errors of pending pods are ignored, those of deleting pods count.
	pending, deleting []*corev1.Pod
	// extra marks the pods of pending and deleting, with whether the pod is pending; nil when
	// there are none.
	extra map[types.UID]bool
	// base are the baseline outcomes, without and with buffers, each made once.
	base     [2]*scheduler.Results
	baseOnce [2]sync.Once
	// pools are the ready NodePools whose instance types were listed (not static, not being
	// deleted: state.LaunchableInstanceTypes), each with what its limits allow with every node
	// in place.
	pools []*scheduler.NodePool
	// capacity is what each node of a limited NodePool counts against its limits, by node name.
	capacity map[string]corev1.ResourceList
	volumes  map[types.UID]scheduling.Requirements
	daemons  []*corev1.Pod // what the daemonsets would run on a new node
	// namespaces are Input.NamespaceLabels.
	namespaces map[string]map[string]string
	buffer     []*corev1.Pod // the CapacityBuffers' virtual pods
	// infos keeps what the what-ifs derive from each pod: a decision solves the same pods
	// once per candidate tried, and the next decision mostly the same pods again. One per
	// worker (whatIfWorkers): the second is made on first use when the input has none.
	infos [whatIfWorkers]*scheduler.PodInfos
}

func newSimulator(in Input, pools map[string]*karpv1.NodePool, pdbs *state.PDBIndex) *simulator {
	s := &simulator{volumes: in.VolumeRequirements,
		infos: [whatIfWorkers]*scheduler.PodInfos{in.PodInfos, in.SecondPodInfos}, launching: map[string]string{}, pending: in.Pending}
	if s.infos[0] == nil {
		s.infos[0] = scheduler.NewPodInfos()
	}
	s.daemons = state.DaemonPods(in.DaemonSets)
	s.namespaces = in.NamespaceLabels
	s.buffer = in.BufferPods
	var ready []*karpv1.NodePool
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		if np := pools[name]; nodepool.IsReady(np) {
			ready = append(ready, np)
		}
	}
	s.pools, s.capacity, _ = state.SchedulerNodePools(ready, in.InstanceTypes, in.Nodes)
	var launching []*scheduler.Node
	for _, sn := range in.Nodes {
		if sn.MarkedForDeletion {
			s.deleting = append(s.deleting, sn.ReschedulablePods(pdbs, in.Now)...)
			continue
		}
		if sn.Node != nil && sn.Node.Spec.Unschedulable {
			continue // cordoned
		}
		target := sn.SchedulerNode()
		// Every what-if solves these nodes: derive their room and ports once.
		target.Prepare()
		if sn.Node == nil || !sn.Initialized() {
			var what []string
			if sn.NodeClaim != nil {
				what = append(what, "nodeclaim/"+sn.NodeClaim.Name)
			}
			if sn.Node != nil {
				what = append(what, "node/"+sn.Node.Name)
			}
			s.launching[target.Name] = strings.Join(what, ", ")
			launching = append(launching, target)
			continue
		}
		s.targets = append(s.targets, target)
	}
	s.targets = append(s.targets, launching...)
	if len(s.pending)+len(s.deleting) > 0 {
		s.extra = make(map[types.UID]bool, len(s.pending)+len(s.deleting))
		for _, pod := range s.deleting {
			s.extra[pod.UID] = false
		}
		for _, pod := range s.pending {
			s.extra[pod.UID] = true
		}
	}
	return s
}

// baseline places the pending pods and those of deleting nodes (and with buffers, the
// buffers' virtual pods) on the cluster as it is, into the fewest new nodes, once per decision
// and buffers. Its outcome is shared: it must not be changed.
func (s *simulator) baseline(buffers bool, worker int) *scheduler.Results {
	i := 0
	if buffers {
		i = 1
	}
	s.baseOnce[i].Do(func() { s.base[i] = s.solve(nil, true, buffers, worker) })
	return s.base[i]
}

// uninitializedError is Karpenter's UninitializedNodeError: a candidate's pod would go to a
// node that has not initialized.
type uninitializedError string

func (e uninitializedError) Error() string {
	return "would schedule against uninitialized " + string(e)
}

// solve places the pods of cands with cands removed. fewestNodes packs as Karpenter does, into
// as few new nodes as fit. With buffers, the buffers' virtual pods are placed too, after the
// others; they are taken out of the results (where they went shows as replacements). Solves
// of different workers (below whatIfWorkers) may run at once: they share only what no solve
// changes.
func (s *simulator) solve(cands []*Candidate, fewestNodes, buffers bool, worker int) *scheduler.Results {
	if s.infos[worker] == nil {
		s.infos[worker] = scheduler.NewPodInfos()
	}
	removed := make(map[string]bool, len(cands))
	var pods []*corev1.Pod
	for _, c := range cands {
		removed[c.Name()] = true
		pods = append(pods, c.Pods...)
	}
	pods = append(pods, s.pending...)
	pods = append(pods, s.deleting...)
	if buffers {
		pods = append(pods, s.buffer...)
	}
	in := scheduler.Input{Pods: pods, Nodes: make([]*scheduler.Node, 0, len(s.targets)), VolumeRequirements: s.volumes, DaemonPods: s.daemons, Options: scheduler.Options{GrowClaims: fewestNodes},
		Infos: s.infos[worker], NamespaceLabels: s.namespaces}
	for _, n := range s.targets {
		if !removed[n.Name] {
			copied := *n // the scheduler reassigns a node's Pods; keep ours intact
			in.Nodes = append(in.Nodes, &copied)
		}
	}
	for _, p := range s.pools {
		pool := *p
		pool.Remaining = s.remaining(p, cands)
		in.NodePools = append(in.NodePools, &pool)
	}
	res := scheduler.Solve(in)
	if buffers {
		capacitybuffer.Split(res)
	}
	s.judgeExtra(res)
	return res
}

// judgeExtra leaves in res what the candidates' pods need, as Karpenter judges its
// SimulateScheduling: the errors of pending pods are dropped (they blocked nothing before
// and need not schedule now), a candidate's pod placed on a launching node is an error
// (uninitializedError), and only the candidates' pods are kept among the placements. New
// claims keep every pod they are for.
func (s *simulator) judgeExtra(res *scheduler.Results) {
	if len(s.launching) == 0 && s.extra == nil {
		return
	}
	placements := res.ExistingPlacements[:0]
	for _, pl := range res.ExistingPlacements {
		if _, extra := s.extra[pl.Pod.UID]; extra {
			continue
		}
		if what, ok := s.launching[pl.Node]; ok {
			res.PodErrors = append(res.PodErrors, scheduler.PodError{Pod: pl.Pod, Err: uninitializedError(what)})
			continue
		}
		placements = append(placements, pl)
	}
	res.ExistingPlacements = placements
	errs := res.PodErrors[:0]
	for _, pe := range res.PodErrors {
		if pending := s.extra[pe.Pod.UID]; !pending {
			errs = append(errs, pe)
		}
	}
	res.PodErrors = errs
}

// remaining is what a NodePool's limits allow once cands are gone: each candidate of it gives
// back what it counts against them. Nil for a NodePool without limits.
func (s *simulator) remaining(pool *scheduler.NodePool, cands []*Candidate) corev1.ResourceList {
	if pool.Remaining == nil {
		return nil
	}
	out := pool.Remaining
	copied := false
	for _, c := range cands {
		if c.NodePool.Name != pool.Name {
			continue
		}
		if !copied {
			out, copied = out.DeepCopy(), true
		}
		for name, q := range s.capacity[c.Name()] {
			if left, limited := out[name]; limited {
				left.Add(q)
				out[name] = left
			}
		}
	}
	return out
}
