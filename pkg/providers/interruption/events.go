package interruption

import (
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// Reasons of the Events of interruption notices, on the NodeClaim and its Node, as Karpenter's
// AWS provider's.
const (
	EventReasonSpotInterrupted           events.Reason = "SpotInterrupted"
	EventReasonRebalanceRecommendation   events.Reason = "SpotRebalanceRecommendation"
	EventReasonInstanceUnhealthy         events.Reason = "InstanceUnhealthy"
	EventReasonInstanceStopping          events.Reason = "InstanceStopping"
	EventReasonInstanceTerminating       events.Reason = "InstanceTerminating"
	EventReasonTerminatingOnInterruption events.Reason = "TerminatingOnInterruption"
)

// interruptionEvents: a notice about the instance of claim, on the claim and its node (nil for
// none), each once in two minutes.
func interruptionEvents(claim *karpv1.NodeClaim, node *corev1.Node, eventType string, reason events.Reason, message string) []events.Event {
	out := []events.Event{{InvolvedObject: claim, Type: eventType, Reason: reason, Message: message, DedupeValues: []string{string(claim.UID)}}}
	if node != nil {
		out = append(out, events.Event{InvolvedObject: node, Type: eventType, Reason: reason, Message: message, DedupeValues: []string{string(node.UID)}})
	}
	return out
}

// terminatingOnInterruptionEvents: the claim was deleted for a notice.
func terminatingOnInterruptionEvents(claim *karpv1.NodeClaim, node *corev1.Node) []events.Event {
	out := []events.Event{{InvolvedObject: claim, Type: corev1.EventTypeWarning, Reason: EventReasonTerminatingOnInterruption,
		Message: "Interruption triggered termination for the NodeClaim", DedupeValues: []string{string(claim.UID)}}}
	if node != nil {
		out = append(out, events.Event{InvolvedObject: node, Type: corev1.EventTypeWarning, Reason: EventReasonTerminatingOnInterruption,
			Message: "Interruption triggered termination for the Node", DedupeValues: []string{string(node.UID)}})
	}
	return out
}
