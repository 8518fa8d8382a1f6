package disruption

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/capacitybuffer"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// This file holds one decision's working state, the decider: the candidates, budgets and
// eligibility every method reads.

// eligibilitySeed seeds Decision.Eligibility: the hashes are compared within a process only.
var eligibilitySeed = maphash.MakeSeed()

// eligibility computes Decision.Eligibility.
func (d *decider) eligibility() uint64 {
	var h maphash.Hash
	h.SetSeed(eligibilitySeed)
	flag := func(b bool) {
		if b {
			h.WriteByte(1)
		} else {
			h.WriteByte(0)
		}
	}
	for _, c := range d.candidates {
		h.WriteString(c.Name())
		h.WriteByte(0)
		flag(c.Consolidatable)
		flag(c.IsEmpty())
		h.WriteString(c.protected())
		h.WriteByte(0)
		h.WriteString(c.Drifted)
		h.WriteByte(0)
	}
	for _, name := range d.poolsWithNodes() { // only those have candidates
		for _, reason := range []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized} {
			h.WriteString(strconv.Itoa(d.budget(d.pools[name], reason)))
			h.WriteByte(0)
		}
	}
	h.WriteString(strconv.Itoa(len(d.in.Pending)))
	return h.Sum64()
}

// settled reports whether a consolidation method that found nothing leaves the cluster
// consolidated for it, as Karpenter's markConsolidated: it had candidates (consolidatable,
// unprotected nodes consolidation does not pass over), none was held back by a budget that
// allows no disruption, and single-node consolidation did not run out of time.
func (d *decider) settled(method string) bool {
	switch method {
	case MethodEmptiness:
		if len(d.empty()) > 0 {
			return false // empty nodes the budgets held back
		}
	case MethodMultiNode, MethodSingleNode:
		for _, c := range d.underutilized() {
			if d.budget(c.NodePool, karpv1.DisruptionReasonUnderutilized) == 0 {
				return false
			}
		}
		if method == MethodSingleNode {
			for _, t := range d.timeouts {
				if t.Method == MethodSingleNode {
					return false
				}
			}
		}
	default:
		return false
	}
	return len(d.filter(func(c *Candidate) bool {
		return c.Consolidatable && c.protected() == "" && consolidationPassesOver(c) == ""
	})) > 0
}

// poolsWithNodes are the names of the NodePools that have initialized nodes, sorted.
func (d *decider) poolsWithNodes() []string {
	names := make([]string, 0, len(d.pools))
	for name := range d.pools {
		if d.total[name] > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// reasons are the disruption reasons the decision's methods act for: drift, emptiness and
// underutilization, and with Options.Repair, Unhealthy.
func (d *decider) reasons() []karpv1.DisruptionReason {
	out := []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted, karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized}
	if d.opts.Repair != nil {
		out = append(out, karpv1.DisruptionReasonUnhealthy)
	}
	return out
}

// disruptingFor is how many of a NodePool's nodes consume its budgets for reason: those being
// deleted or NotReady, but for Unhealthy those being deleted only, as Karpenter's
// NodePoolStatsFromNodes (NotReady is what repair acts on: counting it would let a wave of
// unhealthy nodes freeze their own repair).
func (d *decider) disruptingFor(pool string, reason karpv1.DisruptionReason) int {
	if reason == karpv1.DisruptionReasonUnhealthy {
		return d.marked[pool]
	}
	return d.disrupting[pool]
}

// poolBudgets is, for each NodePool with nodes, by name then reason, how many more of its
// nodes its budgets let disrupt for each reason and how many are disrupting already.
func (d *decider) poolBudgets() []PoolBudget {
	var out []PoolBudget
	for _, name := range d.poolsWithNodes() {
		for _, reason := range d.reasons() {
			out = append(out, PoolBudget{NodePool: name, Reason: reason, Allowed: d.budget(d.pools[name], reason), Disrupting: d.disruptingFor(name, reason)})
		}
	}
	return out
}

// blockedPools lists, by name then reason, the NodePools with nodes whose budgets allow no
// disruption now for one of the decision's reasons.
func (d *decider) blockedPools() []PoolBlock {
	var out []PoolBlock
	for _, name := range d.poolsWithNodes() {
		for _, reason := range d.reasons() {
			if allowed, err := AllowedDisruptions(d.pools[name], reason, d.total[name], 0, d.in.Now); err == nil && allowed == 0 {
				out = append(out, PoolBlock{NodePool: name, Reason: reason})
			}
		}
	}
	return out
}

type budgetKey struct {
	pool   string
	reason karpv1.DisruptionReason
}

// decider holds one decision's evaluation of the cluster.
type decider struct {
	in                 Input
	opts               Options
	pools              map[string]*karpv1.NodePool // dynamic NodePools by name
	staticPools        map[string]*karpv1.NodePool // static NodePools (spec.replicas) by name
	static             []*Candidate                // static NodePools' nodes, for static drift and repair
	uninitialized      []*Candidate                // registered nodes not initialized, for repair
	staticActive       map[string]int              // static NodePools' claims not being deleted
	total              map[string]int              // initialized (or rebooting) nodes per NodePool
	disrupting         map[string]int              // of those, the ones being deleted, rebooting or NotReady
	marked             map[string]int              // of those, the ones being deleted or rebooting
	poolCost           map[string]float64          // $/hour of each NodePool's nodes
	poolRescheduleCost map[string]float64          // reschedule cost of each NodePool's nodes
	allowed            map[budgetKey]int
	candidates         []*Candidate // sorted by disruption cost
	statuses           []ClaimStatus
	blocked            []Blocked
	problems           []error
	invalid            []PodProblem // pods with an invalid do-not-disrupt value
	timed              []TimedProtection
	// unconsolidatable are the candidates single-node consolidation could not act on, and why.
	unconsolidatable []Blocked
	passedOver       []Blocked
	timeouts         []SearchTimeout // Decision.Timeouts
	moves            []Move          // Decision.Moves
	unseenPools      []string        // Decision.UnseenNodePools
	next             time.Time       // Decision.NextChange
	sim              *simulator
	// holdsBuffer are the nodes the buffers' virtual pods occupy (see bufferNodes).
	holdsBuffer map[string]bool
	// repackWaits is Decision.repackWaits.
	repackWaits bool
	// repairHolds is Decision.RepairHolds.
	repairHolds []RepairHold
}

// wake notes a moment after now at which the decision may change on its own.
func (d *decider) wake(t time.Time) {
	if t.After(d.in.Now) && (d.next.IsZero() || t.Before(d.next)) {
		d.next = t
	}
}

func newDecider(in Input) *decider {
	d := &decider{
		in: in, opts: in.Options.withDefaults(), unseenPools: in.UnseenNodePools,
		pools: map[string]*karpv1.NodePool{}, staticPools: map[string]*karpv1.NodePool{}, staticActive: map[string]int{},
		total: map[string]int{}, disrupting: map[string]int{}, marked: map[string]int{},
		poolCost: map[string]float64{}, poolRescheduleCost: map[string]float64{}, allowed: map[budgetKey]int{},
	}
	var poolNames []string
	for _, np := range in.NodePools {
		switch {
		case np.DeletionTimestamp != nil:
		case nodepool.IsStatic(np):
			d.staticPools[np.Name] = np
		default:
			d.pools[np.Name] = np
			poolNames = append(poolNames, np.Name)
		}
	}
	sort.Strings(poolNames)
	allTypes := make([][]*cloudprovider.InstanceType, 0, len(poolNames))
	for _, name := range poolNames {
		allTypes = append(allTypes, in.InstanceTypes[name])
	}
	pdbs := state.NewPDBIndex(in.PDBs)
	for _, sn := range in.Nodes {
		if sn.NodeClaim == nil {
			continue
		}
		if sn.Node != nil && !sn.Initialized() && !sn.MarkedForDeletion && !sn.Rebooting() {
			if np := cmp.Or(d.pools[sn.NodePool()], d.staticPools[sn.NodePool()]); np != nil {
				d.addUninitialized(sn, np, pdbs)
			}
		}
		np := d.pools[sn.NodePool()]
		if np == nil {
			if sp := d.staticPools[sn.NodePool()]; sp != nil {
				d.addStatic(sn, sp, pdbs)
			}
			continue
		}
		c := d.candidate(sn, np, pdbs)
		if c == nil {
			continue
		}
		c.InstanceType = nodeLabel(sn, corev1.LabelInstanceTypeStable)
		c.CapacityType = nodeLabel(sn, karpv1.CapacityTypeLabelKey)
		c.Zone = nodeLabel(sn, corev1.LabelTopologyZone)
		c.Price = NodePrice(sn, append([][]*cloudprovider.InstanceType{in.InstanceTypes[np.Name]}, allTypes...)...)
		d.poolCost[np.Name] += c.Price
		d.poolRescheduleCost[np.Name] += c.RescheduleCost
		if sn.Nominated(in.Now) {
			d.wake(sn.NominatedUntil)
		}
		for _, pod := range c.Pods {
			p := karpv1.PodDoNotDisrupt(pod, in.Now)
			if p.Invalid != nil {
				d.invalid = append(d.invalid, PodProblem{Pod: pod, Err: p.Invalid})
			}
			if !p.Until.IsZero() {
				d.timed = append(d.timed, TimedProtection{Pod: pod, Until: p.Until})
			}
			d.wake(p.Until)
		}
		if at, ok := consolidatableAt(sn.NodeClaim, np); ok {
			d.wake(at)
		}
		passedOver := consolidationPassesOver(c)
		if c.protected() == "" && passedOver != "" {
			d.unconsolidatable = append(d.unconsolidatable, Blocked{Node: sn.Node.Name, NodeClaim: sn.NodeClaim.Name, Reason: passedOver})
		}
		if why := cmp.Or(passedOver, c.protected()); why != "" {
			d.passedOver = append(d.passedOver, Blocked{Node: sn.Node.Name, NodeClaim: sn.NodeClaim.Name, Reason: why})
		}
		if why := c.protected(); why != "" {
			if c.Drifted != "" && !c.mayDrift() || c.Consolidatable && d.mayConsolidate(c) {
				d.blocked = append(d.blocked, Blocked{Node: sn.Node.Name, NodeClaim: sn.NodeClaim.Name, Reason: why})
			}
		}
		d.candidates = append(d.candidates, c)
	}
	// As Karpenter's sortCandidates: the most saved per unit of reschedule cost first (its sort
	// is not stable; names break ties here).
	sort.SliceStable(d.candidates, func(i, j int) bool {
		a, b := d.candidates[i], d.candidates[j]
		if ra, rb := a.SavingsRatio(), b.SavingsRatio(); ra != rb {
			return ra > rb
		}
		return a.Name() < b.Name()
	})
	d.sim = newSimulator(in, d.pools, pdbs)
	d.holdsBuffer = d.bufferNodes()
	for _, c := range d.candidates {
		if d.holdsBuffer[c.Name()] && c.IsEmpty() && c.protected() == "" && consolidationPassesOver(c) == "" {
			d.unconsolidatable = append(d.unconsolidatable, Blocked{Node: c.Name(), NodeClaim: c.NodeClaim.Name, Reason: fmt.Sprintf("Node %q has buffer pods", c.Name())})
		}
	}
	return d
}

// bufferNodes places the buffers' virtual pods on the cluster as it is, as a provisioning pass
// would (and only there: no new nodes), but on the nodes without pods to move last, so the
// room of nodes that stay anyway is used first; the nodes that receive some hold the buffer,
// and emptiness leaves them.
func (d *decider) bufferNodes() map[string]bool {
	if len(d.in.BufferPods) == 0 {
		return nil
	}
	empty := map[string]bool{}
	for _, c := range d.candidates {
		if c.IsEmpty() {
			empty[c.Name()] = true
		}
	}
	nodes := make([]*scheduler.Node, 0, len(d.sim.targets))
	for _, n := range d.sim.targets {
		if !empty[n.Name] {
			copied := *n
			nodes = append(nodes, &copied)
		}
	}
	for _, n := range d.sim.targets {
		if empty[n.Name] {
			copied := *n
			nodes = append(nodes, &copied)
		}
	}
	res := scheduler.Solve(scheduler.Input{Pods: d.in.BufferPods, Nodes: nodes, VolumeRequirements: d.sim.volumes})
	held := map[string]bool{}
	for name := range capacitybuffer.Split(res).Nodes {
		held[name] = true
	}
	return held
}

// mayConsolidate reports whether the node's NodePool lets consolidation act on it now.
func (d *decider) mayConsolidate(c *Candidate) bool {
	return c.IsEmpty() || underutilizedPolicy(c.NodePool)
}

func underutilizedPolicy(np *karpv1.NodePool) bool {
	switch np.Spec.Disruption.ConsolidationPolicy {
	case karpv1.ConsolidationPolicyWhenEmpty:
		return false
	default: // WhenEmptyOrUnderutilized (the default) and Balanced
		return true
	}
}

// budget returns how many more of a NodePool's nodes may start disrupting for reason.
func (d *decider) budget(np *karpv1.NodePool, reason karpv1.DisruptionReason) int {
	key := budgetKey{np.Name, reason}
	if n, ok := d.allowed[key]; ok {
		return n
	}
	n, err := AllowedDisruptions(np, reason, d.total[np.Name], d.disruptingFor(np.Name, reason), d.in.Now)
	if err != nil {
		d.problems = append(d.problems, err)
	}
	d.allowed[key] = n
	return n
}

// withinBudget keeps candidates, in order, while their NodePool's budget for reason allows.
func (d *decider) withinBudget(cands []*Candidate, reason karpv1.DisruptionReason, limit int) []*Candidate {
	used := map[string]int{}
	var out []*Candidate
	for _, c := range cands {
		if limit > 0 && len(out) == limit {
			break
		}
		if used[c.NodePool.Name] >= d.budget(c.NodePool, reason) {
			continue
		}
		used[c.NodePool.Name]++
		out = append(out, c)
	}
	return out
}

func (d *decider) filter(keep func(*Candidate) bool) []*Candidate {
	var out []*Candidate
	for _, c := range d.candidates {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// candidate counts an initialized node of np against its budgets and, unless it is marked for
// deletion, returns it as a candidate with its pods to move, reschedule cost, protections and
// its claim's Consolidatable and Drifted status (noted for the conditions); nil otherwise.
//
// A rebooting node (its reboot committed, drained or under way: Initialized goes Unknown once
// it is issued) counts as initialized and disrupting, for every reason, and is a candidate of
// no method, as Karpenter's NodePoolStats and StateNode.ValidateNodeDisruptable.
func (d *decider) candidate(sn *state.StateNode, np *karpv1.NodePool, pdbs *state.PDBIndex) *Candidate {
	if sn.Node == nil || !sn.Initialized() && !sn.Rebooting() {
		return nil // budgets count initialized nodes only, as Karpenter does
	}
	d.total[np.Name]++
	if sn.MarkedForDeletion || sn.Rebooting() || !state.NodeReady(sn.Node) {
		d.disrupting[np.Name]++
	}
	if sn.MarkedForDeletion || sn.Rebooting() {
		d.marked[np.Name]++
		return nil
	}
	c := &Candidate{StateNode: sn, NodePool: np}
	for _, pod := range sn.Pods {
		if state.IsReschedulable(pod) {
			c.Pods = append(c.Pods, pod)
		}
	}
	c.RescheduleCost = RescheduleCost(c.Pods, d.opts.PodDeletionCostManagement)
	status := ClaimStatus{NodeClaim: sn.NodeClaim.Name}
	status.Consolidatable, status.ConsolidatableReason, status.ConsolidatableMessage = consolidatable(sn.NodeClaim, np, d.in.Now)
	status.Drifted = drifted(sn.NodeClaim, sn.Node.Labels, np, d.in.InstanceTypes[np.Name], d.in.Now, d.in.CloudDrift[sn.NodeClaim.Name])
	d.statuses = append(d.statuses, status)
	c.Consolidatable, c.Drifted = status.Consolidatable, status.Drifted
	c.NodeProtection, c.PodProtection = nodeProtection(sn, d.in.Now), podProtection(c.Pods, pdbs, d.in.Now)
	return c
}

// addUninitialized notes a registered node that has not initialized, of a dynamic or static
// NodePool: no candidate of any method but repair, which Karpenter v1.15 lets act on it (a
// node that never initializes is not left stranded), with neither need nor use of budget.
func (d *decider) addUninitialized(sn *state.StateNode, np *karpv1.NodePool, pdbs *state.PDBIndex) {
	c := &Candidate{StateNode: sn, NodePool: np}
	for _, pod := range sn.Pods {
		if state.IsReschedulable(pod) {
			c.Pods = append(c.Pods, pod)
		}
	}
	c.RescheduleCost = RescheduleCost(c.Pods, d.opts.PodDeletionCostManagement)
	c.PodProtection = podProtection(c.Pods, pdbs, d.in.Now)
	d.uninitialized = append(d.uninitialized, c)
}

// addStatic notes a node of a static NodePool: counted against the NodePool's budgets and
// active claims, and, initialized, a candidate of static drift alone, with its Drifted status.
func (d *decider) addStatic(sn *state.StateNode, np *karpv1.NodePool, pdbs *state.PDBIndex) {
	if !sn.MarkedForDeletion {
		d.staticActive[np.Name]++
	}
	c := d.candidate(sn, np, pdbs)
	if c == nil {
		return
	}
	if c.Drifted != "" && !c.mayDrift() {
		d.blocked = append(d.blocked, Blocked{Node: sn.Node.Name, NodeClaim: sn.NodeClaim.Name, Reason: c.protected()})
	}
	d.static = append(d.static, c)
}

// underutilized are the consolidatable, unprotected candidates with pods, of NodePools whose
// policy consolidates underutilized nodes.
func (d *decider) underutilized() []*Candidate {
	return d.filter(func(c *Candidate) bool {
		return c.Consolidatable && !c.IsEmpty() && underutilizedPolicy(c.NodePool) && c.protected() == ""
	})
}

// consolidationPassesOver says, in Karpenter's words, why consolidation passes over the
// candidate whatever the cluster looks like, checked in Karpenter's order; "" when it does not.
func consolidationPassesOver(c *Candidate) string {
	switch {
	case c.Price <= 0:
		return fmt.Sprintf("Instance Type %q not found", c.InstanceType)
	case c.CapacityType == "":
		return fmt.Sprintf("Node does not have label %q", karpv1.CapacityTypeLabelKey)
	case c.Zone == "":
		return fmt.Sprintf("Node does not have label %q", corev1.LabelTopologyZone)
	}
	if _, ok := consolidatableAt(c.NodeClaim, c.NodePool); !ok {
		return fmt.Sprintf("NodePool %q has consolidation disabled", c.NodePool.Name)
	}
	if !c.IsEmpty() && !underutilizedPolicy(c.NodePool) {
		return fmt.Sprintf("NodePool %q has consolidation policy WhenEmpty, but node is not empty", c.NodePool.Name)
	}
	return ""
}
