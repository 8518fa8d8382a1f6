package disruption

import (
	"slices"
	"sort"
	"sync"
	"time"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
)

// Karpenter's time limits on the consolidation searches of a pass, read on Input.Clock.
const (
	// MultiNodeConsolidationTimeout bounds multi-node consolidation's binary search: a
	// simulation that ends at or after it is discarded and the search returns the largest
	// command found before, if any.
	MultiNodeConsolidationTimeout = time.Minute
	// SingleNodeConsolidationTimeout bounds single-node consolidation: once it has passed, the
	// search stops before its next candidate without a command, and the next pass tries first
	// the NodePools it had not reached (Decision.UnseenNodePools).
	SingleNodeConsolidationTimeout = 3 * time.Minute
)

// SearchTimeout is a consolidation search that reached its time limit.
type SearchTimeout struct {
	// Method is MethodMultiNode, MethodSingleNode or MethodRepack.
	Method string
	// Evaluated is, for single-node consolidation, how many candidates it had evaluated; for
	// multi-node consolidation, the number of nodes of the batch whose simulation ran out of
	// time.
	Evaluated int
}

// multiNode finds the longest prefix of the candidates (by disruption cost, within budgets)
// whose pods fit on the other nodes plus at most one cheaper new node, by binary search. As
// Karpenter's, the search is bounded by MultiNodeConsolidationTimeout: a simulation that ends
// past it is a timeout (Decision.Timeouts) and the search returns the best command found
// before it, if any.
func (d *decider) multiNode() *Command {
	// As Karpenter's firstNConsolidationOption, whose binary search over at most 100 indices
	// takes candidates[0:mid+1]: a command may take one more than the bound.
	cands := d.withinBudget(d.underutilized(), karpv1.DisruptionReasonUnderutilized, d.opts.MaxMultiNodeCandidates+1)
	deadline, bounded := d.searchDeadline(MultiNodeConsolidationTimeout)
	var best *Command
	lo, hi := 2, len(cands)
	for lo <= hi {
		mid := (lo + hi) / 2
		res := d.schedule(cands[:mid], 1, true)
		d.scheduled(MethodMultiNode)
		// Karpenter's simulation runs under a context with this deadline and fails once it
		// passes, even on its last pod; its outcome is then never judged.
		if bounded && !d.in.Clock.Now().Before(deadline) {
			d.timeouts = append(d.timeouts, SearchTimeout{Method: MethodMultiNode, Evaluated: mid})
			return best
		}
		if cmd, _ := d.command(MethodMultiNode, karpv1.DisruptionReasonUnderutilized, cands[:mid], 1, true, res); cmd != nil {
			best, lo = cmd, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best
}

// singleNode deletes or replaces the first candidate it can, trying them in
// singleNodeOrder and skipping those of NodePools whose budget allows no disruption. As
// Karpenter's, it is bounded by SingleNodeConsolidationTimeout: past it, it stops before the
// next candidate, notes a timeout (Decision.Timeouts), and leaves the NodePools it had not
// reached in Decision.UnseenNodePools; having tried every candidate, it leaves none there.
//
// The what-ifs of whatIfWorkers candidates run at once, one per core; their outcomes are then
// taken in order, as if each ran after the one before: the first that succeeds wins, and one
// the clock had reached the time limit before is not looked at.
func (d *decider) singleNode() *Command {
	cands, pools := singleNodeOrder(d.underutilized(), d.in.UnseenNodePools)
	deadline, bounded := d.searchDeadline(SingleNodeConsolidationTimeout)
	timedOut := func(i int) bool {
		if !bounded || !d.in.Clock.Now().After(deadline) {
			return false
		}
		d.timeouts = append(d.timeouts, SearchTimeout{Method: MethodSingleNode, Evaluated: i})
		// The first len(pools) candidates are one of each NodePool, in pools' order: those
		// not reached are the rest of pools.
		d.unseenPools = slices.Sorted(slices.Values(pools[min(i, len(pools)):]))
		return true
	}
	for i := 0; i < len(cands); {
		if timedOut(i) {
			return nil
		}
		// The next candidates whose budget allows a disruption (one node at a time: any
		// budget above 0 allows it), up to a worker each.
		batch := make([]int, 0, whatIfWorkers)
		for j := i; j < len(cands) && len(batch) < whatIfWorkers; j++ {
			if d.budget(cands[j].NodePool, karpv1.DisruptionReasonUnderutilized) > 0 {
				batch = append(batch, j)
			}
		}
		if len(batch) == 0 {
			break
		}
		results := make([]*scheduler.Results, len(batch))
		var wg sync.WaitGroup
		for w, j := range batch[1:] {
			wg.Go(func() { results[w+1] = d.sim.schedule([]*Candidate{cands[j]}, 1, true, w+1) })
		}
		results[0] = d.sim.schedule([]*Candidate{cands[batch[0]]}, 1, true, 0)
		wg.Wait()
		for k, j := range batch {
			if k > 0 && timedOut(batch[k-1]+1) { // where a search one at a time looks next
				return nil
			}
			c := cands[j]
			d.scheduled(MethodSingleNode)
			cmd, why := d.command(MethodSingleNode, karpv1.DisruptionReasonUnderutilized, []*Candidate{c}, 1, true, results[k])
			if cmd != nil {
				return cmd
			}
			d.unconsolidatable = append(d.unconsolidatable, Blocked{Node: c.Name(), NodeClaim: c.NodeClaim.Name, Reason: why})
		}
		i = batch[len(batch)-1] + 1
	}
	d.unseenPools = nil
	return nil
}

// singleNodeOrder is the order in which single-node consolidation tries cands (given in
// disruption-cost order), as Karpenter's: one candidate of each NodePool in turn, the
// NodePools in unseen first, then the others, each group in the order of its first
// candidate (Karpenter's order of NodePools within a group is a map's, so arbitrary). pools
// are the NodePools of cands in the order of their turn.
func singleNodeOrder(cands []*Candidate, unseen []string) (order []*Candidate, pools []string) {
	byPool := map[string][]*Candidate{}
	for _, c := range cands {
		name := c.NodePool.Name
		if _, ok := byPool[name]; !ok {
			pools = append(pools, name)
		}
		byPool[name] = append(byPool[name], c)
	}
	first := make(map[string]bool, len(unseen))
	for _, name := range unseen {
		first[name] = true
	}
	sort.SliceStable(pools, func(i, j int) bool { return first[pools[i]] && !first[pools[j]] })
	order = make([]*Candidate, 0, len(cands))
	for round := 0; len(order) < len(cands); round++ {
		for _, name := range pools {
			if round < len(byPool[name]) {
				order = append(order, byPool[name][round])
			}
		}
	}
	return order, pools
}

// searchDeadline is when a consolidation search starting now must stop, and false when
// searches are not bounded (no Input.Clock).
func (d *decider) searchDeadline(limit time.Duration) (time.Time, bool) {
	if d.in.Clock == nil {
		return time.Time{}, false
	}
	return d.in.Clock.Now().Add(limit), true
}

// scheduled notes that a consolidation method ran a scheduling simulation.
func (d *decider) scheduled(method string) {
	if d.in.onSchedule != nil {
		d.in.onSchedule(method)
	}
}
