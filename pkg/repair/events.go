package repair

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// Reasons of the Events the controller records, Karpenter's; docs/events.md lists them.
const (
	// EventReasonNodeRepairBlocked (Node, NodeClaim and NodePool, Warning): the safety valve
	// holds the repair of an unhealthy node.
	EventReasonNodeRepairBlocked events.Reason = "NodeRepairBlocked"
	// EventReasonDisruptionTerminating (Node and NodeClaim): the unhealthy node's NodeClaim was
	// deleted, as Karpenter v1.15's repair announces it.
	EventReasonDisruptionTerminating events.Reason = "DisruptionTerminating"
)

// blockedDedupe is how long a NodeRepairBlocked Event is not repeated for an object:
// Karpenter's 15 minutes.
const blockedDedupe = 15 * time.Minute

// nodePoolBlockedMessage is Karpenter's NodeRepairBlocked message when the NodePool has too
// many unhealthy nodes.
func nodePoolBlockedMessage() string {
	return fmt.Sprintf("more than %s nodes are unhealthy in the nodepool", AllowedUnhealthy)
}

// clusterBlockedMessage is Karpenter's NodeRepairBlocked message when the cluster has too many
// unhealthy nodes (for a NodeClaim without NodePool), in Karpenter's words ("then" included).
func clusterBlockedMessage() string {
	return fmt.Sprintf("more then %s nodes are unhealthy in the cluster", AllowedUnhealthy)
}

// blockedEvents: the repair of the node is held, for message; on the Node, the NodeClaim and,
// when there is one, the NodePool, each deduped by its UID for 15 minutes.
func blockedEvents(node *corev1.Node, claim *karpv1.NodeClaim, nodePool *karpv1.NodePool, message string) []events.Event {
	out := []events.Event{
		{InvolvedObject: node, Type: corev1.EventTypeWarning, Reason: EventReasonNodeRepairBlocked, Message: message,
			DedupeValues: []string{string(node.UID)}, DedupeTimeout: blockedDedupe},
		{InvolvedObject: claim, Type: corev1.EventTypeWarning, Reason: EventReasonNodeRepairBlocked, Message: message,
			DedupeValues: []string{string(claim.UID)}, DedupeTimeout: blockedDedupe},
	}
	if nodePool != nil {
		out = append(out, events.Event{InvolvedObject: nodePool, Type: corev1.EventTypeWarning, Reason: EventReasonNodeRepairBlocked, Message: message,
			DedupeValues: []string{string(nodePool.UID)}, DedupeTimeout: blockedDedupe})
	}
	return out
}

// terminatingEvents: the unhealthy node's NodeClaim was deleted.
func terminatingEvents(node *corev1.Node, claim *karpv1.NodeClaim) []events.Event {
	reason := string(karpv1.DisruptionReasonUnhealthy)
	return []events.Event{
		{InvolvedObject: node, Type: corev1.EventTypeNormal, Reason: EventReasonDisruptionTerminating,
			Message: "Disrupting Node: " + reason, DedupeValues: []string{string(node.UID), reason}},
		{InvolvedObject: claim, Type: corev1.EventTypeNormal, Reason: EventReasonDisruptionTerminating,
			Message: "Disrupting NodeClaim: " + reason, DedupeValues: []string{string(claim.UID), reason}},
	}
}
