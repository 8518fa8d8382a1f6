package reboot

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// The Events on a rebooting NodeClaim, Karpenter's.
const (
	// EventReasonRebootObserved (Normal): the Node reports a new boot ID.
	EventReasonRebootObserved events.Reason = "RebootObserved"
	// EventReasonRebootFailed (Warning): the reboot failed, and why.
	EventReasonRebootFailed events.Reason = "RebootFailed"
)

// eventDedupe outlasts ObservationWindow, so each Event of a reboot is recorded once.
const eventDedupe = 30 * time.Minute

// rebootEvent is an Event of the claim's reboot, deduplicated per reboot (the Rebooting
// condition's transition time tells one from the next).
func rebootEvent(claim *karpv1.NodeClaim, cond *metav1.Condition, eventType string, reason events.Reason, message string) events.Event {
	return events.Event{InvolvedObject: claim, Type: eventType, Reason: reason, Message: message,
		DedupeValues: []string{string(claim.UID), cond.LastTransitionTime.UTC().Format(time.RFC3339Nano)}, DedupeTimeout: eventDedupe}
}
