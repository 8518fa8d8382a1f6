package disruption

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/packing"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// MethodRepack is re-pack consolidation, ours (Karpenter has none): it runs when Karpenter's
// consolidation methods found nothing, and replaces the NodePool's most wasteful nodes by
// fewer, cheaper ones, towards a packing of its pods from scratch. Its commands are of reason
// Underutilized and count as multi-node consolidation in Karpenter's metrics.
const MethodRepack = "repack consolidation"

// The thresholds of re-pack consolidation.
const (
	// RepackThreshold is the least packing ratio of a NodePool (its $/hour over the lower
	// bound of its pods packed from scratch, packing.PoolResult.Ratio) at which re-pack
	// consolidation acts on it: within it, the fleet is as good as the bound lets a packing of
	// whole nodes be, give or take.
	RepackThreshold = 1.10
	// RepackMinSavingsShare is the least share of the replaced nodes' $/hour a re-pack
	// command must save: moving pods for a few cents is not worth their disruption. Each
	// command saving at least this much, the fleet's cost only falls, so re-packs cannot
	// oscillate.
	RepackMinSavingsShare = 0.10
	// DefaultPackingInterval is how often the controller re-packs the fleet (Options.PackingInterval).
	DefaultPackingInterval = time.Minute
)

// PackingOf re-packs the fleet of in from scratch (see package packing): for each dynamic
// NodePool that is ready and has nodes, the pods of its registered nodes, and the prices of
// those not being deleted (their pods are moving to the others). Nodes still launching count
// in neither.
func PackingOf(in Input) *packing.Result {
	pools := map[string]*karpv1.NodePool{}
	var names []string
	for _, np := range in.NodePools {
		if np.DeletionTimestamp == nil && !nodepool.IsStatic(np) && nodepool.IsReady(np) {
			pools[np.Name] = np
			names = append(names, np.Name)
		}
	}
	sort.Strings(names)
	byPool := map[string]*packing.Pool{}
	for _, sn := range in.Nodes {
		if sn.NodeClaim == nil || sn.Node == nil {
			continue
		}
		np := pools[sn.NodePool()]
		if np == nil {
			continue
		}
		p := byPool[np.Name]
		if p == nil {
			sp, err := state.SchedulerNodePool(np, in.InstanceTypes[np.Name])
			if err != nil {
				continue
			}
			p = &packing.Pool{NodePool: sp}
			byPool[np.Name] = p
		}
		for _, pod := range sn.Pods {
			if state.IsReschedulable(pod) {
				p.Pods = append(p.Pods, pod)
			}
		}
		if sn.MarkedForDeletion {
			continue // its pods are moving to the rest of the fleet
		}
		p.Nodes++
		p.Current += NodePrice(sn, in.InstanceTypes[np.Name])
	}
	pin := packing.Input{DaemonPods: state.DaemonPods(in.DaemonSets), PodInfos: in.PodInfos}
	for _, name := range names {
		if p := byPool[name]; p != nil {
			pin.Pools = append(pin.Pools, *p)
		}
	}
	return packing.Compute(pin)
}

// repackWorth reports whether re-pack consolidation may act on the NodePool: its nodes cost
// at least RepackThreshold times the lower bound of its pods packed from scratch, and the
// from-scratch packing placed them all (else the bound leaves some out).
func repackWorth(p packing.PoolResult) bool {
	return p.Bound > 0 && p.Unplaced == 0 && p.Current >= RepackThreshold*p.Bound
}

// repack is re-pack consolidation (MethodRepack): with Input.Packing, for the NodePools worth
// re-packing (repackWorth), it takes their underutilized candidates within budgets, the most
// wasteful first (the $/hour of their unrequested room), and tries replacing the largest set
// it can of them by new nodes (and room on the others) that cost at least
// RepackMinSavingsShare less, never more new nodes than it removes, never of a candidate's
// instance type and capacity type (see repackCommand). As multi-node consolidation, it stops
// at MultiNodeConsolidationTimeout.
func (d *decider) repack() *Command {
	if d.in.Packing == nil || !d.opts.Repack {
		return nil
	}
	worth := map[string]bool{}
	for _, p := range d.in.Packing.Pools {
		if pool := d.pools[p.NodePool]; pool != nil && underutilizedPolicy(pool) && repackWorth(p) {
			worth[p.NodePool] = true
		}
	}
	if len(worth) == 0 {
		return nil
	}
	var cands []*Candidate
	for _, c := range d.underutilized() {
		if worth[c.NodePool.Name] && consolidationPassesOver(c) == "" {
			cands = append(cands, c)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		wi, wj := waste(cands[i]), waste(cands[j])
		if wi != wj {
			return wi > wj
		}
		return cands[i].Name() < cands[j].Name()
	})
	for _, c := range cands {
		if d.budget(c.NodePool, karpv1.DisruptionReasonUnderutilized) == 0 && d.disrupting[c.NodePool.Name] > 0 {
			// Nodes of its NodePool are disrupting and take the budget: look again soon, once
			// they are gone, not a packing interval later (nothing else may wake a driver of
			// virtual time before). A budget closed by its schedule wakes the decision when
			// its window ends.
			d.repackWaits = true
			d.wake(d.in.Now.Add(d.opts.PollInterval))
			break
		}
	}
	cands = d.withinBudget(cands, karpv1.DisruptionReasonUnderutilized, d.opts.MaxMultiNodeCandidates)
	deadline, bounded := d.searchDeadline(MultiNodeConsolidationTimeout)
	for n := len(cands); n >= 1; n = shrink(n) {
		res := d.schedule(cands[:n], -1, true)
		d.scheduled(MethodRepack)
		if bounded && !d.in.Clock.Now().Before(deadline) {
			d.timeouts = append(d.timeouts, SearchTimeout{Method: MethodRepack, Evaluated: n})
			return nil
		}
		if cmd, _ := d.repackCommand(cands[:n], res); cmd != nil {
			return cmd
		}
	}
	return nil
}

// shrink is the next, smaller, number of candidates re-pack consolidation tries after n: a
// quarter fewer, at least one fewer.
func shrink(n int) int { return min(n-1, n*3/4) }

// waste is the $/hour of a candidate's room its pods do not request: its price times one less
// the larger of its CPU and memory utilization.
func waste(c *Candidate) float64 {
	used := 0.0
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		alloc, req := c.Allocatable[name], c.Requested[name]
		if alloc.MilliValue() > 0 {
			used = max(used, float64(req.MilliValue())/float64(alloc.MilliValue()))
		}
	}
	return c.Price * max(0, 1-used)
}

// repackCommand judges a re-pack simulation's outcome res: every pod placed, on no more new
// nodes than candidates; each new node's instance types narrowed by the spot rules of
// consolidation (see spotRule) to those cheaper than the candidates together and not of any
// candidate's instance type in its capacity type; and the whole saving at least
// RepackMinSavingsShare of the candidates' price, and allowed by the Balanced policy.
func (d *decider) repackCommand(cands []*Candidate, res *scheduler.Results) (*Command, string) {
	if len(res.PodErrors) > 0 {
		return nil, podSchedulingErrors(res.PodErrors)
	}
	if len(res.NewClaims) > len(cands) {
		return nil, fmt.Sprintf("Can't remove %d nodes without creating %d", len(cands), len(res.NewClaims))
	}
	total := sumPrices(cands)
	same := map[string]bool{} // instance type/capacity type of a candidate
	for _, c := range cands {
		if c.Price <= 0 {
			return nil, fmt.Sprintf("price of node %s is unknown", c.Name())
		}
		same[c.InstanceType+"/"+c.CapacityType] = true
	}
	cmd := &Command{Method: MethodRepack, Reason: karpv1.DisruptionReasonUnderutilized, Candidates: cands, Placements: res.ExistingPlacements}
	cost := 0.0
	for _, claim := range res.NewClaims {
		if why := d.spotRule(claim, cands); why != "" {
			return nil, why
		}
		price, ok := cheaperTypes(claim, total, func(name, capacityType string) bool { return same[name+"/"+capacityType] })
		if !ok {
			return nil, noCheaperNode
		}
		cost += price
		cmd.Replacements = append(cmd.Replacements, &Replacement{NodePool: d.pools[claim.NodePool], Claim: claim, Price: price})
	}
	cmd.Savings = total - cost
	if cmd.Savings < RepackMinSavingsShare*total {
		return nil, noCheaperNode
	}
	if !d.balancedAllows(cmd) {
		return nil, "not worth the disruption under the Balanced policy"
	}
	return cmd, ""
}

// spotRule applies consolidation's spot rules to a replacement claim (as cheaperReplacement):
// spot nodes replaced by spot only with Options.SpotToSpotConsolidation, and a claim that may
// be either made spot only, as priced. One difference, ours: without SpotToSpotConsolidation,
// spot nodes may be replaced by on-demand ones when the NodePool allows them (and they are
// cheaper, judged after), where Karpenter's consolidation gives up. It returns why there is
// no replacement, or "".
func (d *decider) spotRule(claim *scheduler.Claim, cands []*Candidate) string {
	capacityTypes, constrained := claim.Requirements.Get(karpv1.CapacityTypeLabelKey)
	maySpot := !constrained || capacityTypes.Has(karpv1.CapacityTypeSpot)
	mayOnDemand := !constrained || capacityTypes.Has(karpv1.CapacityTypeOnDemand)
	allSpot := true
	for _, c := range cands {
		allSpot = allSpot && c.CapacityType == karpv1.CapacityTypeSpot
	}
	spotOnly := scheduling.MustRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot)
	switch {
	case allSpot && maySpot && !d.opts.SpotToSpotConsolidation && mayOnDemand:
		claim.Requirements = claim.Requirements.With(scheduling.MustRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand))
	case allSpot && maySpot && !d.opts.SpotToSpotConsolidation:
		return spotToSpotDisabled
	case maySpot && (allSpot || mayOnDemand):
		claim.Requirements = claim.Requirements.With(spotOnly)
	}
	return ""
}

// MeasurePacking re-packs the fleet as it is now (PackingOf), reading only the cluster state
// and each NodePool's instance types: unlike a pass, it decides nothing and writes nothing.
func (c *Controller) MeasurePacking(ctx context.Context) (*packing.Result, error) {
	snap, err := c.cluster.SyncSnapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("taking snapshot: %w", err)
	}
	in := Input{Nodes: snap.Nodes, NodePools: snap.NodePools, DaemonSets: snap.DaemonSets, NamespaceLabels: snap.NamespaceLabels}
	var errs map[string]error
	in.InstanceTypes, errs = state.LaunchableInstanceTypes(ctx, c.cloud, snap.NodePools, nil)
	for _, np := range snap.NodePools {
		if err := errs[np.Name]; err != nil {
			return nil, fmt.Errorf("listing instance types of nodepool %s: %w", np.Name, err)
		}
	}
	return PackingOf(in), nil
}

// evaluated reports whether the decision tried the method.
func (d *Decision) evaluated(method string) bool {
	for _, e := range d.Evaluations {
		if e.Method == method {
			return true
		}
	}
	return false
}
