package disruption

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// Event reasons of a pod's karpenter.sh/do-not-disrupt duration, as Karpenter's (the others
// are with the package's other reasons).
const (
	// EventReasonDoNotDisruptUntil: the pod's do-not-disrupt duration protects it until the
	// time the message names.
	EventReasonDoNotDisruptUntil events.Reason = "DoNotDisruptUntil"
	// EventReasonDoNotDisruptGracePeriodElapsed: the pod's do-not-disrupt duration has ended;
	// it may be disrupted.
	EventReasonDoNotDisruptGracePeriodElapsed events.Reason = "DoNotDisruptGracePeriodElapsed"
)

// Dedupe timeouts of the disruption Events, as Karpenter's.
const (
	// unconsolidatableDedupe: an Unconsolidatable Event is not repeated for a node within it.
	unconsolidatableDedupe = 15 * time.Minute
	// nodePoolBlockedDedupe: a NodePool's DisruptionBlocked Event for a reason is not repeated
	// within it (budgets can change every minute).
	nodePoolBlockedDedupe = time.Minute
	// repairBlockedDedupe: a NodeRepairBlocked Event is not repeated for an object within it.
	repairBlockedDedupe = 15 * time.Minute
)

// EventReasonNodeRepairBlocked (Node, NodeClaim and NodePool, Warning): the unhealthy-fraction
// stop keeps an unhealthy node from repair, as Karpenter's NodeRepairBlocked.
const EventReasonNodeRepairBlocked events.Reason = "NodeRepairBlocked"

// nodeRepairBlockedEvents: the repair of the node is held, for message; on the Node, the
// NodeClaim and the NodePool, each deduplicated by its UID for 15 minutes.
func nodeRepairBlockedEvents(node *corev1.Node, claim *karpv1.NodeClaim, np *karpv1.NodePool, message string) []events.Event {
	event := func(obj runtime.Object, uid string) events.Event {
		return events.Event{InvolvedObject: obj, Type: corev1.EventTypeWarning, Reason: EventReasonNodeRepairBlocked,
			Message: message, DedupeValues: []string{uid}, DedupeTimeout: repairBlockedDedupe}
	}
	return []events.Event{event(node, uidOf(node)), event(claim, uidOf(claim)), event(np, uidOf(np))}
}

// titled is Karpenter's rendering of a disruption reason in a message: each word starting
// upper case.
func titled(reason karpv1.DisruptionReason) string {
	words := strings.Fields(string(reason))
	for i, w := range words {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return strings.Join(words, " ")
}

// launchingEvent: a replacement NodeClaim is launched for a disruption.
func launchingEvent(claim *karpv1.NodeClaim, reason karpv1.DisruptionReason) events.Event {
	return events.Event{InvolvedObject: claim, Type: corev1.EventTypeNormal, Reason: EventReasonLaunching,
		Message: "Launching NodeClaim: " + titled(reason), DedupeValues: []string{string(claim.UID), string(reason)}}
}

// waitingOnReadinessEvent: the disruption waits for the replacement to initialize.
func waitingOnReadinessEvent(claim *karpv1.NodeClaim) events.Event {
	return events.Event{InvolvedObject: claim, Type: corev1.EventTypeNormal, Reason: EventReasonWaitingReadiness,
		Message: "Waiting on readiness to continue disruption", DedupeValues: []string{string(claim.UID)}}
}

// terminatingEvents: the candidate's Node and NodeClaim are deleted for a disruption.
func terminatingEvents(node *corev1.Node, claim *karpv1.NodeClaim, reason karpv1.DisruptionReason) []events.Event {
	return []events.Event{
		{InvolvedObject: node, Type: corev1.EventTypeNormal, Reason: EventReasonTerminating,
			Message: "Disrupting Node: " + titled(reason), DedupeValues: []string{uidOf(node), string(reason)}},
		{InvolvedObject: claim, Type: corev1.EventTypeNormal, Reason: EventReasonTerminating,
			Message: "Disrupting NodeClaim: " + titled(reason), DedupeValues: []string{string(claim.UID), string(reason)}},
	}
}

// unconsolidatableEvents: consolidation can neither delete nor replace the node, for message.
func unconsolidatableEvents(node *corev1.Node, claim *karpv1.NodeClaim, message string) []events.Event {
	return []events.Event{
		{InvolvedObject: node, Type: corev1.EventTypeNormal, Reason: EventReasonUnconsolidatable, Message: message,
			DedupeValues: []string{uidOf(node)}, DedupeTimeout: unconsolidatableDedupe},
		{InvolvedObject: claim, Type: corev1.EventTypeNormal, Reason: EventReasonUnconsolidatable, Message: message,
			DedupeValues: []string{uidOf(claim)}, DedupeTimeout: unconsolidatableDedupe},
	}
}

// blockedEvents: the node may not be disrupted, for message.
func blockedEvents(node *corev1.Node, claim *karpv1.NodeClaim, message string) []events.Event {
	return []events.Event{
		{InvolvedObject: node, Type: corev1.EventTypeNormal, Reason: EventReasonBlocked, Message: message, DedupeValues: []string{uidOf(node)}},
		{InvolvedObject: claim, Type: corev1.EventTypeNormal, Reason: EventReasonBlocked, Message: message, DedupeValues: []string{uidOf(claim)}},
	}
}

// nodePoolBlockedEvent: the NodePool's budgets allow no disruption for reason.
func nodePoolBlockedEvent(np *karpv1.NodePool, reason karpv1.DisruptionReason) events.Event {
	return events.Event{InvolvedObject: np, Type: corev1.EventTypeNormal, Reason: EventReasonBlocked,
		Message:      fmt.Sprintf("No allowed disruptions for disruption reason %s due to blocking budget", reason),
		DedupeValues: []string{uidOf(np), string(reason)}, DedupeTimeout: nodePoolBlockedDedupe}
}

// invalidDoNotDisruptEvent: the pod's karpenter.sh/do-not-disrupt value does not parse.
func invalidDoNotDisruptEvent(pod *corev1.Pod, err error) events.Event {
	message := err.Error()
	return events.Event{InvolvedObject: pod, Type: corev1.EventTypeWarning, Reason: EventReasonInvalidDoNotDisrupt,
		Message:      fmt.Sprintf("Invalid %s annotation: %s, ignoring annotation", karpv1.DoNotDisruptAnnotationKey, message),
		DedupeValues: []string{string(pod.UID), message}}
}

// doNotDisruptTimedEvent: the pod's karpenter.sh/do-not-disrupt duration protects it until
// until (DoNotDisruptUntil), or has ended by now (DoNotDisruptGracePeriodElapsed).
func doNotDisruptTimedEvent(pod *corev1.Pod, until, now time.Time) events.Event {
	if !now.Before(until) {
		return events.Event{InvolvedObject: pod, Type: corev1.EventTypeNormal, Reason: EventReasonDoNotDisruptGracePeriodElapsed,
			Message:      fmt.Sprintf("The %s grace period has elapsed, pod is now disruptable", karpv1.DoNotDisruptAnnotationKey),
			DedupeValues: []string{string(pod.UID)}}
	}
	at := until.Format(time.RFC3339)
	return events.Event{InvolvedObject: pod, Type: corev1.EventTypeNormal, Reason: EventReasonDoNotDisruptUntil,
		Message:      fmt.Sprintf("The %s grace period will elapse at %s", karpv1.DoNotDisruptAnnotationKey, at),
		DedupeValues: []string{string(pod.UID), at}}
}

// abandonedEvent: the disruption of the node was given up and undone. Ours only.
func abandonedEvent(node *corev1.Node, message string) events.Event {
	return events.Event{InvolvedObject: node, Type: corev1.EventTypeWarning, Reason: EventReasonAbandoned,
		Message: "abandoned: " + message, DedupeValues: []string{uidOf(node), message}}
}

// uidOf is the object's UID, "" for a nil one (whose Event is not recorded).
func uidOf[T interface {
	*corev1.Node | *karpv1.NodeClaim | *karpv1.NodePool
}](obj T) string {
	switch o := any(obj).(type) {
	case *corev1.Node:
		if o != nil {
			return string(o.UID)
		}
	case *karpv1.NodeClaim:
		if o != nil {
			return string(o.UID)
		}
	case *karpv1.NodePool:
		if o != nil {
			return string(o.UID)
		}
	}
	return ""
}

// commandString says what a consolidation command does from one candidate's side, in
// Karpenter's words (its Command.StringForNode, without the command's ID, which ours has not):
// the whole command for a command of one node, that node's part of it otherwise.
func commandString(cmd *Command, cand *Candidate) string {
	decision := decisionOf(cmd)
	if len(cmd.Candidates) > 1 {
		return fmt.Sprintf("%s: [%s] (part of %d-node consolidation)", decision, cand.Name(), len(cmd.Candidates))
	}
	var pools []string
	for _, c := range cmd.Candidates {
		if !slices.Contains(pools, c.NodePool.Name) {
			pools = append(pools, c.NodePool.Name)
		}
	}
	sources := strings.Join(cmd.NodeNames(), ", ")
	if n := len(cmd.Replacements); n > 0 {
		plural := "replacements"
		if n == 1 {
			plural = "replacement"
		}
		return fmt.Sprintf("%s: %s: nodepools=[%s]: [%s] -> [%d %s] (savings: $%.2f)", cmd.Reason, decision, strings.Join(pools, ","), sources, n, plural, cmd.Savings)
	}
	return fmt.Sprintf("%s: %s: nodepools=[%s]: [%s] (savings: $%.2f)", cmd.Reason, decision, strings.Join(pools, ","), sources, cmd.Savings)
}

// consolidationCandidateEvents: consolidation found a replacement for the candidate's node
// (Karpenter records these for replacing commands only).
func consolidationCandidateEvents(cmd *Command, cand *Candidate) []events.Event {
	command := commandString(cmd, cand)
	message := fmt.Sprintf("Consolidation candidate: %s (savings: $%.2f)", command, cmd.Savings)
	return []events.Event{
		{InvolvedObject: cand.Node, Type: corev1.EventTypeNormal, Reason: EventReasonConsolidationCandidate, Message: message, DedupeValues: []string{uidOf(cand.Node), command}},
		{InvolvedObject: cand.NodeClaim, Type: corev1.EventTypeNormal, Reason: EventReasonConsolidationCandidate, Message: message, DedupeValues: []string{uidOf(cand.NodeClaim), command}},
	}
}

// consolidationRejectedEvents: the consolidation of the candidate's node failed validation for
// reason: budget, scheduling or churn, Karpenter's categories.
func consolidationRejectedEvents(cmd *Command, cand *Candidate, reason string) []events.Event {
	command := commandString(cmd, cand)
	message := fmt.Sprintf("Consolidation rejected: %s, reason: %s (savings: $%.2f)", command, reason, cmd.Savings)
	return []events.Event{
		{InvolvedObject: cand.Node, Type: corev1.EventTypeNormal, Reason: EventReasonConsolidationRejected, Message: message, DedupeValues: []string{uidOf(cand.Node), command, reason}},
		{InvolvedObject: cand.NodeClaim, Type: corev1.EventTypeNormal, Reason: EventReasonConsolidationRejected, Message: message, DedupeValues: []string{uidOf(cand.NodeClaim), command, reason}},
	}
}

// consolidationScoreMessage is the Balanced policy's score of a move, in Karpenter's words.
func consolidationScoreMessage(m Move) string {
	return fmt.Sprintf("score %.2f >= threshold %.2f (k: %d, savings %.1f%%, disruption %.1f%%)",
		m.Score, BalancedThreshold, balancedK, 100*m.SavingsShare, 100*m.DisruptionShare)
}

// consolidationApprovedEvents: the Balanced policy approved the command; on the node (and its
// claim) of a single-node command, on each Balanced NodePool of a multi-node one, as Karpenter.
func consolidationApprovedEvents(cmd *Command, pools map[string]*karpv1.NodePool) []events.Event {
	var out []events.Event
	for _, m := range cmd.Scores {
		message := consolidationScoreMessage(m)
		if len(cmd.Candidates) == 1 {
			c := cmd.Candidates[0]
			out = append(out,
				events.Event{InvolvedObject: c.Node, Type: corev1.EventTypeNormal, Reason: EventReasonConsolidationApproved, Message: message, DedupeValues: []string{uidOf(c.Node)}},
				events.Event{InvolvedObject: c.NodeClaim, Type: corev1.EventTypeNormal, Reason: EventReasonConsolidationApproved, Message: message, DedupeValues: []string{uidOf(c.NodeClaim)}})
			continue
		}
		if np := pools[m.NodePool]; np != nil {
			out = append(out, events.Event{InvolvedObject: np, Type: corev1.EventTypeNormal, Reason: EventReasonConsolidationApproved, Message: message, DedupeValues: []string{uidOf(np)}})
		}
	}
	return out
}
