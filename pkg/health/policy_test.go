package health

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// node is a Node created at t0 - 1h with the conditions, each since its given time.
func node(conds ...corev1.NodeCondition) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Status: corev1.NodeStatus{Conditions: conds}}
}

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string, since time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: metav1.NewTime(since)}
}

func minutes(m int) *time.Duration { d := time.Duration(m) * time.Minute; return &d }

// TestEC2Policies resolves nodes against the AWS provider's policies, as Karpenter v1.15.0's
// health.RepairPolicyMatcher (pkg/controllers/node/health/policy.go: Match, Resolve) does with
// the policies of the AWS provider v1.15.2 (pkg/cloudprovider/cloudprovider.go RepairPolicies).
func TestEC2Policies(t *testing.T) {
	m, err := NewMatcher(cloudprovider.EC2RepairPolicies(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		node       *corev1.Node
		now        time.Time
		action     cloudprovider.RepairAction
		condition  corev1.NodeConditionType
		drain      *time.Duration
		fallback   bool
		eligibleAt time.Time
	}{
		{name: "healthy", node: node(cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", t0.Add(-time.Hour))), now: t0},
		{name: "Ready Unknown within toleration", node: node(cond(corev1.NodeReady, corev1.ConditionUnknown, "NodeStatusUnknown", t0.Add(-29*time.Minute))), now: t0},
		{name: "Ready Unknown past toleration", node: node(cond(corev1.NodeReady, corev1.ConditionUnknown, "NodeStatusUnknown", t0.Add(-30*time.Minute))), now: t0,
			action: cloudprovider.ReplaceNode, condition: corev1.NodeReady, drain: minutes(10), eligibleAt: t0},
		{name: "Ready False", node: node(cond(corev1.NodeReady, corev1.ConditionFalse, "", t0.Add(-45*time.Minute))), now: t0,
			action: cloudprovider.ReplaceNode, condition: corev1.NodeReady, drain: minutes(10), eligibleAt: t0.Add(-15 * time.Minute)},
		{name: "reboot-clearable XID replaces (RebootForRepair off) after 10m", node: node(cond("AcceleratedHardwareReady", corev1.ConditionFalse, "NvidiaXID48Error", t0.Add(-10*time.Minute))), now: t0,
			action: cloudprovider.ReplaceNode, condition: "AcceleratedHardwareReady", drain: minutes(5), eligibleAt: t0},
		{name: "fatal XID after 10m", node: node(cond("AcceleratedHardwareReady", corev1.ConditionFalse, "NvidiaXID79Error", t0.Add(-10*time.Minute))), now: t0,
			action: cloudprovider.ReplaceNode, condition: "AcceleratedHardwareReady", drain: minutes(5), eligibleAt: t0},
		{name: "unknown GPU fault waits 30m", node: node(cond("AcceleratedHardwareReady", corev1.ConditionFalse, "NeuronDMAError", t0.Add(-10*time.Minute))), now: t0},
		{name: "unknown GPU fault: the default", node: node(cond("AcceleratedHardwareReady", corev1.ConditionFalse, "NeuronDMAError", t0.Add(-30*time.Minute))), now: t0,
			action: cloudprovider.ReplaceNode, condition: "AcceleratedHardwareReady", drain: minutes(10), fallback: true, eligibleAt: t0},
		{name: "KernelReady False", node: node(cond("KernelReady", corev1.ConditionFalse, "SoftLockup", t0.Add(-31*time.Minute))), now: t0,
			action: cloudprovider.ReplaceNode, condition: "KernelReady", drain: minutes(10), eligibleAt: t0.Add(-time.Minute)},
		{name: "KernelReady Unknown is no policy's", node: node(cond("KernelReady", corev1.ConditionUnknown, "", t0.Add(-2*time.Hour))), now: t0},
		{name: "a condition older than its Node counts from the Node's creation", node: node(cond(corev1.NodeReady, corev1.ConditionFalse, "", t0.Add(-5*time.Hour))), now: t0,
			action: cloudprovider.ReplaceNode, condition: corev1.NodeReady, drain: minutes(10), eligibleAt: t0.Add(-30 * time.Minute)},
		{name: "two faults: the earliest eligible chooses, the shortest drain bounds", node: node(
			cond("StorageReady", corev1.ConditionFalse, "IOError", t0.Add(-40*time.Minute)),
			cond("AcceleratedHardwareReady", corev1.ConditionFalse, "NvidiaXID79Error", t0.Add(-15*time.Minute))), now: t0,
			action: cloudprovider.ReplaceNode, condition: "StorageReady", drain: minutes(5), eligibleAt: t0.Add(-10 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Resolve(m.Match(tc.node), tc.now)
			if r.Action != tc.action || r.Condition != tc.condition || r.Fallback != tc.fallback || !r.EligibleAt.Equal(tc.eligibleAt) {
				t.Errorf("got action %q condition %q fallback %t eligible %s; want %q %q %t %s", r.Action, r.Condition, r.Fallback, r.EligibleAt, tc.action, tc.condition, tc.fallback, tc.eligibleAt)
			}
			if (r.TerminationGracePeriod == nil) != (tc.drain == nil) || tc.drain != nil && *r.TerminationGracePeriod != *tc.drain {
				t.Errorf("drain bound %v, want %v", r.TerminationGracePeriod, tc.drain)
			}
			if tc.action == "" && r.ScoreAt(tc.now) != 0 {
				t.Errorf("score %v of a node not eligible", r.ScoreAt(tc.now))
			}
		})
	}
	if !m.Unhealthy(node(cond(corev1.NodeReady, corev1.ConditionUnknown, "", t0))) || m.Unhealthy(node(cond(corev1.NodeReady, corev1.ConditionTrue, "", t0))) {
		t.Error("Unhealthy counts a matched condition whatever its age, and only such")
	}
}

// TestScoreAges: a higher-priority policy repairs first, until a lower one has waited one
// AgingConstant per rank longer (Karpenter's rank + age/τ).
func TestScoreAges(t *testing.T) {
	m, err := NewMatcher([]cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, Action: cloudprovider.ReplaceNode},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, ReasonRegex: ".*", Priority: 50, Action: cloudprovider.ReplaceNode},
	})
	if err != nil {
		t.Fatal(err)
	}
	old := Resolve(m.Match(node(cond(corev1.NodeReady, corev1.ConditionFalse, "", t0.Add(-20*time.Minute)))), t0)
	fresh := Resolve(m.Match(node(cond("KernelReady", corev1.ConditionFalse, "x", t0.Add(-10*time.Minute)))), t0)
	if old.ScoreAt(t0) >= fresh.ScoreAt(t0) {
		t.Errorf("rank 0 for 20m scores %v, rank 1 for 10m %v: the higher rank goes first", old.ScoreAt(t0), fresh.ScoreAt(t0))
	}
	if later := t0.Add(3 * time.Hour); old.ScoreAt(later) >= fresh.ScoreAt(later) {
		t.Errorf("scores grow at the same rate: the order holds at any time")
	}
	// Eligible 35 minutes apart, more than AgingConstant: the older overtakes the higher rank.
	older := Resolve(m.Match(node(cond(corev1.NodeReady, corev1.ConditionFalse, "", t0.Add(-40*time.Minute)))), t0)
	newer := Resolve(m.Match(node(cond("KernelReady", corev1.ConditionFalse, "x", t0.Add(-5*time.Minute)))), t0)
	if older.ScoreAt(t0) <= newer.ScoreAt(t0) {
		t.Errorf("waiting 40m at rank 0 scores %v, 5m at rank 1 %v: aging must overtake one rank after %s", older.ScoreAt(t0), newer.ScoreAt(t0), AgingConstant)
	}
}

// TestInvalidPolicies: NewMatcher refuses what Karpenter v1.15.0's newRepairPolicyMatcher
// refuses, saying what is wrong.
func TestInvalidPolicies(t *testing.T) {
	ready := func(mutate func(*cloudprovider.RepairPolicy)) cloudprovider.RepairPolicy {
		p := cloudprovider.RepairPolicy{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: time.Minute, Action: cloudprovider.ReplaceNode}
		mutate(&p)
		return p
	}
	same := func(*cloudprovider.RepairPolicy) {}
	withRegex := func(p *cloudprovider.RepairPolicy) { p.ReasonRegex = ".*" }
	for _, tc := range []struct {
		policies []cloudprovider.RepairPolicy
		want     string
	}{
		{nil, "defines none"},
		{[]cloudprovider.RepairPolicy{ready(withRegex)}, "one default policy"},
		{[]cloudprovider.RepairPolicy{ready(same), ready(same)}, "a second default policy"},
		{[]cloudprovider.RepairPolicy{ready(func(p *cloudprovider.RepairPolicy) { p.Action = cloudprovider.RebootNode })}, "must use action ReplaceNode"},
		{[]cloudprovider.RepairPolicy{ready(same), ready(func(p *cloudprovider.RepairPolicy) { p.ReasonRegex = "(" })}, "invalid reason pattern"},
		{[]cloudprovider.RepairPolicy{ready(func(p *cloudprovider.RepairPolicy) { p.Priority = 101 })}, "priority 101 outside [0, 100]"},
		{[]cloudprovider.RepairPolicy{ready(func(p *cloudprovider.RepairPolicy) { p.ConditionStatus = "Bad" })}, `condition status "Bad"`},
		{[]cloudprovider.RepairPolicy{ready(func(p *cloudprovider.RepairPolicy) { p.ConditionType = "" })}, "empty condition type"},
		{[]cloudprovider.RepairPolicy{ready(func(p *cloudprovider.RepairPolicy) { p.TolerationDuration = -time.Second })}, "negative toleration"},
		{[]cloudprovider.RepairPolicy{ready(func(p *cloudprovider.RepairPolicy) { p.TerminationGracePeriod = minutes(-1) })}, "negative termination grace period"},
		{[]cloudprovider.RepairPolicy{ready(func(p *cloudprovider.RepairPolicy) { p.Action = "Pray" })}, `unsupported action "Pray"`},
	} {
		if _, err := NewMatcher(tc.policies); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc.policies, err, tc.want)
		}
	}
	if _, err := NewMatcher(cloudprovider.LegacyEC2RepairPolicies()); err == nil {
		t.Error("the legacy policies have seven defaults: only the legacy controller reads them")
	}
}

// TestNextEligible: the next moment a match becomes eligible.
func TestNextEligible(t *testing.T) {
	m, err := NewMatcher(cloudprovider.EC2RepairPolicies(false))
	if err != nil {
		t.Fatal(err)
	}
	matches := m.Match(node(cond(corev1.NodeReady, corev1.ConditionUnknown, "", t0.Add(-10*time.Minute)), cond("KernelReady", corev1.ConditionFalse, "", t0.Add(-25*time.Minute))))
	if got, want := NextEligible(matches, t0), t0.Add(5*time.Minute); !got.Equal(want) {
		t.Errorf("NextEligible = %s, want %s", got, want)
	}
	if got := NextEligible(matches, t0.Add(time.Hour)); !got.IsZero() {
		t.Errorf("NextEligible after all = %s, want zero", got)
	}
}
