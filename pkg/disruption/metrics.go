package disruption

import (
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/packing"
)

// recordPacking sets the packing gauges: the fleet's (NodePool "") and each NodePool's.
func recordPacking(r *packing.Result) {
	figures := []metrics.PackingFigures{{Ratio: r.Ratio(), Repacked: r.Repacked, Bound: r.Bound}}
	for _, p := range r.Pools {
		figures = append(figures, metrics.PackingFigures{NodePool: p.NodePool, Ratio: p.Ratio(), Repacked: p.Repacked, Bound: p.Bound})
	}
	metrics.SetPacking(figures)
}

// recordDecision counts a command that starts being carried out.
func recordDecision(cmd *Command) {
	decision := decisionOf(cmd)
	metrics.DisruptionDecision(decision, metrics.DisruptionReason(cmd.Reason), consolidationType(cmd.Method))
	seen := map[string]bool{}
	for _, c := range cmd.Candidates {
		if !seen[c.NodePool.Name] {
			seen[c.NodePool.Name] = true
			metrics.NodePoolDisruptionDecision(c.NodePool.Name, decision, metrics.DisruptionReason(cmd.Reason), consolidationType(cmd.Method))
			if cmd.TerminateFirst != "" {
				metrics.TerminateFirstDecision(c.NodePool.Name, metrics.DisruptionReason(cmd.Reason), cmd.TerminateFirst)
			}
		}
	}
}

// decisionOf is the decision label of a command: replace when it launches replacements,
// terminate-first when it deletes without the replacement its candidates need, reboot when it
// reboots them.
func decisionOf(cmd *Command) string {
	switch {
	case cmd.Reboot:
		return metrics.DecisionReboot
	case len(cmd.Replacements) > 0:
		return metrics.DecisionReplace
	case cmd.TerminateFirst != "":
		return metrics.DecisionTerminateFirst
	}
	return metrics.DecisionDelete
}

// consolidationType is the consolidation_type label of a method: empty for drift, which is not
// consolidation.
func consolidationType(method string) string {
	switch method {
	case MethodEmptiness:
		return metrics.ConsolidationTypeEmpty
	case MethodSingleNode:
		return metrics.ConsolidationTypeSingle
	case MethodMultiNode, MethodRepack: // re-pack is ours: Karpenter's label for many nodes
		return metrics.ConsolidationTypeMulti
	}
	return ""
}

// recordRepaired counts a node repair deleted, as Karpenter's queue does for repair
// (recordCandidateDisrupted): karpenter_nodeclaims_disrupted_total and
// karpenter_pods_disruption_initiated_total with reason unhealthy, and
// karpenter_nodeclaims_unhealthy_disrupted_total by the condition repaired. The termination
// mode is the drain bound repair applied: forceful when zero, eventual when positive, else
// the NodeClaim's own.
func recordRepaired(c *Candidate) {
	mode := metrics.TerminationMode(c.NodeClaim)
	if b := c.DrainBound; b != nil {
		mode = metrics.TerminationModeEventual
		if *b <= 0 {
			mode = metrics.TerminationModeForceful
		}
	}
	metrics.NodeClaimRepaired(string(c.Repair.Condition), c.NodePool.Name, nodeLabel(c.StateNode, karpv1.CapacityTypeLabelKey), c.NodeClaim.Status.ImageID, mode, len(c.Pods))
}

// recordDecisionGauges sets the gauges of a disruption pass: the nodes eligible per reason and
// each NodePool's budgets.
func recordDecisionGauges(decision *Decision) {
	metrics.SetEligibleNodes(decision.Eligible)
	metrics.ForgetNodePoolBudgets()
	for _, b := range decision.Budgets {
		metrics.SetNodePoolBudget(b.NodePool, metrics.DisruptionReason(b.Reason), b.Allowed, b.Disrupting)
	}
}

// recordEvaluation records what a pass's searches measured: each method's evaluation time,
// the consolidation moves evaluated with their Balanced scores, and the consolidation searches
// that reached their time limit.
//
// Re-pack consolidation is ours: its searches are left out of Karpenter's evaluation times and
// timeouts, which keep counting Karpenter's methods only (its commands do count, as multi-node
// consolidation's).
func recordEvaluation(decision *Decision) {
	for _, e := range decision.Evaluations {
		if e.Method != MethodRepack {
			metrics.ObserveDisruptionEvaluation(consolidationType(e.Method), metrics.DisruptionReason(e.Reason), e.Took)
		}
	}
	for _, m := range decision.Moves {
		metrics.ConsolidationMove(m.NodePool, string(m.Policy), m.Approved)
		if m.Score >= 0 {
			metrics.ObserveConsolidationScore(m.NodePool, string(m.Policy), m.Approved, m.Score)
		}
	}
	for _, t := range decision.Timeouts {
		if t.Method != MethodRepack {
			metrics.ConsolidationTimedOut(consolidationType(t.Method))
		}
	}
}
