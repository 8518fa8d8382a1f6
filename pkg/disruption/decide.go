package disruption

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/capacitybuffer"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/packing"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// The disruption methods, in the order Decide tries them.
const (
	MethodEmptiness   = "emptiness"
	MethodStaticDrift = "static drift"
	MethodDrift       = "drift"
	MethodMultiNode   = "multi-node consolidation"
	MethodSingleNode  = "single-node consolidation"
	// MethodRepair (repair.go) is tried first, with Options.Repair; MethodRepack (repack.go)
	// is ours, tried last.
)

// Input is everything one decision looks at. Decide does no I/O: the caller reads the cluster
// (state.Cluster.SyncSnapshot), the PodDisruptionBudgets, each NodePool's instance types and the
// cloud provider's drift verdicts.
type Input struct {
	// Now is the decision's time.
	Now time.Time
	// RecentReboots counts, per NodeClaim UID, the reboots node repair committed within
	// RebootHistoryWindow (the controller keeps them, as Karpenter's RebootHistory): a node
	// with RebootsBeforeReplacement of them is replaced instead of rebooted.
	RecentReboots map[types.UID]int
	// Nodes are the cluster's nodes and in-flight claims (state.Snapshot.Nodes).
	Nodes []*state.StateNode
	// NodePools in the cluster.
	NodePools []*karpv1.NodePool
	// InstanceTypes per NodePool name, as the cloud provider offers them.
	InstanceTypes map[string][]*cloudprovider.InstanceType
	// DaemonSets in the cluster, for the overhead of replacements.
	DaemonSets []*appsv1.DaemonSet
	// NamespaceLabels are the Namespaces' labels, for affinity terms' namespaceSelector
	// (state.Snapshot.NamespaceLabels; nil when not read).
	NamespaceLabels map[string]map[string]string
	// PDBs are the PodDisruptionBudgets in the cluster.
	PDBs []*policyv1.PodDisruptionBudget
	// VolumeRequirements are the node requirements a pod's volumes impose, by pod UID (see
	// provisioning.VolumeRequirements), so that a moved pod stays where its volumes are.
	VolumeRequirements map[types.UID]scheduling.Requirements
	// CloudDrift is the cloud provider's drift reason per NodeClaim name ("" or absent: none).
	CloudDrift map[string]cloudprovider.DriftReason
	// Options tune the decision.
	Options Options
	// Clock bounds the consolidation searches in time (MultiNodeConsolidationTimeout,
	// SingleNodeConsolidationTimeout): each reads it as it starts and as it goes. The
	// controller passes its own; nil never times out.
	Clock clock.PassiveClock
	// Pending are the pods waiting for capacity and not nominated to any node
	// (state.Snapshot.Pending). As in Karpenter's SimulateScheduling, every what-if places them
	// beside the candidates' pods, so room they would take is not promised to moved pods and
	// new capacity they need is part of the replacement; that they fit nowhere blocks nothing.
	Pending []*corev1.Pod
	// BufferPods are the virtual pods of the CapacityBuffers (capacitybuffer.Buffers): every
	// consolidation simulation places them with the candidates' pods, so the room they hold is
	// kept or replaced (that they fit nowhere blocks nothing, as for a pending pod), and an
	// empty node they occupy is not empty (Karpenter's "Node ... has buffer pods").
	BufferPods []*corev1.Pod
	// Consolidated are the consolidation methods (MethodEmptiness, MethodMultiNode,
	// MethodSingleNode) that found nothing in the cluster's current consolidation state (the
	// controller's consolidationState, Karpenter's IsConsolidated), with the decision's
	// Eligibility then: a method is skipped while the Eligibility is the same.
	Consolidated map[string]uint64
	// UnseenNodePools are the NodePools the previous single-node consolidation did not reach
	// before its time limit (the previous Decision's UnseenNodePools): this one tries their
	// candidates first.
	UnseenNodePools []string
	// Packing is the fleet re-packed from scratch (PackingOf), for re-pack consolidation
	// (MethodRepack); nil leaves it out. The controller computes it every
	// Options.PackingInterval.
	Packing *packing.Result
	// PodInfos, when set, keeps what the decision's solves derive from each pod for the next
	// decisions (the controller keeps one); nil derives it afresh for every decision.
	PodInfos *scheduler.PodInfos
	// SecondPodInfos is PodInfos for the what-ifs single-node consolidation runs on a second
	// core beside those of PodInfos (a PodInfos is not safe for concurrent use), kept and
	// pruned the same way; nil derives it afresh for every decision.
	SecondPodInfos *scheduler.PodInfos

	// onSchedule, when set (by tests), is called after each scheduling simulation of a
	// consolidation search, with the method.
	onSchedule func(method string)
}

// Replacement is a NodeClaim to create before a command's nodes go.
type Replacement struct {
	// NodePool to create it from.
	NodePool *karpv1.NodePool
	// Claim is the scheduler's claim: requirements (instance types narrowed to the allowed,
	// cheaper ones), requests and the pods it is for.
	Claim *scheduler.Claim
	// Price is its cheapest allowed offering, $/hour.
	Price float64
}

// InstanceType is the name of the replacement's cheapest instance type.
func (r *Replacement) InstanceType() string {
	if len(r.Claim.InstanceTypes) == 0 {
		return "?"
	}
	return r.Claim.InstanceTypes[0].Name
}

// CapacityType is the capacity type of the replacement's cheapest offering, the one its launch
// chooses, or "?" when it has none.
func (r *Replacement) CapacityType() string {
	if len(r.Claim.InstanceTypes) == 0 {
		return "?"
	}
	o, ok := r.Claim.InstanceTypes[0].CheapestOffering(r.Claim.Requirements)
	if !ok {
		return "?"
	}
	return o.CapacityType
}

// Command is one disruption: nodes to remove, and the replacements to launch first.
type Command struct {
	// Method that found it (MethodDrift, …).
	Method string
	// Reason recorded on the nodes.
	Reason karpv1.DisruptionReason
	// Candidates are the nodes to remove, in disruption-cost order.
	Candidates []*Candidate
	// Replacements to create and wait for before deleting the candidates.
	Replacements []*Replacement
	// Placements are where the candidates' pods go on other existing nodes (the rest go to
	// the replacements, Replacement.Claim.Pods).
	Placements []scheduler.Placement
	// Savings is the change in $/hour: the candidates' prices less the replacements'.
	Savings float64
	// Scores are the Balanced policy's scores of the command, one per Balanced NodePool of
	// its candidates (Move.Score and its shares).
	Scores []Move
	// TerminateFirst, when set, says why the command deletes its candidates without the
	// replacement they would need launched first (TerminateFirstStaticAtLimit), as Karpenter's
	// TerminateFirstReason.
	TerminateFirst string
	// Reboot: node repair reboots its one candidate in place (its policy's action is
	// RebootNode) instead of replacing it; the reboot controller (package reboot) carries it
	// out once the controller commits it.
	Reboot bool
}

// TerminateFirstStaticAtLimit is why a repair or a drift of a static NodePool's node terminates
// it first: the NodePool is at its limits.nodes, so a replacement cannot launch beside it
// (Karpenter's static-at-limit).
const TerminateFirstStaticAtLimit = "static-at-limit"

// staticAtLimitBlocked is why a static NodePool's node is not replaced when terminating it
// first is not allowed, in Karpenter's words.
const staticAtLimitBlocked = "static NodePool is at its node limit and cannot stage a replacement"

// Key identifies a command by method and nodes, to tell whether a later decision is the same.
func (c *Command) Key() string {
	names := c.NodeNames()
	sort.Strings(names)
	return fmt.Sprintf("%s|%s|%d", c.Method, strings.Join(names, ","), len(c.Replacements))
}

// NodeNames returns the candidates' node names.
func (c *Command) NodeNames() []string {
	out := make([]string, len(c.Candidates))
	for i, cand := range c.Candidates {
		out[i] = cand.Name()
	}
	return out
}

// Price is what the candidates cost, $/hour.
func (c *Command) Price() float64 {
	total := 0.0
	for _, cand := range c.Candidates {
		total += cand.Price
	}
	return total
}

// Message describes the command for Events and logs, such as "consolidating: replacing
// m5.2xlarge ($0.384/h) with m5.xlarge ($0.192/h)".
func (c *Command) Message() string {
	var what string
	if len(c.Candidates) == 1 {
		what = fmt.Sprintf("%s %s ($%.4f/h)", c.Candidates[0].InstanceType, c.Candidates[0].CapacityType, c.Candidates[0].Price)
	} else {
		what = fmt.Sprintf("%d nodes ($%.4f/h)", len(c.Candidates), c.Price())
	}
	var action string
	switch {
	case c.Reboot:
		action = "rebooting " + what
	case c.Method == MethodEmptiness:
		if len(c.Candidates) == 1 {
			return "deleting empty node"
		}
		return fmt.Sprintf("deleting %d empty nodes", len(c.Candidates))
	case len(c.Replacements) == 0:
		action = "deleting " + what
	default:
		with := make([]string, len(c.Replacements))
		for i, r := range c.Replacements {
			with[i] = fmt.Sprintf("%s %s ($%.4f/h)", r.InstanceType(), r.CapacityType(), r.Price)
		}
		action = fmt.Sprintf("replacing %s with %s", what, strings.Join(with, ", "))
	}
	switch c.Method {
	case MethodDrift, MethodStaticDrift:
		return "drifted: " + action
	case MethodRepair:
		if r := c.Candidates[0].Repair; r != nil {
			return fmt.Sprintf("unhealthy (%s %s): %s", r.Condition, r.Status, action)
		}
		return "unhealthy: " + action
	default:
		return "consolidating: " + action
	}
}

// Decision is the outcome of Decide.
type Decision struct {
	// Command to carry out, or nil.
	Command *Command
	// Consolidated are the consolidation methods that ran, found nothing and leave the
	// cluster consolidated for themselves (see decider.settled): the controller skips them
	// until the cluster changes (Input.Consolidated).
	Consolidated []string
	// Eligibility hashes what decides which nodes the consolidation methods may act on: each
	// candidate's name, whether it is consolidatable, empty, protected (and why) or drifted, the
	// budgets of its NodePool, and how many pods are pending.
	Eligibility uint64
	// Claims are the conditions to record, per initialized NodeClaim of a dynamic NodePool.
	Claims []ClaimStatus
	// Blocked are the nodes a method wanted that are protected.
	Blocked []Blocked
	// Unconsolidatable are the unprotected nodes consolidation passes over whatever the
	// cluster looks like (consolidation disabled, a WhenEmpty NodePool's node with pods, an
	// instance type without a price), and those single-node consolidation tried and could
	// neither delete nor replace, with why (Karpenter's Unconsolidatable events).
	Unconsolidatable []Blocked
	// PassedOver are the candidates consolidation passes over whatever the cluster looks like,
	// protected or not, and why: consolidation disabled or WhenEmpty with pods (as
	// Unconsolidatable says of unprotected ones), else their protection (as Blocked says of
	// those a method wanted). For Explanations; no Event reports it.
	PassedOver []Blocked
	// BlockedPools are the NodePools with nodes whose budgets allow no disruption for a reason
	// now (Karpenter's DisruptionBlocked events on NodePools).
	BlockedPools []PoolBlock
	// RepairHolds are the unhealthy nodes the unhealthy-fraction stop keeps from repair
	// (Karpenter's NodeRepairBlocked events).
	RepairHolds []RepairHold
	// Problems are configuration errors met (an invalid budget), which stop disruption of the
	// NodePool concerned.
	Problems []error
	// PodProblems are pods whose karpenter.sh/do-not-disrupt value is invalid and so ignored.
	PodProblems []PodProblem
	// TimedProtections are the pods of candidates protected by a karpenter.sh/do-not-disrupt
	// duration, with when it ends (or ended): Karpenter tells each pod in an Event.
	TimedProtections []TimedProtection
	// NextChange is the earliest moment after Now at which the same cluster may be decided
	// differently because time passed: a node's consolidateAfter running out, a
	// pod's do-not-disrupt duration ending, a scheduled budget opening or closing. Zero when no
	// such moment is known.
	NextChange time.Time
	// Eligible counts the nodes each disruption reason could act on now (drifted, empty and
	// underutilized candidates), budgets aside.
	Eligible map[karpv1.DisruptionReason]int
	// Budgets are the NodePools' disruption budgets now, per reason.
	Budgets []PoolBudget
	// Timeouts are the consolidation searches that reached their time limit (the controller
	// counts each in karpenter_voluntary_disruption_consolidation_timeouts_total).
	Timeouts []SearchTimeout
	// Evaluations are how long each method tried took, in order (the controller observes them
	// in karpenter_voluntary_disruption_decision_evaluation_duration_seconds). Real time, what
	// the evaluation cost: the one part of a Decision its Input does not determine.
	Evaluations []Evaluation
	// Moves are the consolidation moves evaluated, once per NodePool of their candidates (the
	// controller counts them in karpenter_consolidation_moves_total and observes their
	// karpenter_consolidation_score).
	Moves []Move
	// UnseenNodePools are the NodePools to try first in the next single-node consolidation,
	// for the next Input: those this one did not reach before its time limit; none once it
	// tried every candidate; the Input's when it did not run or found a command.
	UnseenNodePools []string

	// repackWaits: re-pack consolidation had candidates its budgets held back for now.
	repackWaits bool
}

// Evaluation is the time one disruption method took to evaluate the cluster.
type Evaluation struct {
	// Method is the method (MethodDrift, …).
	Method string
	// Reason is the disruption reason the method acts for.
	Reason karpv1.DisruptionReason
	// Took is how long it took, in real time.
	Took time.Duration
}

// Move is a consolidation move evaluated, as seen by one NodePool of its candidates.
type Move struct {
	// NodePool is the NodePool's name.
	NodePool string
	// Policy is the NodePool's consolidation policy.
	Policy karpv1.ConsolidationPolicy
	// Approved is false when the Balanced policy rejected the move.
	Approved bool
	// Score is the move's Balanced score (SavingsShare over DisruptionShare) for a Balanced
	// NodePool; negative when the move was not scored or the NodePool is not Balanced.
	Score float64
	// SavingsShare and DisruptionShare are, for a Balanced NodePool, the share of its cost the
	// move saves and the share of its reschedule cost it disrupts.
	SavingsShare, DisruptionShare float64
}

// PoolBudget is how many of a NodePool's nodes may start disrupting for a reason, and how many
// are disrupting (being deleted or not ready) and so consume its budgets.
type PoolBudget struct {
	// NodePool is the NodePool's name.
	NodePool string
	// Reason is the disruption reason.
	Reason karpv1.DisruptionReason
	// Allowed is how many more may start disrupting (Unbounded when no budget applies).
	Allowed int
	// Disrupting is how many are disrupting now.
	Disrupting int
}

// PoolBlock is a NodePool whose budgets allow no disruption for a reason.
type PoolBlock struct {
	// NodePool is the NodePool's name.
	NodePool string
	// Reason is the disruption reason its budgets block.
	Reason karpv1.DisruptionReason
}

// PodProblem is a pod annotation the decision ignored, and why.
type PodProblem struct {
	// Pod carries the annotation.
	Pod *corev1.Pod
	// Err says what is wrong with it.
	Err error
}

// TimedProtection is a pod's karpenter.sh/do-not-disrupt duration.
type TimedProtection struct {
	// Pod carries the annotation.
	Pod *corev1.Pod
	// Until is when the protection ends: the pod's start plus the duration.
	Until time.Time
}

// Decide evaluates the cluster and returns at most one command: the first that repair (with
// Options.Repair), emptiness, static drift, drift, multi-node, single-node then re-pack
// consolidation (with Input.Packing) find. It is deterministic
// (but for Decision.Evaluations, real time), records nothing, and does not modify its input.
func Decide(in Input) *Decision {
	d := newDecider(in)
	for _, np := range d.pools {
		for _, b := range np.Spec.Disruption.Budgets {
			d.wake(budgetChangesAt(b, in.Now))
		}
	}
	out := &Decision{Claims: d.statuses, Blocked: d.blocked, Problems: d.problems, PodProblems: d.invalid, TimedProtections: d.timed, NextChange: d.next, BlockedPools: d.blockedPools()}
	out.Eligibility = d.eligibility()
	for _, m := range []struct {
		name   string
		reason karpv1.DisruptionReason
		decide func() *Command
	}{
		{MethodRepair, karpv1.DisruptionReasonUnhealthy, d.repair},
		{MethodEmptiness, karpv1.DisruptionReasonEmpty, d.emptiness},
		{MethodStaticDrift, karpv1.DisruptionReasonDrifted, d.staticDrift},
		{MethodDrift, karpv1.DisruptionReasonDrifted, d.drift},
		{MethodMultiNode, karpv1.DisruptionReasonUnderutilized, d.multiNode},
		{MethodSingleNode, karpv1.DisruptionReasonUnderutilized, d.singleNode},
		{MethodRepack, karpv1.DisruptionReasonUnderutilized, d.repack},
	} {
		start := time.Now() // real time: the evaluation's cost, not the cluster's clock
		var cmd *Command
		settledAt, settled := in.Consolidated[m.name]
		skipped := settled && settledAt == out.Eligibility // evaluated as Karpenter's: nothing to do
		if !skipped {
			cmd = m.decide()
		}
		out.Evaluations = append(out.Evaluations, Evaluation{Method: m.name, Reason: m.reason, Took: time.Since(start)})
		if cmd != nil {
			out.Command = cmd
			break
		}
		if !skipped && d.settled(m.name) {
			out.Consolidated = append(out.Consolidated, m.name)
		}
	}
	out.Unconsolidatable, out.RepairHolds, out.Blocked, out.PassedOver = d.unconsolidatable, d.repairHolds, d.blocked, d.passedOver
	out.NextChange, out.repackWaits = d.next, d.repackWaits // a method may have added a moment
	out.Timeouts, out.UnseenNodePools, out.Moves = d.timeouts, d.unseenPools, d.moves
	out.Eligible = map[karpv1.DisruptionReason]int{
		karpv1.DisruptionReasonDrifted:       len(d.driftable()) + len(d.staticDriftable()),
		karpv1.DisruptionReasonEmpty:         len(d.empty()),
		karpv1.DisruptionReasonUnderutilized: len(d.underutilized()),
	}
	if d.opts.Repair != nil {
		out.Eligible[karpv1.DisruptionReasonUnhealthy] = d.repairable()
	}
	out.Budgets = d.poolBudgets()
	out.Problems = d.problems // last: reading the budgets may add some
	return out
}

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
		c.Price = nodePrice(sn, append([][]*cloudprovider.InstanceType{in.InstanceTypes[np.Name]}, allTypes...)...)
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

// replaceEach is drift's strategy: delete the empty nodes together, else
// replace the first node whose pods can all be placed (on other nodes or new ones).
func (d *decider) replaceEach(method string, reason karpv1.DisruptionReason, cands []*Candidate) *Command {
	var empty []*Candidate
	for _, c := range cands {
		if len(c.Pods) == 0 {
			empty = append(empty, c)
		}
	}
	if len(empty) > 0 {
		return &Command{Method: method, Reason: reason, Candidates: empty, Savings: sumPrices(empty)}
	}
	for _, c := range cands {
		if cmd, _ := d.simulate(method, reason, []*Candidate{c}, -1, false); cmd != nil {
			return cmd
		}
	}
	return nil
}

func (d *decider) drift() *Command {
	cands := d.withinBudget(d.driftable(), karpv1.DisruptionReasonDrifted, 0)
	return d.replaceEach(MethodDrift, karpv1.DisruptionReasonDrifted, cands)
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

// staticDriftable are the drifted nodes of static NodePools static drift may act on.
func (d *decider) staticDriftable() []*Candidate {
	var out []*Candidate
	for _, c := range d.static {
		if c.Drifted != "" && c.mayDrift() {
			out = append(out, c)
		}
	}
	return out
}

// staticDrift replaces a drifted node of a static NodePool by a NodeClaim of its template,
// launched first, as Karpenter v1.15.0's StaticDrift (disruption/staticdrift.go): within the
// NodePool's Drifted budget, not while it has more claims than its replicas (a scale-down is
// under way). When the replacement would take the NodePool past limits.nodes, the node is
// deleted first with Options.TerminateFirstDrift (the NodePool Ready and not being deleted;
// the static NodePool controller refills it), else blocked, as Karpenter's
// unreplaceableCommands. The replacement is not sized to the pods (the NodePool's nodes are
// what its template says); the static NodePool controller counts the node being replaced as
// pending disruption meanwhile. One node at a time, as every command here.
func (d *decider) staticDrift() *Command {
	for _, c := range d.staticDriftable() {
		np := c.NodePool
		if d.budget(np, karpv1.DisruptionReasonDrifted) == 0 {
			continue
		}
		active := int64(d.staticActive[np.Name])
		if active > *np.Spec.Replicas {
			continue
		}
		if limit, ok := np.Spec.Limits[nodepool.ResourceNodes]; ok && active+1 > limit.Value() {
			if d.opts.TerminateFirstDrift && nodepool.IsReady(np) && np.DeletionTimestamp == nil {
				return &Command{Method: MethodStaticDrift, Reason: karpv1.DisruptionReasonDrifted, Candidates: []*Candidate{c}, TerminateFirst: TerminateFirstStaticAtLimit}
			}
			d.blocked = append(d.blocked, Blocked{Node: c.Name(), NodeClaim: c.NodeClaim.Name, Reason: staticAtLimitBlocked})
			continue
		}
		r, err := staticReplacement(np)
		if err != nil {
			d.problems = append(d.problems, err)
			continue
		}
		return &Command{Method: MethodStaticDrift, Reason: karpv1.DisruptionReasonDrifted, Candidates: []*Candidate{c},
			Replacements: []*Replacement{r}}
	}
	return nil
}

// staticReplacement is a NodeClaim of a static NodePool's template, the replacement of one of
// its nodes: not sized to pods, as the static NodePool controller launches them.
func staticReplacement(np *karpv1.NodePool) (*Replacement, error) {
	reqs, err := nodepool.ClaimRequirements(np)
	if err != nil {
		return nil, err
	}
	claim := &scheduler.Claim{NodePool: np.Name, Requirements: reqs, Taints: np.Spec.Template.Spec.Taints, Labels: np.Spec.Template.Labels}
	return &Replacement{NodePool: np, Claim: claim}, nil
}

// static reports whether the command disrupts nodes of a static NodePool (static drift, or
// repair of such a node): the controller marks them before their replacement exists.
func (c *Command) static() bool {
	for _, cand := range c.Candidates {
		if nodepool.IsStatic(cand.NodePool) {
			return true
		}
	}
	return false
}

func (d *decider) emptiness() *Command {
	cands := d.withinBudget(d.empty(), karpv1.DisruptionReasonEmpty, 0)
	if len(cands) == 0 {
		return nil
	}
	return &Command{Method: MethodEmptiness, Reason: karpv1.DisruptionReasonEmpty, Candidates: cands, Savings: sumPrices(cands)}
}

// driftable are the drifted candidates drift may act on.
func (d *decider) driftable() []*Candidate {
	return d.filter(func(c *Candidate) bool { return c.Drifted != "" && c.mayDrift() })
}

// empty are the consolidatable, unprotected candidates that are empty (Candidate.IsEmpty), but
// for those holding a CapacityBuffer's room.
func (d *decider) empty() []*Candidate {
	return d.filter(func(c *Candidate) bool {
		return c.Consolidatable && c.IsEmpty() && c.protected() == "" && !d.holdsBuffer[c.Name()]
	})
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

// noCheaperNode is why consolidation cannot replace nodes when no replacement is cheaper
// enough (Karpenter's words).
const noCheaperNode = "Can't replace with a cheaper node"

// spotToSpotDisabled is why consolidation does not replace spot nodes with a spot node while
// the SpotToSpotConsolidation gate is off (Karpenter's words).
const spotToSpotDisabled = "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"

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

// MinInstanceTypesForSpotToSpot is how many cheaper instance types a single spot node's
// replacement needs, and how many of the cheapest it offers the launch, as Karpenter's
// MinInstanceTypesForSpotToSpotConsolidation: a launch that picks any of them by availability
// is then never followed at once by another consolidation towards the cheapest.
const MinInstanceTypesForSpotToSpot = 15

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
	pools    []*scheduler.NodePool
	limits   map[string]karpv1.Limits
	used     map[string]corev1.ResourceList // capacity of each limited NodePool's nodes
	capacity map[string]corev1.ResourceList // capacity per node name
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

// whatIfWorkers is how many what-ifs single-node consolidation runs at once.
const whatIfWorkers = 2

func newSimulator(in Input, pools map[string]*karpv1.NodePool, pdbs *state.PDBIndex) *simulator {
	s := &simulator{volumes: in.VolumeRequirements, limits: map[string]karpv1.Limits{}, used: map[string]corev1.ResourceList{}, capacity: map[string]corev1.ResourceList{},
		infos: [whatIfWorkers]*scheduler.PodInfos{in.PodInfos, in.SecondPodInfos}, launching: map[string]string{}, pending: in.Pending}
	if s.infos[0] == nil {
		s.infos[0] = scheduler.NewPodInfos()
	}
	s.daemons = state.DaemonPods(in.DaemonSets)
	s.namespaces = in.NamespaceLabels
	s.buffer = in.BufferPods
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		np := pools[name]
		if !nodepool.IsReady(np) {
			continue
		}
		pool, err := state.SchedulerNodePool(np, in.InstanceTypes[np.Name])
		if err != nil {
			continue
		}
		s.pools = append(s.pools, pool)
		if len(np.Spec.Limits) > 0 {
			s.limits[np.Name] = np.Spec.Limits
			s.used[np.Name] = corev1.ResourceList{}
		}
	}
	var launching []*scheduler.Node
	for _, sn := range in.Nodes {
		if sn.NodeClaim != nil {
			if used, ok := s.used[sn.NodePool()]; ok {
				capacity := sn.LimitCapacity(in.InstanceTypes[sn.NodePool()])
				s.capacity[sn.Name()] = capacity
				s.used[sn.NodePool()] = scheduling.Merge(used, capacity)
			}
		}
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
		if limits, ok := s.limits[p.Name]; ok {
			pool.Remaining = s.remaining(p.Name, limits, cands)
		}
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

// remaining is what a NodePool's limits allow once cands are gone.
func (s *simulator) remaining(pool string, limits karpv1.Limits, cands []*Candidate) corev1.ResourceList {
	used := s.used[pool].DeepCopy()
	for _, c := range cands {
		if c.NodePool.Name != pool {
			continue
		}
		for name, q := range s.capacity[c.Name()] {
			u := used[name]
			u.Sub(q)
			used[name] = u
		}
	}
	return state.Remaining(limits, used)
}
