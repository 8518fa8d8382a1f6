package simulate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/health"
)

// RepairCounts sum up what node repair did over a run.
type RepairCounts struct {
	// Removed counts the unhealthy nodes repair removed: replaced (their replacement launched
	// first), deleted (their pods fitting elsewhere), or, with legacyNodeRepair, deleted at
	// once.
	Removed int `json:"removed"`
	// Escalated counts, of Removed, the nodes replaced rather than rebooted because their
	// NodeClaim had been rebooted disruption.RebootsBeforeReplacement times within
	// disruption.RebootHistoryWindow.
	Escalated int `json:"escalated"`
	// Reboots counts the reboots repair committed (the AWS gate RebootForRepair), and
	// RebootsSucceeded and RebootsFailed how those that ended did.
	Reboots          int `json:"reboots"`
	RebootsSucceeded int `json:"rebootsSucceeded"`
	RebootsFailed    int `json:"rebootsFailed"`
	// Blocked counts the times an unhealthy node's repair was held (by karpenter.sh/do-not-repair,
	// its NodePool's budgets for reason Unhealthy, more than 20% of its NodePool unhealthy,
	// pods that fit nowhere, …), each hold once however long it lasted.
	Blocked int `json:"blocked"`
}

// Actions of the log's repair entries beyond delete and replace.
const (
	// ActionBlocked: node repair passed over an unhealthy node, and why.
	ActionBlocked = "blocked"
	// ActionReboot: node repair committed a reboot of the node (Kind disruption).
	ActionReboot = "reboot"
	// ActionIssued, ActionSucceeded and ActionFailed are a reboot's progress (Kind reboot):
	// drained and the instance rebooting; back with a new boot ID and Ready; not back, or
	// refused, and so replaced.
	ActionIssued    = "issued"
	ActionSucceeded = "succeeded"
	ActionFailed    = "failed"
)

// repairing logs node repair's commands as the disruption controller's observer sees them
// (disrupted passes them here): a reboot, or a replacement (escalated when the node was
// rebooted too often). It reports whether the node is removed.
func (r *recorder) repairing(cmd *disruption.Command, entry *LogEntry) bool {
	c := cmd.Candidates[0]
	delete(r.repairHolds, c.Name())
	cond := candidateCondition(c)
	if cmd.Reboot {
		r.repairs.Reboots++
		now := r.now()
		recent := slices.DeleteFunc(r.rebootsOf[c.NodeClaim.Name], func(t time.Time) bool { return !t.After(now.Add(-disruption.RebootHistoryWindow)) })
		r.rebootsOf[c.NodeClaim.Name] = append(recent, now)
		entry.Action = ActionReboot
		entry.Message = fmt.Sprintf("%s; node %s, %s: reboot %d of the %d within %s before repair replaces the node instead",
			cmd.Message(), c.Name(), cond, len(recent)+1, disruption.RebootsBeforeReplacement, disruption.RebootHistoryWindow)
		return false
	}
	r.repairs.Removed++
	entry.Message = fmt.Sprintf("%s; node %s, %s", cmd.Message(), c.Name(), cond)
	if c.RebootEscalated {
		r.repairs.Escalated++
		entry.Message += fmt.Sprintf("; rebooted %d times within %s already, so replaced instead", disruption.RebootsBeforeReplacement, disruption.RebootHistoryWindow)
	}
	if cmd.TerminateFirst != "" {
		entry.Message += fmt.Sprintf("; terminated before its replacement launches (%s)", cmd.TerminateFirst)
	}
	return true
}

// candidateCondition describes the condition repair acts on for the candidate: "Ready Unknown
// (NodeStatusUnknown) since t=1h0m0s".
func candidateCondition(c *disruption.Candidate) string {
	if c.Repair == nil {
		return "unhealthy"
	}
	what := fmt.Sprintf("%s %s", c.Repair.Condition, c.Repair.Status)
	if c.Repair.Reason != "" {
		what += " (" + c.Repair.Reason + ")"
	}
	for _, nc := range c.Node.Status.Conditions {
		if nc.Type == c.Repair.Condition {
			what += " since t=" + nc.LastTransitionTime.Sub(Start).String()
		}
	}
	return what
}

// repairHold logs that repair passes over an unhealthy node, and why, once for each reason in
// a row: again only when the reason changes, or after the node was repaired.
func (r *recorder) repairHold(node, condition, why string) {
	if r.repairHolds[node] == why {
		return
	}
	r.repairHolds[node] = why
	r.repairs.Blocked++
	r.log(LogEntry{Kind: LogDisruption, Method: MethodRepair, Reason: string(karpv1.DisruptionReasonUnhealthy), Action: ActionBlocked, Nodes: []string{node},
		Message: fmt.Sprintf("repair of node %s (%s) blocked: %s", node, condition, why)})
}

// noteRepairs reads the disruption controller's last decision for the unhealthy nodes repair
// passed over and logs each, with why: the reasons the decision gives (DisruptionBlocked:
// karpenter.sh/do-not-repair, pods that fit nowhere, …; NodeRepairBlocked: more than 20% of
// the NodePool unhealthy), and a NodePool's budgets for reason Unhealthy allowing no more
// disruption now (Karpenter passes such a node over without an Event; the report says so).
// A node no longer held may be held again later, and is then logged again.
func (e *engine) noteRepairs(ctx context.Context) error {
	d := e.repairDecision
	e.repairDecision = nil
	if d == nil {
		return nil
	}
	held := map[string]string{}
	for _, b := range d.Blocked {
		if b.Method == disruption.MethodRepair {
			held[b.Node] = b.Reason
		}
	}
	for _, h := range d.RepairHolds {
		held[h.Node] = h.Message
	}
	exhausted := map[string]disruption.PoolBudget{}
	for _, b := range d.Budgets {
		if b.Reason == karpv1.DisruptionReasonUnhealthy && b.Allowed == 0 {
			exhausted[b.NodePool] = b
		}
	}
	var commanded string
	if d.Command != nil && d.Command.Method == disruption.MethodRepair {
		commanded = d.Command.Candidates[0].Name()
	}
	if len(held) == 0 && len(exhausted) == 0 {
		clear(e.rec.repairHolds)
		return nil
	}
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	var claims karpv1.NodeClaimList
	if err := e.kube.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	byProviderID := map[string]*karpv1.NodeClaim{}
	for i := range claims.Items {
		byProviderID[claims.Items[i].Status.ProviderID] = &claims.Items[i]
	}
	now := e.clock.Now()
	still := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		claim := byProviderID[n.Spec.ProviderID]
		// A node a command is under way for (tainted when it started) is not passed over.
		if n.Name == commanded || n.DeletionTimestamp != nil || claim == nil || claim.DeletionTimestamp != nil || claim.IsRebooting() ||
			slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }) {
			continue
		}
		result := health.Resolve(health.NotBefore(e.repairPolicies.Match(n), rebootEnded(claim)), now)
		if result.Action == "" {
			continue
		}
		why, ok := held[n.Name]
		if b, full := exhausted[n.Labels[karpv1.NodePoolLabelKey]]; !ok && full && claim.IsInitialized() {
			why, ok = fmt.Sprintf("nodepool %s's budgets allow no more disruptions for reason %s now (%d disrupting)", b.NodePool, b.Reason, b.Disrupting), true
		}
		if !ok {
			continue
		}
		still[n.Name] = true
		e.rec.repairHold(n.Name, heldCondition(n, result), why)
	}
	for node := range e.rec.repairHolds {
		if !still[node] {
			delete(e.rec.repairHolds, node)
		}
	}
	return nil
}

// heldCondition describes the condition a held repair is for, as candidateCondition does.
func heldCondition(n *corev1.Node, r health.Result) string {
	what := fmt.Sprintf("%s %s", r.Condition, r.Status)
	if r.Reason != "" {
		what += " (" + r.Reason + ")"
	}
	for _, nc := range n.Status.Conditions {
		if nc.Type == r.Condition {
			what += " since t=" + nc.LastTransitionTime.Sub(Start).String()
		}
	}
	return what
}

// rebootEnded is when the claim's last reboot ended (its Rebooting condition turned False):
// repair's tolerations count from no earlier, as the disruption controller's.
func rebootEnded(claim *karpv1.NodeClaim) time.Time {
	if c := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeRebooting); c != nil && c.Status == metav1.ConditionFalse {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// stepReboot calls the reboot controller for a rebooting claim, as its watch would, and logs
// how the reboot moved on: issued (drained, the instance rebooting), succeeded (a new boot ID
// and Ready), or failed (refused for good, or not back within the observation window: the
// node is replaced, its NodeClaim deleted).
func (e *engine) stepReboot(ctx context.Context, c *karpv1.NodeClaim) error {
	before := *meta.FindStatusCondition(c.Status.Conditions, karpv1.ConditionTypeRebooting)
	node := cmp.Or(c.Status.NodeName, c.Name)
	err := e.reconcile(ctx, e.reboot, c.Name)
	var after karpv1.NodeClaim
	switch getErr := e.kube.Get(ctx, client.ObjectKeyFromObject(c), &after); {
	case apierrors.IsNotFound(getErr):
		e.rec.rebootEnded(node, ActionFailed, "its NodeClaim is gone: the node is replaced")
		return err
	case getErr != nil:
		return getErr
	}
	cond := meta.FindStatusCondition(after.Status.Conditions, karpv1.ConditionTypeRebooting)
	switch {
	case after.DeletionTimestamp != nil && c.DeletionTimestamp == nil:
		why := "reboot was not issued within the issuance timeout, or the cloud refused it"
		if before.Reason == karpv1.RebootReasonIssued {
			why = "node did not recover within the observation window"
		}
		e.rec.rebootEnded(node, ActionFailed, why+": the node is replaced")
	case cond == nil:
	case cond.Status == metav1.ConditionFalse && cond.Reason == karpv1.RebootReasonSucceeded:
		e.rec.rebootEnded(node, ActionSucceeded, fmt.Sprintf("%s, %s after it was committed", cond.Message, cond.LastTransitionTime.Sub(before.LastTransitionTime.Time)))
	case cond.Status == metav1.ConditionFalse:
		e.rec.rebootEnded(node, ActionFailed, cond.Message)
	case cond.Reason == karpv1.RebootReasonIssued && before.Reason != karpv1.RebootReasonIssued:
		e.rec.log(LogEntry{Kind: LogReboot, Method: MethodRepair, Reason: string(karpv1.DisruptionReasonUnhealthy), Action: ActionIssued, Nodes: []string{node},
			Message: fmt.Sprintf("reboot of node %s issued: fenced and drained, its instance rebooting", node)})
	}
	return err
}

// rebootEnded logs the end of a node's reboot.
func (r *recorder) rebootEnded(node, action, why string) {
	if action == ActionSucceeded {
		r.repairs.RebootsSucceeded++
	} else {
		r.repairs.RebootsFailed++
	}
	r.log(LogEntry{Kind: LogReboot, Method: MethodRepair, Reason: string(karpv1.DisruptionReasonUnhealthy), Action: action, Nodes: []string{node},
		Message: fmt.Sprintf("reboot of node %s %s: %s", node, action, why)})
}
