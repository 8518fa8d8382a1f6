package nodeclaim

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// Reasons of the Events recorded on NodeClaims (and, for a failed launch, on the pods planned
// for them). Those Karpenter has carry its reason and message; docs/events.md lists them all.
const (
	// EventReasonLaunched: the cloud provider launched the claim's instance. Ours only.
	EventReasonLaunched events.Reason = "Launched"
	// EventReasonLaunchFailed: launching failed; retried unless the error is terminal, in which
	// case the claim is deleted. Ours only.
	EventReasonLaunchFailed events.Reason = "LaunchFailed"
	// EventReasonInsufficientCapacityError (NodeClaim and the pods planned for it, Warning):
	// every offering tried was out of capacity; they are marked unavailable and the claim is
	// deleted.
	EventReasonInsufficientCapacityError events.Reason = "InsufficientCapacityError"
	// EventReasonNodeClassNotReady (Warning): the claim's NodeClass is missing or not ready;
	// the claim is deleted.
	EventReasonNodeClassNotReady events.Reason = "NodeClassNotReady"
	// EventReasonFailedConsistencyCheck (Warning): a consistency check found the claim's Node
	// not as the claim expected; the message says how.
	EventReasonFailedConsistencyCheck events.Reason = "FailedConsistencyCheck"
	// EventReasonUnregisteredTaintMissing (Warning): the claim's Node joined without the
	// karpenter.sh/unregistered taint, so pods may have landed on it before registration.
	EventReasonUnregisteredTaintMissing events.Reason = "UnregisteredTaintMissing"
	// EventReasonRegistered: the claim's Node joined the cluster and was registered. Ours only.
	EventReasonRegistered events.Reason = "Registered"
	// EventReasonInitialized: the claim's Node is ready for pods. Ours only.
	EventReasonInitialized events.Reason = "Initialized"
	// EventReasonLivenessExpired: the claim did not launch or register within the registration
	// TTL and is deleted. Ours only.
	EventReasonLivenessExpired events.Reason = "LivenessExpired"
	// EventReasonTerminatingInstance: the claim is deleting and its instance is terminating.
	// Ours only; not Karpenter's InstanceTerminating, which reports an instance terminated
	// by someone else (an interruption).
	EventReasonTerminatingInstance events.Reason = "TerminatingInstance"
	// EventReasonFinalized: the instance is gone and the claim's finalizer removed. Ours only.
	EventReasonFinalized events.Reason = "Finalized"
	// EventReasonInstanceGone: the cloud provider no longer has the claim's instance; the
	// garbage collector deletes the claim. Ours only.
	EventReasonInstanceGone events.Reason = "InstanceGone"
)

// maxEventMessageLength is Karpenter's longest message of a launch error's Event.
const maxEventMessageLength = 1024

// truncateMessage cuts msg to maxEventMessageLength, ending in "...", as Karpenter does.
func truncateMessage(msg string) string { return truncate(msg, maxEventMessageLength) }

// insufficientCapacityErrorEvent: the claim could not launch for want of capacity.
func insufficientCapacityErrorEvent(claim *karpv1.NodeClaim, err error) events.Event {
	return events.Event{InvolvedObject: claim, Type: corev1.EventTypeWarning, Reason: EventReasonInsufficientCapacityError,
		Message: truncateMessage(fmt.Sprintf("NodeClaim %s event: %s", claim.Name, err.Error())), DedupeValues: []string{string(claim.UID)}}
}

// insufficientCapacityErrorPodEvent: the claim planned for pod could not launch for want of
// capacity; limited by limiter across pods, as Karpenter's.
func insufficientCapacityErrorPodEvent(pod *corev1.Pod, claim *karpv1.NodeClaim, err error, limiter events.RateLimiter) events.Event {
	return events.Event{InvolvedObject: pod, Type: corev1.EventTypeWarning, Reason: EventReasonInsufficientCapacityError,
		Message:      truncateMessage(fmt.Sprintf("NodeClaim %s nominated for this pod failed to launch: %s", claim.Name, err.Error())),
		DedupeValues: []string{string(pod.UID)}, RateLimiter: limiter}
}

// nodeClassNotReadyEvent: the claim's NodeClass is not ready; the claim is deleted.
func nodeClassNotReadyEvent(claim *karpv1.NodeClaim, err error) events.Event {
	return events.Event{InvolvedObject: claim, Type: corev1.EventTypeWarning, Reason: EventReasonNodeClassNotReady,
		Message: truncateMessage(fmt.Sprintf("NodeClaim %s event: %s", claim.Name, err.Error())), DedupeValues: []string{string(claim.UID)}}
}

// unregisteredTaintMissingEvent: the claim's Node joined without the unregistered taint.
func unregisteredTaintMissingEvent(claim *karpv1.NodeClaim) events.Event {
	return events.Event{InvolvedObject: claim, Type: corev1.EventTypeWarning, Reason: EventReasonUnregisteredTaintMissing,
		Message:      fmt.Sprintf("Missing %s taint which prevents registration related race conditions on Karpenter-managed nodes", karpv1.UnregisteredTaintKey),
		DedupeValues: []string{string(claim.UID)}}
}

// failedConsistencyCheckEvent: a consistency check found issue with the claim's Node; each
// distinct issue is recorded once per dedupe window.
func failedConsistencyCheckEvent(claim *karpv1.NodeClaim, issue string) events.Event {
	return events.Event{InvolvedObject: claim, Type: corev1.EventTypeWarning, Reason: EventReasonFailedConsistencyCheck,
		Message: issue, DedupeValues: []string{string(claim.UID), issue}}
}

// recorder publishes the package's Events; normal and warning record those of ours that
// Karpenter does not have, every time.
type recorder struct{ *events.Recorder }

func (r recorder) normal(obj runtime.Object, reason events.Reason, format string, args ...any) {
	r.Publish(events.Event{InvolvedObject: obj, Type: corev1.EventTypeNormal, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (r recorder) warning(obj runtime.Object, reason events.Reason, format string, args ...any) {
	r.Publish(events.Event{InvolvedObject: obj, Type: corev1.EventTypeWarning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}
