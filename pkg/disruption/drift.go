package disruption

import (
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
)

// This file holds the drift methods: drift of NodePool nodes (each drifted node replaced, the
// empty ones deleted together) and of static NodePools' nodes.

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

// driftable are the drifted candidates drift may act on.
func (d *decider) driftable() []*Candidate {
	return d.filter(func(c *Candidate) bool { return c.Drifted != "" && c.mayDrift() })
}
