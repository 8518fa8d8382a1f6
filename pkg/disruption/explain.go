package disruption

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// NodeExplanation says why disruption leaves a node as it is: the reason Karpenter's rules
// give (the words of its Unconsolidatable and DisruptionBlocked events, from the same decision),
// and what would let disruption act on the node.
type NodeExplanation struct {
	// Node and NodeClaim name the node; NodePool is its NodePool's name.
	Node, NodeClaim, NodePool string
	// Reason is why the node stays, or what the next pass does with it (Next).
	Reason string
	// Change is what would let disruption act on the node, in a user's terms (a feature gate,
	// a NodePool field, an annotation); empty when nothing a user sets would.
	Change string
	// Next is true when the next pass acts on the node: the cluster was not settled.
	Next bool
}

// Explain decides, acting on nothing, what a pass would do with the cluster as it is at now,
// with every method tried (none skipped because the cluster had not changed since it found
// nothing), and says for each node of a NodePool why it stays. The simulator calls it at the end
// of a run, when nothing runs after it: taking the pass's input records pod events on the
// NodeClaims, as a pass does.
func (c *Controller) Explain(ctx context.Context, now time.Time) ([]NodeExplanation, error) {
	in, err := c.input(ctx, now)
	if err != nil {
		return nil, err
	}
	in.Consolidated = nil
	return Decide(*in).Explanations(*in), nil
}

// Explanations says, for each registered node of a NodePool in the decision's input that is not
// being deleted, why the decision leaves it, by node name.
func (d *Decision) Explanations(in Input) []NodeExplanation {
	next := map[string]bool{}
	if d.Command != nil {
		for _, c := range d.Command.Candidates {
			next[c.Name()] = true
		}
	}
	reasons := map[string]string{}
	for _, list := range [][]Blocked{d.Unconsolidatable, d.Blocked} { // a protection over a search's failure
		for _, b := range list {
			if b.Method != MethodRepair {
				reasons[b.Node] = b.Reason
			}
		}
	}
	passedOver := map[string]string{}
	for _, b := range d.PassedOver {
		passedOver[b.Node] = b.Reason
	}
	blockedPools := map[string][]string{}
	for _, b := range d.BlockedPools {
		blockedPools[b.NodePool] = append(blockedPools[b.NodePool], string(b.Reason))
	}
	waiting := map[string]string{}
	for _, s := range d.Claims {
		if !s.Consolidatable {
			waiting[s.NodeClaim] = s.ConsolidatableMessage
		}
	}
	pools := map[string]*karpv1.NodePool{}
	for _, np := range in.NodePools {
		pools[np.Name] = np
	}
	var out []NodeExplanation
	for _, sn := range in.Nodes {
		if sn.Node == nil || sn.NodeClaim == nil || sn.MarkedForDeletion {
			continue
		}
		e := NodeExplanation{Node: sn.Node.Name, NodeClaim: sn.NodeClaim.Name, NodePool: sn.NodePool()}
		switch {
		case next[e.Node]:
			e.Reason, e.Next = fmt.Sprintf("the next pass disrupts it (%s: %s)", d.Command.Method, d.Command.Reason), true
		case reasons[e.Node] != "":
			e.Reason = reasons[e.Node]
			e.Change = changeFor(e.Reason, e.NodePool)
		case len(blockedPools[e.NodePool]) > 0:
			e.Reason = fmt.Sprintf("NodePool %q's disruption budgets allow no disruption now for %s", e.NodePool, strings.Join(blockedPools[e.NodePool], ", "))
			e.Change = fmt.Sprintf("a budget of NodePool %q (spec.disruption.budgets) that allows it", e.NodePool)
		case passedOver[e.Node] != "":
			e.Reason = passedOver[e.Node]
			e.Change = changeFor(e.Reason, e.NodePool)
		case waiting[e.NodeClaim] != "":
			e.Reason = "not consolidatable yet: " + waiting[e.NodeClaim]
			if np := pools[e.NodePool]; np != nil && np.Spec.Disruption.ConsolidateAfter.IsNever() {
				e.Change = fmt.Sprintf("a consolidateAfter other than Never in NodePool %q", e.NodePool)
			}
		case d.Command != nil:
			e.Reason = "not looked at yet: the next pass acts on other nodes first"
		default:
			e.Reason = "consolidation finds nothing cheaper that holds its pods"
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// changeFor says what would let disruption act on a node it passes over for reason (one of the
// reasons this package gives, in Karpenter's words), or "" when nothing a user sets would.
func changeFor(reason, nodePool string) string {
	switch {
	case reason == spotToSpotDisabled:
		return fmt.Sprintf("the SpotToSpotConsolidation feature gate (FEATURE_GATES=SpotToSpotConsolidation=true; in a workload, featureGates: {SpotToSpotConsolidation: true}), or on-demand capacity allowed in NodePool %q", nodePool)
	case strings.HasPrefix(reason, "Pdb prevents pod evictions"):
		return "a PodDisruptionBudget that allows an eviction"
	case strings.HasPrefix(reason, "Pod has "):
		return fmt.Sprintf("the pod without its %q annotation (or a duration that ends)", karpv1.DoNotDisruptAnnotationKey)
	case strings.HasPrefix(reason, "Disruption is blocked through"):
		return fmt.Sprintf("the node and its NodeClaim without their %q annotation", karpv1.DoNotDisruptAnnotationKey)
	case strings.HasSuffix(reason, "has consolidation disabled"):
		return fmt.Sprintf("a consolidateAfter other than Never in NodePool %q", nodePool)
	case strings.HasSuffix(reason, "but node is not empty"):
		return fmt.Sprintf("consolidationPolicy: WhenEmptyOrUnderutilized in NodePool %q", nodePool)
	case reason == staticAtLimitBlocked:
		return fmt.Sprintf("a higher limits.nodes in NodePool %q, or the TerminateFirstDrift / TerminateFirstRepair gate", nodePool)
	case strings.HasPrefix(reason, "Not all pods would schedule"):
		return "room elsewhere for the pods named, within their constraints"
	}
	return ""
}
