package nodeclaim

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Reasons of the Events recorded on NodeClaims.
const (
	// EventReasonLaunched: the cloud provider launched the claim's instance.
	EventReasonLaunched = "Launched"
	// EventReasonLaunchFailed: launching failed; retried unless the error is terminal, in which
	// case the claim is deleted.
	EventReasonLaunchFailed = "LaunchFailed"
	// EventReasonInsufficientCapacity: every offering tried was out of capacity; they are marked
	// unavailable and the claim is deleted.
	EventReasonInsufficientCapacity = "InsufficientCapacity"
	// EventReasonNodeClassNotReady: the claim's NodeClass is missing or not ready; the launch
	// waits.
	EventReasonNodeClassNotReady = "NodeClassNotReady"
	// EventReasonRegistered: the claim's Node joined the cluster and was registered.
	EventReasonRegistered = "Registered"
	// EventReasonInitialized: the claim's Node is ready for pods.
	EventReasonInitialized = "Initialized"
	// EventReasonLivenessExpired: the claim did not launch or register within the registration
	// TTL and is deleted.
	EventReasonLivenessExpired = "LivenessExpired"
	// EventReasonNodeDeleted: the registered Node was deleted, so the claim is deleted too.
	EventReasonNodeDeleted = "NodeDeleted"
	// EventReasonInstanceTerminating: the claim is deleting and its instance is terminating.
	EventReasonInstanceTerminating = "InstanceTerminating"
	// EventReasonFinalized: the instance is gone and the claim's finalizer removed.
	EventReasonFinalized = "Finalized"
	// EventReasonInstanceGone: the cloud provider no longer has the claim's instance; the
	// garbage collector deletes the claim.
	EventReasonInstanceGone = "InstanceGone"
)

// recorder is a nil-safe record.EventRecorder.
type recorder struct{ r record.EventRecorder }

func (r recorder) normal(obj runtime.Object, reason, format string, args ...any) {
	if r.r != nil {
		r.r.Eventf(obj, corev1.EventTypeNormal, reason, format, args...)
	}
}

func (r recorder) warning(obj runtime.Object, reason, format string, args ...any) {
	if r.r != nil {
		r.r.Eventf(obj, corev1.EventTypeWarning, reason, format, args...)
	}
}

func newRecorder(r record.EventRecorder) recorder { return recorder{r: r} }
