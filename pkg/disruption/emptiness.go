package disruption

import (
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// This file holds the emptiness method: empty nodes deleted together, within budget.

// emptiness deletes the empty candidates that consolidation may act on, as many as the
// budgets for Empty allow, together and without replacements.
func (d *decider) emptiness() *Command {
	cands := d.withinBudget(d.empty(), karpv1.DisruptionReasonEmpty, 0)
	if len(cands) == 0 {
		return nil
	}
	return &Command{Method: MethodEmptiness, Reason: karpv1.DisruptionReasonEmpty, Candidates: cands, Savings: sumPrices(cands)}
}

// empty are the consolidatable, unprotected candidates that are empty (Candidate.IsEmpty), but
// for those holding a CapacityBuffer's room.
func (d *decider) empty() []*Candidate {
	return d.filter(func(c *Candidate) bool {
		return c.Consolidatable && c.IsEmpty() && c.protected() == "" && !d.holdsBuffer[c.Name()]
	})
}
