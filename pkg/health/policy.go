package health

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// Bounds of RepairPolicy.Priority, and the aging constant of the repair score, Karpenter's.
const (
	// MinPriority is the lowest priority a repair policy may have.
	MinPriority = 0
	// MaxPriority is the highest priority a repair policy may have.
	MaxPriority = 100
	// AgingConstant is how long past its toleration a node waits to earn one rank of score:
	// it then overtakes a freshly eligible node one rank above it.
	AgingConstant = 30 * time.Minute
)

type policyKey struct {
	conditionType corev1.NodeConditionType
	status        corev1.ConditionStatus
}

type compiledPolicy struct {
	cloudprovider.RepairPolicy
	reason *regexp.Regexp
}

// Matcher matches Nodes against a validated repair policy set. It is safe for concurrent use.
type Matcher struct {
	// specific are the policies with a reason pattern, by condition type and status; a key
	// with an empty list is one only the default names.
	specific map[policyKey][]compiledPolicy
	fallback compiledPolicy
	ranks    map[int]int
}

// NewMatcher validates and compiles the policies, or says everything wrong with them.
func NewMatcher(policies []cloudprovider.RepairPolicy) (*Matcher, error) {
	if len(policies) == 0 {
		return nil, errors.New("node repair requires the cloud provider to define repair policies, but it defines none")
	}
	m := &Matcher{specific: map[policyKey][]compiledPolicy{}, ranks: denseRanks(policies)}
	var errs []error
	haveFallback := false
	for i, p := range policies {
		key := policyKey{p.ConditionType, p.ConditionStatus}
		if err := validate(p); err != nil {
			errs = append(errs, fmt.Errorf("repair policy %d (%s %s): %w", i, p.ConditionType, p.ConditionStatus, err))
			continue
		}
		if _, ok := m.specific[key]; !ok {
			m.specific[key] = nil
		}
		if p.ReasonRegex == "" {
			if haveFallback {
				errs = append(errs, fmt.Errorf("repair policy %d (%s %s): a second default policy (no reason pattern), besides %s %s", i, p.ConditionType, p.ConditionStatus, m.fallback.ConditionType, m.fallback.ConditionStatus))
				continue
			}
			m.fallback, haveFallback = compiledPolicy{RepairPolicy: p}, true
			continue
		}
		re, err := regexp.Compile(p.ReasonRegex)
		if err != nil {
			errs = append(errs, fmt.Errorf("repair policy %d (%s %s): invalid reason pattern: %w", i, p.ConditionType, p.ConditionStatus, err))
			continue
		}
		m.specific[key] = append(m.specific[key], compiledPolicy{RepairPolicy: p, reason: re})
	}
	switch {
	case !haveFallback && len(errs) == 0:
		errs = append(errs, errors.New("repair policies must define one default policy (no reason pattern)"))
	case haveFallback && m.fallback.Action != cloudprovider.ReplaceNode:
		errs = append(errs, fmt.Errorf("the default repair policy (%s %s) must use action %s, not %q", m.fallback.ConditionType, m.fallback.ConditionStatus, cloudprovider.ReplaceNode, m.fallback.Action))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid repair policies: %w", errors.Join(errs...))
	}
	return m, nil
}

// validate checks one policy's fields.
func validate(p cloudprovider.RepairPolicy) error {
	var errs []error
	if p.ConditionType == "" {
		errs = append(errs, errors.New("empty condition type"))
	}
	switch p.ConditionStatus {
	case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
	default:
		errs = append(errs, fmt.Errorf("condition status %q is not True, False or Unknown", p.ConditionStatus))
	}
	if p.TolerationDuration < 0 {
		errs = append(errs, fmt.Errorf("negative toleration %s", p.TolerationDuration))
	}
	if p.TerminationGracePeriod != nil && *p.TerminationGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("negative termination grace period %s", *p.TerminationGracePeriod))
	}
	if p.Priority < MinPriority || p.Priority > MaxPriority {
		errs = append(errs, fmt.Errorf("priority %d outside [%d, %d]", p.Priority, MinPriority, MaxPriority))
	}
	if p.Action != cloudprovider.ReplaceNode && p.Action != cloudprovider.RebootNode {
		errs = append(errs, fmt.Errorf("unsupported action %q", p.Action))
	}
	return errors.Join(errs...)
}

// denseRanks maps each priority of the policies to its rank among their distinct priorities,
// 0 for the lowest.
func denseRanks(policies []cloudprovider.RepairPolicy) map[int]int {
	var priorities []int
	for _, p := range policies {
		if !slices.Contains(priorities, p.Priority) {
			priorities = append(priorities, p.Priority)
		}
	}
	slices.Sort(priorities)
	ranks := make(map[int]int, len(priorities))
	for rank, p := range priorities {
		ranks[p] = rank
	}
	return ranks
}

// Match is a policy that matches one of a Node's conditions, whatever the time.
type Match struct {
	// Policy is the policy matched.
	Policy cloudprovider.RepairPolicy
	// Condition is the Node's condition it matched (type, status, reason).
	Condition corev1.NodeCondition
	// EligibleAt is when the policy applies: its toleration after the condition's
	// lastTransitionTime, or after the Node's creation when that is later.
	EligibleAt time.Time
	rank       int
}

// Matches reports whether a policy names the condition's type and status, whatever its reason
// and however long it has held: a Node with such a condition counts as unhealthy for the
// unhealthy-fraction stop.
func (m *Matcher) Matches(c corev1.NodeCondition) bool {
	_, ok := m.specific[policyKey{c.Type, c.Status}]
	return ok
}

// Unhealthy reports whether one of the Node's conditions Matches.
func (m *Matcher) Unhealthy(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Status.Conditions, m.Matches)
}

// Match returns every policy that matches one of the Node's conditions, whatever the time.
func (m *Matcher) Match(node *corev1.Node) []Match {
	created := node.CreationTimestamp.UTC()
	var out []Match
	for _, c := range node.Status.Conditions {
		policies, ok := m.specific[policyKey{c.Type, c.Status}]
		if !ok {
			continue
		}
		since := c.LastTransitionTime.UTC()
		if since.Before(created) {
			since = created // a condition cannot predate its Node
		}
		cond := corev1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason}
		matched := false
		for _, p := range policies {
			if p.reason.MatchString(c.Reason) {
				matched = true
				out = append(out, m.match(p.RepairPolicy, cond, since))
			}
		}
		if !matched {
			out = append(out, m.match(m.fallback.RepairPolicy, cond, since))
		}
	}
	return out
}

func (m *Matcher) match(p cloudprovider.RepairPolicy, cond corev1.NodeCondition, since time.Time) Match {
	return Match{Policy: p, Condition: cond, EligibleAt: since.Add(p.TolerationDuration), rank: m.ranks[p.Priority]}
}

// Result is the repair decision for one Node at a time: what the matches eligible then say.
type Result struct {
	// Action is what repair does; empty when no match is eligible.
	Action cloudprovider.RepairAction
	// Condition, Status and Reason are those of the condition whose policy chose Action;
	// ReasonRegex is that policy's pattern and Fallback whether it is the set's default.
	Condition   corev1.NodeConditionType
	Status      corev1.ConditionStatus
	Reason      string
	ReasonRegex string
	Fallback    bool
	// EligibleAt is when that policy became eligible.
	EligibleAt time.Time
	// TerminationGracePeriod is the shortest drain bound of the eligible matches (nil when
	// none sets one), and TerminationGracePeriodCondition the condition that set it.
	TerminationGracePeriod          *time.Duration
	TerminationGracePeriodCondition corev1.NodeConditionType

	priority        int
	drainEligibleAt time.Time
	scoreRank       int
	scoreEligibleAt time.Time
}

// ScoreAt is the result's repair score at now: the highest, over its eligible matches, of
// their rank plus the time since eligible over AgingConstant; 0 when none is eligible.
// Higher repairs first.
func (r Result) ScoreAt(now time.Time) float64 {
	if r.Action == "" {
		return 0
	}
	return float64(r.scoreRank) + now.Sub(r.scoreEligibleAt).Minutes()/AgingConstant.Minutes()
}

// Resolve merges the matches eligible at now into one Result.
func Resolve(matches []Match, now time.Time) Result {
	var r Result
	for _, m := range matches {
		if m.EligibleAt.After(now) {
			continue
		}
		r.merge(m, now)
	}
	return r
}

// NotBefore returns the matches with each eligible no earlier than its policy's toleration
// after t, as Karpenter's Resolve measures tolerations from the end of a node's last reboot: a
// node rejoins after a reboot with conditions that may not have caught up yet. A zero t
// changes nothing.
func NotBefore(matches []Match, t time.Time) []Match {
	if t.IsZero() {
		return matches
	}
	out := slices.Clone(matches)
	for i := range out {
		if earliest := t.Add(out[i].Policy.TolerationDuration); out[i].EligibleAt.Before(earliest) {
			out[i].EligibleAt = earliest
		}
	}
	return out
}

// NextEligible is the earliest moment after now at which one of the matches becomes
// eligible; zero when none will.
func NextEligible(matches []Match, now time.Time) time.Time {
	var next time.Time
	for _, m := range matches {
		if m.EligibleAt.After(now) && (next.IsZero() || m.EligibleAt.Before(next)) {
			next = m.EligibleAt
		}
	}
	return next
}

func (r *Result) merge(m Match, now time.Time) {
	first := r.Action == ""
	score := float64(m.rank) + now.Sub(m.EligibleAt).Minutes()/AgingConstant.Minutes()
	if first || score > r.ScoreAt(now) {
		r.scoreRank, r.scoreEligibleAt = m.rank, m.EligibleAt
	}
	if b := m.Policy.TerminationGracePeriod; b != nil && r.shorterDrain(*b, m.Condition.Type, m.EligibleAt) {
		r.TerminationGracePeriod, r.TerminationGracePeriodCondition, r.drainEligibleAt = b, m.Condition.Type, m.EligibleAt
	}
	selected := first || m.Policy.Action.IsMoreDisruptiveThan(r.Action)
	if !first && m.Policy.Action == r.Action {
		switch {
		case m.Policy.Priority != r.priority:
			selected = m.Policy.Priority > r.priority
		case !m.EligibleAt.Equal(r.EligibleAt):
			selected = m.EligibleAt.Before(r.EligibleAt)
		default:
			selected = m.Condition.Type < r.Condition
		}
	}
	if selected {
		r.Action, r.Condition, r.Status, r.Reason = m.Policy.Action, m.Condition.Type, m.Condition.Status, m.Condition.Reason
		r.ReasonRegex, r.Fallback, r.EligibleAt, r.priority = m.Policy.ReasonRegex, m.Policy.ReasonRegex == "", m.EligibleAt, m.Policy.Priority
	}
}

// shorterDrain reports whether a drain bound replaces the current one: shorter, or as short
// and eligible earlier, or as early and of a lower condition type.
func (r *Result) shorterDrain(bound time.Duration, cond corev1.NodeConditionType, eligibleAt time.Time) bool {
	switch {
	case r.TerminationGracePeriod == nil:
		return true
	case bound != *r.TerminationGracePeriod:
		return bound < *r.TerminationGracePeriod
	case !eligibleAt.Equal(r.drainEligibleAt):
		return eligibleAt.Before(r.drainEligibleAt)
	}
	return cond < r.TerminationGracePeriodCondition
}
