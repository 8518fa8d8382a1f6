package termination

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Reasons of the Events the controller records.
const (
	// EventReasonDraining (NodeClaim and Node): the node was cordoned and its drain began.
	EventReasonDraining = "Draining"
	// EventReasonFailedDraining (NodeClaim and Node, Warning): a pod could not be evicted yet,
	// because a PodDisruptionBudget refused or the pod is annotated do-not-disrupt.
	EventReasonFailedDraining = "FailedDraining"
	// EventReasonEvicted (Pod): the pod was evicted through the Eviction API.
	EventReasonEvicted = "Evicted"
	// EventReasonDisrupted (Pod): the node's termination grace period ran out (or the pod's own
	// would outlast it) and the pod was deleted without an eviction, bypassing its
	// PodDisruptionBudget and do-not-disrupt annotation; Karpenter's reason.
	EventReasonDisrupted = "Disrupted"
	// EventReasonNodeDeleted (NodeClaim): its Node was deleted directly, so the claim is deleted
	// and drained through the same path.
	EventReasonNodeDeleted = "NodeDeleted"
	// EventReasonTerminated (NodeClaim and Node): the node is drained, its instance terminated
	// and its finalizers removed.
	EventReasonTerminated = "Terminated"
)

// recorder is a nil-safe record.EventRecorder.
type recorder struct{ r record.EventRecorder }

func (r recorder) normal(obj runtime.Object, reason, format string, args ...any) {
	if r.r != nil && obj != nil {
		r.r.Eventf(obj, corev1.EventTypeNormal, reason, format, args...)
	}
}

func (r recorder) warning(obj runtime.Object, reason, format string, args ...any) {
	if r.r != nil && obj != nil {
		r.r.Eventf(obj, corev1.EventTypeWarning, reason, format, args...)
	}
}
