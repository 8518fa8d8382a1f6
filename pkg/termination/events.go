package termination

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// Reasons of the Events the controller records. Those Karpenter has carry its reason and
// message; docs/events.md lists them all.
const (
	// EventReasonDraining (NodeClaim and Node): the node was cordoned and its drain began.
	// Ours only.
	EventReasonDraining events.Reason = "Draining"
	// EventReasonFailedDraining (Node and NodeClaim, Warning): the drain cannot finish yet:
	// pods wait for eviction, a PodDisruptionBudget refused one, or a pod is annotated
	// do-not-disrupt.
	EventReasonFailedDraining events.Reason = "FailedDraining"
	// EventReasonEvicted (Pod): the pod was evicted through the Eviction API.
	EventReasonEvicted events.Reason = "Evicted"
	// EventReasonDisrupted (Pod): the node's termination grace period ran out (or the pod's own
	// would outlast it) and the pod was deleted without an eviction, bypassing its
	// PodDisruptionBudget and do-not-disrupt annotation.
	EventReasonDisrupted events.Reason = "Disrupted"
	// EventReasonTerminationGracePeriodExpiring (Node and NodeClaim, Warning): the claim has a
	// termination deadline; every pod left is deleted by then.
	EventReasonTerminationGracePeriodExpiring events.Reason = "TerminationGracePeriodExpiring"
	// EventReasonAwaitingVolumeDetachment (Node): the node is drained and its instance waits
	// for the VolumeAttachments of its volumes to go.
	EventReasonAwaitingVolumeDetachment events.Reason = "AwaitingVolumeDetachment"
	// EventReasonNodeDeleted (NodeClaim): its Node was deleted directly, so the claim is deleted
	// and drained through the same path. Ours only.
	EventReasonNodeDeleted events.Reason = "NodeDeleted"
	// EventReasonTerminated (NodeClaim and Node): the node is drained, its instance terminated
	// and its finalizers removed. Ours only.
	EventReasonTerminated events.Reason = "Terminated"
)

// Karpenter's details of a FailedDraining event (after "Failed to drain node, ").
const (
	// pdbViolationDetail: the Eviction API refused for a PodDisruptionBudget (429).
	pdbViolationDetail = "evicting pod violates a PDB"
	// multiplePDBsDetail: the Eviction API refused because several budgets select the pod.
	multiplePDBsDetail = "eviction does not support multiple PDBs"
)

// multiplePDBsMessage is the Eviction API's refusal of a pod more than one
// PodDisruptionBudget selects.
const multiplePDBsMessage = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."

// evictedEvent: the pod was evicted, for reason (the claim's disruption reason, or
// "Forceful Termination").
func evictedEvent(pod *corev1.Pod, reason string) events.Event {
	return events.Event{InvolvedObject: pod, Type: corev1.EventTypeNormal, Reason: EventReasonEvicted,
		Message: "Evicted pod: " + reason, DedupeValues: []string{pod.Name}}
}

// disruptedEvent: the pod is deleted without an eviction, granted grace seconds of its own
// terminationGracePeriodSeconds, for the node to be gone by deadline.
func disruptedEvent(pod *corev1.Pod, grace int64, deadline time.Time) events.Event {
	var own int64
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		own = *pod.Spec.TerminationGracePeriodSeconds
	}
	return events.Event{InvolvedObject: pod, Type: corev1.EventTypeNormal, Reason: EventReasonDisrupted,
		Message: fmt.Sprintf("Deleting the pod to accommodate the terminationTime %v of the node. The pod was granted %v seconds of grace-period of its %v terminationGracePeriodSeconds. This bypasses the PDB of the pod and the do-not-disrupt annotation.",
			deadline, grace, own),
		DedupeValues: []string{pod.Name}}
}

// failedDrainingEvents: the drain of the claim's nodes cannot finish yet, for detail; pod is the
// pod the detail is about, nil for the drain as a whole. Karpenter records it on the Node, once
// in two minutes per node; we record it on the NodeClaim too, and once in two minutes per node
// and pod, so that each pod holding the drain is named.
func failedDrainingEvents(claim *karpv1.NodeClaim, nodes []*corev1.Node, pod *corev1.Pod, detail string) []events.Event {
	message := "Failed to drain node, " + detail
	dedupe := func(name string) []string {
		if pod == nil {
			return []string{name}
		}
		return []string{name, podKey(pod)}
	}
	out := []events.Event{{InvolvedObject: claim, Type: corev1.EventTypeWarning, Reason: EventReasonFailedDraining,
		Message: message, DedupeValues: dedupe(claim.Name)}}
	for _, node := range nodes {
		out = append(out, events.Event{InvolvedObject: node, Type: corev1.EventTypeWarning, Reason: EventReasonFailedDraining,
			Message: message, DedupeValues: dedupe(node.Name)})
	}
	return out
}

// waitingForEvictionDetail is Karpenter's FailedDraining detail of a drain pass that left n pods.
func waitingForEvictionDetail(n int) string {
	return fmt.Sprintf("%d pods are waiting to be evicted", n)
}

// podDetail is a FailedDraining detail about one pod, as Karpenter's errors name it:
// "what (Pod=namespace/name)", with more key=value pairs (sorted by key) when given.
func podDetail(what string, pod *corev1.Pod, keysAndValues ...string) string {
	pairs := []string{"Pod=" + podKey(pod)}
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		pairs = append(pairs, keysAndValues[i]+"="+keysAndValues[i+1])
	}
	return fmt.Sprintf("%s (%s)", what, strings.Join(pairs, ", "))
}

// gracePeriodExpiringEvents: every pod of the claim's nodes is deleted by the termination
// timestamp (the karpenter.sh/nodeclaim-termination-timestamp annotation's value).
func gracePeriodExpiringEvents(claim *karpv1.NodeClaim, nodes []*corev1.Node, timestamp string) []events.Event {
	message := "All pods will be deleted by " + timestamp
	out := []events.Event{{InvolvedObject: claim, Type: corev1.EventTypeWarning, Reason: EventReasonTerminationGracePeriodExpiring,
		Message: message, DedupeValues: []string{claim.Name}}}
	for _, node := range nodes {
		out = append(out, events.Event{InvolvedObject: node, Type: corev1.EventTypeWarning, Reason: EventReasonTerminationGracePeriodExpiring,
			Message: message, DedupeValues: []string{node.Name}})
	}
	return out
}

// awaitingVolumeDetachmentEvent: the node's instance waits for these VolumeAttachments to go.
func awaitingVolumeDetachmentEvent(node *corev1.Node, attachments []*storagev1.VolumeAttachment) events.Event {
	names := make([]string, len(attachments))
	for i, va := range attachments {
		names[i] = va.Name
	}
	return events.Event{InvolvedObject: node, Type: corev1.EventTypeNormal, Reason: EventReasonAwaitingVolumeDetachment,
		Message: fmt.Sprintf("Awaiting deletion of bound volumeattachments (%s)", prettySlice(names, 5)), DedupeValues: []string{node.Name}}
}

// prettySlice is Karpenter's list of at most limit items: "a, b and 3 other(s)".
func prettySlice(items []string, limit int) string {
	if len(items) <= limit {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d other(s)", strings.Join(items[:limit], ", "), len(items)-limit)
}

// drainingEvents: the node was cordoned and its drain began.
func drainingEvents(claim *karpv1.NodeClaim, node *corev1.Node) []events.Event {
	message := "Draining node " + node.Name
	return []events.Event{
		{InvolvedObject: claim, Type: corev1.EventTypeNormal, Reason: EventReasonDraining, Message: message, DedupeValues: []string{string(claim.UID), node.Name}},
		{InvolvedObject: node, Type: corev1.EventTypeNormal, Reason: EventReasonDraining, Message: message, DedupeValues: []string{string(node.UID)}},
	}
}

// nodeDeletedEvent: the claim is deleted because its Node was.
func nodeDeletedEvent(claim *karpv1.NodeClaim, node *corev1.Node) events.Event {
	return events.Event{InvolvedObject: claim, Type: corev1.EventTypeNormal, Reason: EventReasonNodeDeleted,
		Message: fmt.Sprintf("Node %s was deleted; terminating its nodeclaim", node.Name), DedupeValues: []string{string(claim.UID)}}
}

// terminatedEvents: the claim and its nodes are gone.
func terminatedEvents(claim *karpv1.NodeClaim, nodes []*corev1.Node) []events.Event {
	out := []events.Event{{InvolvedObject: claim, Type: corev1.EventTypeNormal, Reason: EventReasonTerminated,
		Message: "Terminated nodeclaim " + claim.Name, DedupeValues: []string{string(claim.UID)}}}
	for _, node := range nodes {
		out = append(out, events.Event{InvolvedObject: node, Type: corev1.EventTypeNormal, Reason: EventReasonTerminated,
			Message: "Terminated node " + node.Name, DedupeValues: []string{string(node.UID)}})
	}
	return out
}
