package provisioning

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// Reasons of the Events on pods of a provisioning pass, as Karpenter's.
const (
	// EventReasonNominated (Pod): the pod is expected to land on a new NodeClaim or an
	// existing node.
	EventReasonNominated events.Reason = "Nominated"
	// EventReasonFailedScheduling (Pod, Warning): no NodePool can make a node for the pod.
	EventReasonFailedScheduling events.Reason = "FailedScheduling"
	// EventReasonNoCompatibleInstanceTypes (NodePool, Warning): the NodePool's requirements
	// leave no instance type it could launch (or too few for their minValues), so it launches
	// nothing.
	EventReasonNoCompatibleInstanceTypes events.Reason = "NoCompatibleInstanceTypes"
)

// Dedupe timeouts of the provisioning Events, as Karpenter's.
const (
	// failedSchedulingDedupe: a pod's FailedScheduling Event is not repeated within it.
	failedSchedulingDedupe = 5 * time.Minute
	// noCompatibleInstanceTypesDedupe: a NodePool's NoCompatibleInstanceTypes Event is not
	// repeated within it.
	noCompatibleInstanceTypesDedupe = time.Minute
)

// nominatedEvent: the pod should schedule on the claim and node named (either may be empty),
// limited by limiter across pods.
func nominatedEvent(pod *corev1.Pod, claim, node string, limiter events.RateLimiter) events.Event {
	var on []string
	if claim != "" {
		on = append(on, "nodeclaim/"+claim)
	}
	if node != "" {
		on = append(on, "node/"+node)
	}
	return events.Event{InvolvedObject: pod, Type: corev1.EventTypeNormal, Reason: EventReasonNominated,
		Message: "Pod should schedule on: " + strings.Join(on, ", "), DedupeValues: []string{string(pod.UID)}, RateLimiter: limiter}
}

// failedSchedulingEvent: no NodePool can make a node for the pod, for err.
func failedSchedulingEvent(pod *corev1.Pod, err error) events.Event {
	return events.Event{InvolvedObject: pod, Type: corev1.EventTypeWarning, Reason: EventReasonFailedScheduling,
		Message: fmt.Sprintf("Failed to schedule pod, %s", err), DedupeValues: []string{string(pod.UID)}, DedupeTimeout: failedSchedulingDedupe}
}

// logRefusals logs, at debug level, how often each stage of the scheduler's pipeline turned
// pods away in the pass, per NodePool ("existing" for existing nodes and in-flight claims):
// the totals behind the pods' FailedScheduling Events.
func logRefusals(ctx context.Context, results *scheduler.Results) {
	if len(results.Refusals) == 0 {
		return
	}
	counts := make([]string, len(results.Refusals))
	for i, r := range results.Refusals {
		counts[i] = r.String()
	}
	log.FromContext(ctx).V(1).Info("scheduling refusals", "unplaced", len(results.PodErrors), "refusals", counts)
}

// noCompatibleInstanceTypesEvent: the NodePool's requirements filtered out every instance
// type, or (minValues) left too few to meet their minValues.
func noCompatibleInstanceTypesEvent(np *karpv1.NodePool, minValues bool) events.Event {
	message := "NodePool requirements filtered out all compatible available instance types"
	if minValues {
		message += " due to minValues incompatibility"
	}
	return events.Event{InvolvedObject: np, Type: corev1.EventTypeWarning, Reason: EventReasonNoCompatibleInstanceTypes,
		Message: message, DedupeValues: []string{string(np.UID)}, DedupeTimeout: noCompatibleInstanceTypesDedupe}
}

// refusalEvents: the node the pod was planned on turned it away, on the pod and on the NodePool
// (np may be nil). Ours only; each refusal is recorded.
func refusalEvents(pod *corev1.Pod, np *karpv1.NodePool, reason events.Reason, message string) []events.Event {
	out := []events.Event{{InvolvedObject: pod, Type: corev1.EventTypeWarning, Reason: reason, Message: message}}
	if np != nil {
		out = append(out, events.Event{InvolvedObject: np, Type: corev1.EventTypeWarning, Reason: reason,
			Message: fmt.Sprintf("pod %s/%s: %s", pod.Namespace, pod.Name, message)})
	}
	return out
}

// placementTargets maps the names the scheduler places pods on (a node's, or an in-flight
// claim's) to the claim and node they are, for the Nominated Event.
func placementTargets(snap *state.Snapshot) map[string][2]string {
	out := make(map[string][2]string, len(snap.Nodes))
	for _, sn := range snap.Nodes {
		var target [2]string
		if sn.NodeClaim != nil {
			target[0] = sn.NodeClaim.Name
		}
		if sn.Node != nil {
			target[1] = sn.Node.Name
		}
		out[sn.Name()] = target
	}
	return out
}
