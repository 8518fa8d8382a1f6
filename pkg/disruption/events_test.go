package disruption

import (
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

// TestEventTable holds the package's Events to docs/events.md: object, type, reason and
// message of each, with Karpenter's wording where Karpenter has the Event.
func TestEventTable(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "p"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", UID: "n"}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "c"}}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "np"}}
	until := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	cand := &Candidate{StateNode: &state.StateNode{Node: node, NodeClaim: claim}, NodePool: np}
	other := &Candidate{StateNode: &state.StateNode{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-2"}}}, NodePool: np}
	score := Move{NodePool: "default", Policy: karpv1.ConsolidationPolicyBalanced, Approved: true, Score: 1.25, SavingsShare: 0.25, DisruptionShare: 0.2}
	single := &Command{Method: MethodSingleNode, Reason: karpv1.DisruptionReasonUnderutilized, Candidates: []*Candidate{cand},
		Replacements: []*Replacement{{}}, Savings: 0.25, Scores: []Move{score}}
	multi := &Command{Method: MethodMultiNode, Reason: karpv1.DisruptionReasonUnderutilized, Candidates: []*Candidate{cand, other},
		Replacements: []*Replacement{{}}, Savings: 0.40, Scores: []Move{score}}
	eventlog.CheckTable(t, []eventlog.Case{
		{Name: "launching", Events: []events.Event{launchingEvent(claim, karpv1.DisruptionReasonUnderutilized)}, Want: [][5]string{
			{"NodeClaim", "default-abcde", "Normal", "DisruptionLaunching", "Launching NodeClaim: Underutilized"}}},
		{Name: "waiting readiness", Events: []events.Event{waitingOnReadinessEvent(claim)}, Want: [][5]string{
			{"NodeClaim", "default-abcde", "Normal", "DisruptionWaitingReadiness", "Waiting on readiness to continue disruption"}}},
		{Name: "terminating", Events: terminatingEvents(node, claim, karpv1.DisruptionReasonDrifted), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "DisruptionTerminating", "Disrupting Node: Drifted"},
			{"NodeClaim", "default-abcde", "Normal", "DisruptionTerminating", "Disrupting NodeClaim: Drifted"}}},
		{Name: "unconsolidatable", Events: unconsolidatableEvents(node, claim, noCheaperNode), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "Unconsolidatable", "Can't replace with a cheaper node"},
			{"NodeClaim", "default-abcde", "Normal", "Unconsolidatable", "Can't replace with a cheaper node"}}},
		{Name: "blocked", Events: blockedEvents(node, claim, `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/web-0)`), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "DisruptionBlocked", `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/web-0)`},
			{"NodeClaim", "default-abcde", "Normal", "DisruptionBlocked", `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/web-0)`}}},
		// Karpenter v1.15.0's repair (disruption/events NodeRepairBlocked, Blocked): each object
		// by its UID, for 15 minutes.
		{Name: "node repair blocked", Events: nodeRepairBlockedEvents(node, claim, np, `more than 20% of nodes in nodepool "default" are unhealthy`), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Warning", "NodeRepairBlocked", `more than 20% of nodes in nodepool "default" are unhealthy`},
			{"NodeClaim", "default-abcde", "Warning", "NodeRepairBlocked", `more than 20% of nodes in nodepool "default" are unhealthy`},
			{"NodePool", "default", "Warning", "NodeRepairBlocked", `more than 20% of nodes in nodepool "default" are unhealthy`}},
			Dedupe: [][]string{{"n"}, {"c"}, {"np"}}, DedupeTimeout: repairBlockedDedupe},
		{Name: "repair vetoed", Events: blockedEvents(node, claim, `repair is blocked through the "karpenter.sh/do-not-repair" annotation`), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "DisruptionBlocked", `repair is blocked through the "karpenter.sh/do-not-repair" annotation`},
			{"NodeClaim", "default-abcde", "Normal", "DisruptionBlocked", `repair is blocked through the "karpenter.sh/do-not-repair" annotation`}}},
		{Name: "unhealthy budget", Events: []events.Event{nodePoolBlockedEvent(np, karpv1.DisruptionReasonUnhealthy)}, Want: [][5]string{
			{"NodePool", "default", "Normal", "DisruptionBlocked", "No allowed disruptions for disruption reason Unhealthy due to blocking budget"}}},
		{Name: "nodepool blocked", Events: []events.Event{nodePoolBlockedEvent(np, karpv1.DisruptionReasonEmpty)}, Want: [][5]string{
			{"NodePool", "default", "Normal", "DisruptionBlocked", "No allowed disruptions for disruption reason Empty due to blocking budget"}}},
		{Name: "invalid do-not-disrupt", Events: []events.Event{invalidDoNotDisruptEvent(pod, errors.New(`invalid duration "forever"`))}, Want: [][5]string{
			{"Pod", "web-0", "Warning", "InvalidDoNotDisruptAnnotation", `Invalid karpenter.sh/do-not-disrupt annotation: invalid duration "forever", ignoring annotation`}}},
		// Dedupe as Karpenter's: a DoNotDisruptUntil per pod and end, an elapsed one per pod.
		{Name: "do-not-disrupt until", Events: []events.Event{doNotDisruptTimedEvent(pod, until, until.Add(-time.Minute))}, Want: [][5]string{
			{"Pod", "web-0", "Normal", "DoNotDisruptUntil", "The karpenter.sh/do-not-disrupt grace period will elapse at 2026-03-02T14:00:00Z"}},
			Dedupe: [][]string{{"p", "2026-03-02T14:00:00Z"}}},
		{Name: "do-not-disrupt elapsed", Events: []events.Event{doNotDisruptTimedEvent(pod, until, until)}, Want: [][5]string{
			{"Pod", "web-0", "Normal", "DoNotDisruptGracePeriodElapsed", "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable"}}},
		{Name: "do-not-disrupt elapsed a minute ago", Events: []events.Event{doNotDisruptTimedEvent(pod, until, until.Add(time.Minute))}, Want: [][5]string{
			{"Pod", "web-0", "Normal", "DoNotDisruptGracePeriodElapsed", "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable"}},
			Dedupe: [][]string{{"p"}}},
		{Name: "abandoned", Events: []events.Event{abandonedEvent(node, "consolidating: deleting 1 node")}, Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Warning", "DisruptionAbandoned", "abandoned: consolidating: deleting 1 node"}}},
		{Name: "consolidation candidate", Events: consolidationCandidateEvents(single, cand), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "ConsolidationCandidate", "Consolidation candidate: Underutilized: replace: nodepools=[default]: [ip-10-0-0-1] -> [1 replacement] (savings: $0.25) (savings: $0.25)"},
			{"NodeClaim", "default-abcde", "Normal", "ConsolidationCandidate", "Consolidation candidate: Underutilized: replace: nodepools=[default]: [ip-10-0-0-1] -> [1 replacement] (savings: $0.25) (savings: $0.25)"}},
			Dedupe: [][]string{{"n", "Underutilized: replace: nodepools=[default]: [ip-10-0-0-1] -> [1 replacement] (savings: $0.25)"}, {"c", "Underutilized: replace: nodepools=[default]: [ip-10-0-0-1] -> [1 replacement] (savings: $0.25)"}}},
		{Name: "consolidation rejected, part of a multi-node command", Events: consolidationRejectedEvents(multi, cand, "scheduling"), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "ConsolidationRejected", "Consolidation rejected: replace: [ip-10-0-0-1] (part of 2-node consolidation), reason: scheduling (savings: $0.40)"},
			{"NodeClaim", "default-abcde", "Normal", "ConsolidationRejected", "Consolidation rejected: replace: [ip-10-0-0-1] (part of 2-node consolidation), reason: scheduling (savings: $0.40)"}}},
		{Name: "consolidation approved", Events: consolidationApprovedEvents(single, nil), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "ConsolidationApproved", "score 1.25 >= threshold 0.50 (k: 2, savings 25.0%, disruption 20.0%)"},
			{"NodeClaim", "default-abcde", "Normal", "ConsolidationApproved", "score 1.25 >= threshold 0.50 (k: 2, savings 25.0%, disruption 20.0%)"}}},
		{Name: "consolidation approved, multi-node", Events: consolidationApprovedEvents(multi, map[string]*karpv1.NodePool{"default": np}), Want: [][5]string{
			{"NodePool", "default", "Normal", "ConsolidationApproved", "score 1.25 >= threshold 0.50 (k: 2, savings 25.0%, disruption 20.0%)"}}},
	})
}

// TestDecisionNamesKarpentersEventSituations: Decide reports the pods whose do-not-disrupt
// duration runs or ran out, and the unprotected nodes consolidation passes over whatever the
// cluster looks like, in Karpenter's words.
func TestDecisionNamesKarpentersEventSituations(t *testing.T) {
	never := builders.NodePool(builders.NodePoolOptions{Name: "never", Ready: true}, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	whenEmpty := builders.NodePool(builders.NodePoolOptions{Name: "when-empty", Ready: true}, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
	})
	c := newCluster(catalog(), never, whenEmpty)
	m := findType(c.types, "m.xlarge")
	running, ended := pod("1", "1Gi"), pod("1", "1Gi")
	for i, p := range []*corev1.Pod{running, ended} {
		p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "1h"}
		p.Status.StartTime = &metav1.Time{Time: c.in.Now.Add(-time.Duration(30+60*i) * time.Minute)}
	}
	c.add(stateNode(never, "timed", m, "on-demand", "test-zone-1", running))
	c.add(stateNode(never, "disabled", m, "on-demand", "test-zone-1", ended))
	c.add(stateNode(whenEmpty, "busy", m, "on-demand", "test-zone-1", pod("1", "1Gi")))
	unpriced := stateNode(whenEmpty, "unpriced", m, "on-demand", "test-zone-1")
	unpriced.Node.Labels[corev1.LabelInstanceTypeStable] = "z.huge"
	c.add(unpriced)
	unzoned := stateNode(whenEmpty, "unzoned", m, "on-demand", "test-zone-1")
	delete(unzoned.Node.Labels, corev1.LabelTopologyZone)
	c.add(unzoned)

	d := Decide(c.in)
	var timed []string
	for _, p := range d.TimedProtections {
		timed = append(timed, p.Pod.Spec.NodeName+" "+p.Until.Sub(c.in.Now).String())
	}
	if want := []string{"timed 30m0s", "disabled -30m0s"}; !reflect.DeepEqual(timed, want) {
		t.Errorf("timed protections %q, want %q", timed, want)
	}
	got := map[string]string{}
	for _, u := range d.Unconsolidatable {
		if _, ok := got[u.Node]; !ok {
			got[u.Node] = u.Reason
		}
	}
	want := map[string]string{
		// "timed" is protected by its pod: a DisruptionBlocked matter, not this one.
		"disabled": `NodePool "never" has consolidation disabled`,
		"busy":     `NodePool "when-empty" has consolidation policy WhenEmpty, but node is not empty`,
		"unpriced": `Instance Type "z.huge" not found`,
		"unzoned":  `Node does not have label "topology.kubernetes.io/zone"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unconsolidatable %q,\n want %q", got, want)
	}
}
