package disruption

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
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

// method is one way of disrupting nodes: the reason it disrupts for, and what it decides from
// one decision's state (nil for nothing to do).
type method struct {
	name   string
	reason karpv1.DisruptionReason
	decide func(*decider) *Command
}

// methods are the disruption methods in the order Decide tries them, Karpenter's order with
// the static NodePools' drift beside drift and re-pack after single-node consolidation. Each
// lives in a file of its own: repair.go, emptiness.go, drift.go, consolidation.go, repack.go.
var methods = []method{
	{MethodRepair, karpv1.DisruptionReasonUnhealthy, (*decider).repair},
	{MethodEmptiness, karpv1.DisruptionReasonEmpty, (*decider).emptiness},
	{MethodStaticDrift, karpv1.DisruptionReasonDrifted, (*decider).staticDrift},
	{MethodDrift, karpv1.DisruptionReasonDrifted, (*decider).drift},
	{MethodMultiNode, karpv1.DisruptionReasonUnderutilized, (*decider).multiNode},
	{MethodSingleNode, karpv1.DisruptionReasonUnderutilized, (*decider).singleNode},
	{MethodRepack, karpv1.DisruptionReasonUnderutilized, (*decider).repack},
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
	for _, m := range methods {
		start := time.Now() // real time: the evaluation's cost, not the cluster's clock
		var cmd *Command
		settledAt, settled := in.Consolidated[m.name]
		skipped := settled && settledAt == out.Eligibility // evaluated as Karpenter's: nothing to do
		if !skipped {
			cmd = m.decide(d)
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

// noCheaperNode is why consolidation cannot replace nodes when no replacement is cheaper
// enough (Karpenter's words).
const noCheaperNode = "Can't replace with a cheaper node"

// spotToSpotDisabled is why consolidation does not replace spot nodes with a spot node while
// the SpotToSpotConsolidation gate is off (Karpenter's words).
const spotToSpotDisabled = "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"

// MinInstanceTypesForSpotToSpot is how many cheaper instance types a single spot node's
// replacement needs, and how many of the cheapest it offers the launch, as Karpenter's
// MinInstanceTypesForSpotToSpotConsolidation: a launch that picks any of them by availability
// is then never followed at once by another consolidation towards the cheapest.
const MinInstanceTypesForSpotToSpot = 15

// whatIfWorkers is how many what-ifs single-node consolidation runs at once.
const whatIfWorkers = 2
