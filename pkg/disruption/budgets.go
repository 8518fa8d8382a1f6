package disruption

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Unbounded is what AllowedDisruptions returns when no active budget applies to a reason.
const Unbounded = math.MaxInt32

// DefaultBudget is the budget of a NodePool that lists none: 10% of its nodes.
var DefaultBudget = karpv1.Budget{Nodes: "10%"}

// BudgetNodes returns how many nodes a budget allows disrupting among total: a count, or a
// percentage of total rounded up, as Karpenter does (10% of 3 nodes is 1).
func BudgetNodes(b karpv1.Budget, total int) (int, error) {
	text := strings.TrimSpace(b.Nodes)
	if pct, ok := strings.CutSuffix(text, "%"); ok {
		p, err := strconv.Atoi(pct)
		if err != nil || p < 0 || p > 100 {
			return 0, fmt.Errorf("budget nodes %q: invalid percentage", b.Nodes)
		}
		return (total*p + 99) / 100, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("budget nodes %q: want a count or a percentage", b.Nodes)
	}
	return n, nil
}

// BudgetActive reports whether a budget applies at now: it has no schedule, or now falls in
// [firing, firing+duration) of its latest firing.
func BudgetActive(b karpv1.Budget, now time.Time) (bool, error) {
	if b.Schedule == nil {
		return true, nil
	}
	if b.Duration == nil {
		return false, fmt.Errorf("budget schedule %q has no duration", *b.Schedule)
	}
	s, err := ParseSchedule(*b.Schedule)
	if err != nil {
		return false, err
	}
	return s.ActiveAt(now, b.Duration.Duration), nil
}

// budgetChangesAt is the next moment after now at which a scheduled budget opens or closes,
// within a year; zero for a budget without a schedule or an invalid one.
func budgetChangesAt(b karpv1.Budget, now time.Time) time.Time {
	if b.Schedule == nil || b.Duration == nil || b.Duration.Duration <= 0 {
		return time.Time{}
	}
	s, err := ParseSchedule(*b.Schedule)
	if err != nil {
		return time.Time{}
	}
	var next time.Time
	if opens, ok := s.Next(now, 366*24*time.Hour); ok {
		next = opens
	}
	if opened, ok := s.Prev(now, b.Duration.Duration); ok {
		if closes := opened.Add(b.Duration.Duration); next.IsZero() || closes.Before(next) {
			next = closes
		}
	}
	return next
}

func budgetApplies(b karpv1.Budget, reason karpv1.DisruptionReason) bool {
	if len(b.Reasons) == 0 {
		return true
	}
	for _, r := range b.Reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// AllowedDisruptions returns how many more of a NodePool's nodes may start disrupting for
// reason: the least, over the active budgets that apply to reason, of what the budget allows
// less the nodes already disrupting (never below zero). total counts the NodePool's
// initialized nodes, disrupting those of them being deleted or NotReady, as Karpenter counts.
// A NodePool without budgets has DefaultBudget. Unbounded means no active budget applies. An
// invalid budget allows nothing, and says why.
func AllowedDisruptions(np *karpv1.NodePool, reason karpv1.DisruptionReason, total, disrupting int, now time.Time) (int, error) {
	budgets := np.Spec.Disruption.Budgets
	if len(budgets) == 0 {
		budgets = []karpv1.Budget{DefaultBudget}
	}
	allowed := Unbounded
	for _, b := range budgets {
		if !budgetApplies(b, reason) {
			continue
		}
		active, err := BudgetActive(b, now)
		if err != nil {
			return 0, fmt.Errorf("nodepool %s: %w", np.Name, err)
		}
		if !active {
			continue
		}
		n, err := BudgetNodes(b, total)
		if err != nil {
			return 0, fmt.Errorf("nodepool %s: %w", np.Name, err)
		}
		allowed = min(allowed, max(0, n-disrupting))
	}
	return allowed, nil
}
