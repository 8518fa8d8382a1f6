package disruption

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/health"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
)

// MethodRepair is node repair as a disruption method, tried first, as Karpenter v1.15.0's
// Repair (pkg/controllers/disruption/repair.go).
const MethodRepair = "repair"

// RepairUnhealthyThreshold is Karpenter's unhealthy-fraction stop: when more than this share of
// a NodePool's nodes (rounded up) have a condition a repair policy names, whatever its age, the
// failure is presumed to be the cluster's rather than the nodes', and none of them is repaired.
const RepairUnhealthyThreshold = "20%"

// RebootsBeforeReplacement is how many reboots node repair commits for one NodeClaim within
// RebootHistoryWindow before it replaces the node instead, as Karpenter's RebootHistory: a
// fault a reboot does not clear is not rebooted in a loop.
const RebootsBeforeReplacement = 2

// RebootHistoryWindow is how long a committed reboot counts towards RebootsBeforeReplacement.
const RebootHistoryWindow = 24 * time.Hour

// RepairHold is an unhealthy node the unhealthy-fraction stop keeps from repair.
type RepairHold struct {
	// Node, NodeClaim and NodePool name the node.
	Node, NodeClaim, NodePool string
	// Message says why, in Karpenter's words.
	Message string
}

// repair finds one unhealthy node to repair, as Karpenter v1.15.0's Repair.ComputeCommands:
//
//   - a candidate is a node, initialized or not, whose conditions match a repair policy past
//     its toleration (Options.Repair); karpenter.sh/do-not-disrupt on the node or its pods does not protect it,
//     but karpenter.sh/do-not-repair on its Node does (DisruptionBlocked: "repair is blocked
//     through the ... annotation"), and so does being nominated for pending pods; a node whose
//     pods a PodDisruptionBudget or do-not-disrupt protects needs a drain bound, from its
//     policy or its NodeClaim's terminationGracePeriod;
//   - candidates are tried by repair score (health.Result.ScoreAt: the policy's rank plus the
//     time since eligible over 30 minutes), then least reschedule cost, then name;
//   - a NodePool more than RepairUnhealthyThreshold unhealthy repairs nothing
//     (NodeRepairBlocked), and one whose Unhealthy budget allows nothing is passed over;
//   - the first candidate whose pods all fit, on other nodes and new ones, is the command:
//     the new ones are its replacements, launched and initialized before the node is deleted
//     (none when its pods fit elsewhere); a candidate whose pods do not fit is blocked with
//     why (DisruptionBlocked); a node of a static NodePool is replaced by a NodeClaim of its
//     template (repairStatic), or at its limits.nodes terminated first with
//     Options.TerminateFirstRepair.
//
// The node's drain is bounded (Candidate.DrainBound) by its policy's terminationGracePeriod,
// or its NodeClaim's when shorter. A node whose policy's action is RebootNode is rebooted in
// place (Command.Reboot: no replacement, its pods wait or go elsewhere while it reboots), unless
// RebootsBeforeReplacement reboots of its NodeClaim were committed within RebootHistoryWindow
// (Input.RecentReboots): it is then replaced (Candidate.RebootEscalated), as Karpenter's
// RebootHistory.Resolve. Tolerations count from no earlier than the end of the node's last
// reboot (health.NotBefore).
func (d *decider) repair() *Command {
	m := d.opts.Repair
	if m == nil {
		return nil
	}
	now := d.in.Now
	var eligible []*Candidate
	for _, c := range d.repairCandidates() {
		matches := health.NotBefore(m.Match(c.Node), rebootEndedAt(c.NodeClaim))
		d.wake(health.NextEligible(matches, now))
		result := health.Resolve(matches, now)
		if result.Action == "" {
			continue
		}
		if result.Action == cloudprovider.RebootNode && d.in.RecentReboots[c.NodeClaim.UID] >= RebootsBeforeReplacement {
			result.Action, c.RebootEscalated = cloudprovider.ReplaceNode, true
		}
		c.Repair = &result
		block := func(why string) {
			d.blocked = append(d.blocked, Blocked{Node: c.Name(), NodeClaim: c.NodeClaim.Name, Reason: why, Method: MethodRepair})
		}
		switch {
		case c.Node.Annotations[karpv1.DoNotRepairAnnotationKey] == "true":
			block(fmt.Sprintf("repair is blocked through the %q annotation", karpv1.DoNotRepairAnnotationKey))
		case c.Nominated(now):
			block("Node is nominated for a pending pod")
		case c.PodProtection != "" && result.TerminationGracePeriod == nil && c.NodeClaim.Spec.TerminationGracePeriod == nil:
			block("repair requires a termination grace period to bypass blocking pods")
		default:
			eligible = append(eligible, c)
		}
	}
	sort.SliceStable(eligible, func(i, j int) bool {
		a, b := eligible[i], eligible[j]
		if sa, sb := a.Repair.ScoreAt(now), b.Repair.ScoreAt(now); sa != sb {
			return sa > sb
		}
		if a.RescheduleCost != b.RescheduleCost {
			return a.RescheduleCost < b.RescheduleCost
		}
		return a.Name() < b.Name()
	})
	tripped := d.unhealthyPools()
	for _, c := range eligible {
		if tripped[c.NodePool.Name] {
			d.repairHolds = append(d.repairHolds, RepairHold{Node: c.Name(), NodeClaim: c.NodeClaim.Name, NodePool: c.NodePool.Name,
				Message: fmt.Sprintf("more than %s of nodes in nodepool %q are unhealthy", RepairUnhealthyThreshold, c.NodePool.Name)})
			continue
		}
		// Budgets count initialized nodes only: an uninitialized one runs no workload to
		// protect, so its repair neither needs nor consumes budget, as in Karpenter.
		if c.Initialized() && d.budget(c.NodePool, karpv1.DisruptionReasonUnhealthy) == 0 {
			continue
		}
		if c.Repair.Action == cloudprovider.RebootNode {
			c.DrainBound = drainBound(c, c.Repair)
			return &Command{Method: MethodRepair, Reason: karpv1.DisruptionReasonUnhealthy, Candidates: []*Candidate{c}, Reboot: true}
		}
		if nodepool.IsStatic(c.NodePool) {
			if cmd := d.repairStatic(c); cmd != nil {
				c.DrainBound = drainBound(c, c.Repair)
				return cmd
			}
			continue
		}
		cmd, why := d.simulate(MethodRepair, karpv1.DisruptionReasonUnhealthy, []*Candidate{c}, -1, false)
		if cmd == nil {
			d.blocked = append(d.blocked, Blocked{Node: c.Name(), NodeClaim: c.NodeClaim.Name, Reason: why, Method: MethodRepair})
			continue
		}
		c.DrainBound = drainBound(c, c.Repair)
		return cmd
	}
	return nil
}

// repairStatic is the repair of a node of a static NodePool, as Karpenter v1.15.0's Repair
// does it, mirroring static drift: not while the NodePool has more claims than its replicas (a
// scale-down is under way), and with a NodeClaim of its template launched first, unless that
// would take the NodePool past its limits.nodes. The node is then terminated first (the
// static NodePool controller refills the NodePool) with Options.TerminateFirstRepair when the
// NodePool is Ready and not being deleted, and blocked (DisruptionBlocked) otherwise.
func (d *decider) repairStatic(c *Candidate) *Command {
	np := c.NodePool
	active := int64(d.staticActive[np.Name])
	if active > *np.Spec.Replicas {
		return nil
	}
	if limit, ok := np.Spec.Limits[nodepool.ResourceNodes]; ok && active+1 > limit.Value() {
		if d.opts.TerminateFirstRepair && nodepool.IsReady(np) && np.DeletionTimestamp == nil {
			return &Command{Method: MethodRepair, Reason: karpv1.DisruptionReasonUnhealthy, Candidates: []*Candidate{c}, TerminateFirst: TerminateFirstStaticAtLimit}
		}
		d.blocked = append(d.blocked, Blocked{Node: c.Name(), NodeClaim: c.NodeClaim.Name, Reason: staticAtLimitBlocked, Method: MethodRepair})
		return nil
	}
	r, err := staticReplacement(np)
	if err != nil {
		d.problems = append(d.problems, err)
		return nil
	}
	return &Command{Method: MethodRepair, Reason: karpv1.DisruptionReasonUnhealthy, Candidates: []*Candidate{c}, Replacements: []*Replacement{r}}
}

// repairCandidates are the nodes repair may act on: the candidates of dynamic NodePools, the
// nodes of static ones, and the registered nodes not initialized.
func (d *decider) repairCandidates() []*Candidate {
	out := slices.Clone(d.candidates)
	out = append(out, d.static...)
	return append(out, d.uninitialized...)
}

// repairable counts the candidates repair could act on now, budgets and the unhealthy-fraction
// stop aside (for karpenter_voluntary_disruption_eligible_nodes).
func (d *decider) repairable() int {
	n := 0
	for _, c := range d.repairCandidates() {
		if c.Repair != nil && c.Node.Annotations[karpv1.DoNotRepairAnnotationKey] != "true" {
			n++
		}
	}
	return n
}

// unhealthyPools are the NodePools more than RepairUnhealthyThreshold of whose Nodes have a
// condition a repair policy names, however long it has held; the share rounds up, so one
// unhealthy node of up to five does not stop repair.
func (d *decider) unhealthyPools() map[string]bool {
	total, unhealthy := map[string]int{}, map[string]int{}
	for _, sn := range d.in.Nodes {
		if sn.Node == nil {
			continue
		}
		pool := sn.Node.Labels[karpv1.NodePoolLabelKey]
		if pool == "" {
			continue
		}
		total[pool]++
		if d.opts.Repair.Unhealthy(sn.Node) {
			unhealthy[pool]++
		}
	}
	tripped := map[string]bool{}
	for pool, n := range total {
		threshold, err := BudgetNodes(karpv1.Budget{Nodes: RepairUnhealthyThreshold}, n)
		if err == nil && unhealthy[pool] > threshold {
			tripped[pool] = true
		}
	}
	return tripped
}

// rebootEndedAt is when the claim's last reboot ended (its Rebooting condition turned False),
// zero when it never rebooted or reboots now.
func rebootEndedAt(claim *karpv1.NodeClaim) time.Time {
	if c := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeRebooting); c != nil && c.Status == metav1.ConditionFalse {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// drainBound is how long the repaired node's drain may take: its policy's bound, or its
// NodeClaim's terminationGracePeriod when shorter; nil when the policy sets none (the
// NodeClaim's own bounds it, if any), as Karpenter's effectiveDrainBound.
func drainBound(c *Candidate, r *health.Result) *time.Duration {
	if r.TerminationGracePeriod == nil {
		return nil
	}
	bound := *r.TerminationGracePeriod
	if g := c.NodeClaim.Spec.TerminationGracePeriod; g != nil && g.Duration < bound {
		bound = g.Duration
	}
	return &bound
}
