package interruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// Kind is what a cloud says is about to happen to an instance.
type Kind string

// Kinds of interruption notice.
const (
	// Spot: the spot instance is reclaimed shortly (two minutes on EC2).
	Spot Kind = "SpotInterruption"
	// Rebalance: the spot instance is at elevated risk of interruption. Recorded,
	// not acted on, as Karpenter does.
	Rebalance Kind = "RebalanceRecommendation"
	// ScheduledChange: the instance is to be retired or maintained (an AWS Health
	// scheduled change), recorded as InstanceUnhealthy as Karpenter does.
	ScheduledChange Kind = "ScheduledChange"
	// StateChange: the instance is stopping, stopped, shutting down or terminated.
	StateChange Kind = "StateChange"
	// InstanceStatus: the instance's status check (its virtual machine) has failed
	// for two minutes (EC2 DescribeInstanceStatus). The node is terminated without waiting for
	// a graceful drain, as Karpenter does: the instance is broken.
	InstanceStatus Kind = "InstanceStatus"
	// SystemStatus: the instance's system status check (its host) has failed for
	// two minutes; handled as InstanceStatus.
	SystemStatus Kind = "SystemStatus"
	// EventStatus: EC2 has scheduled an event (reboot, maintenance, retirement,
	// stop) for the instance (DescribeInstanceStatus); handled as a scheduled change.
	EventStatus Kind = "EventStatus"
)

// Handler acts on a cloud's notice about an instance, whichever way the notice came
// (EC2's through the SQS queue or DescribeInstanceStatus, the simulated cloud's by polling it):
// for a spot interruption it marks the offering out of capacity, so the replacement goes
// elsewhere; for a spot interruption, a scheduled change or event, or a stop it deletes the
// NodeClaim, which cordons and drains the node (the evicted pods are provisioned at once) and
// terminates the instance; a rebalance recommendation is only recorded. A failed instance or
// system status check deletes the NodeClaim too, first setting its
// karpenter.sh/nodeclaim-termination-timestamp to now, so termination does not wait for pods
// to drain gracefully. Each notice is an Event on the NodeClaim and its Node, and the deletion
// another, as Karpenter's.
type Handler struct {
	// Kube reads Nodes, and annotates and deletes NodeClaims.
	Kube client.Client
	// Unavailable learns of reclaimed spot offerings; nil for none.
	Unavailable *cloudprovider.UnavailableOfferings
	// Events records on NodeClaims and Nodes; nil for none.
	Events *events.Recorder
	// Clock is the time written as the termination timestamp of a broken instance's claim and
	// as the deletion time of a claim it deletes; nil for the real clock.
	Clock clock.PassiveClock
}

// Handle acts on one notice about the instance of claim. state is the new state of an
// StateChange (stopping, stopped, shutting-down or terminated). claim is kept as
// the API server now has it: with the termination timestamp Handle wrote, and a deletion
// timestamp once Handle deleted it.
func (h *Handler) Handle(ctx context.Context, kind Kind, claim *karpv1.NodeClaim, instanceID, state string) error {
	node, err := h.nodeOf(ctx, claim)
	if err != nil {
		return err
	}
	switch kind {
	case Rebalance:
		h.Events.Publish(interruptionEvents(claim, node, corev1.EventTypeNormal, EventReasonRebalanceRecommendation, "Spot rebalance recommendation was triggered")...)
		return nil
	case Spot:
		zone, typ := claim.Labels[corev1.LabelTopologyZone], claim.Labels[corev1.LabelInstanceTypeStable]
		if h.Unavailable != nil && zone != "" && typ != "" {
			h.Unavailable.MarkUnavailable(cloudprovider.OfferingID{InstanceType: typ, Zone: zone, CapacityType: karpv1.CapacityTypeSpot})
		}
		h.Events.Publish(interruptionEvents(claim, node, corev1.EventTypeWarning, EventReasonSpotInterrupted, "Spot interruption warning was triggered")...)
	case ScheduledChange, EventStatus, InstanceStatus, SystemStatus:
		h.Events.Publish(interruptionEvents(claim, node, corev1.EventTypeWarning, EventReasonInstanceUnhealthy, "An unhealthy warning was triggered for the instance")...)
		if kind == InstanceStatus || kind == SystemStatus {
			if err := h.terminateNow(ctx, claim); err != nil {
				return err
			}
		}
	case StateChange:
		if instanceStopping(state) {
			h.Events.Publish(interruptionEvents(claim, node, corev1.EventTypeWarning, EventReasonInstanceStopping, "Instance is stopping")...)
		} else {
			h.Events.Publish(interruptionEvents(claim, node, corev1.EventTypeWarning, EventReasonInstanceTerminating, "Instance is terminating")...)
		}
	default:
		return nil
	}
	if claim.DeletionTimestamp != nil {
		return nil
	}
	if err := h.Kube.Delete(ctx, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting nodeclaim %s of interrupted instance %s: %w", claim.Name, instanceID, err)
	}
	// The claim is being deleted now: another notice about it handled with this copy (another
	// unhealthy category of the instance) does not delete and count it again.
	deleted := metav1.NewTime(h.clock().Now())
	claim.DeletionTimestamp = &deleted
	// As Karpenter's AWS provider, the reason is the message's kind.
	metrics.NodeClaimDisrupted(MessageType(kind, state), claim.Labels[karpv1.NodePoolLabelKey], claim.Labels[karpv1.CapacityTypeLabelKey], "", metrics.TerminationMode(claim))
	log.FromContext(ctx).Info("deleted nodeclaim of interrupted instance", "nodeclaim", claim.Name, "instance", instanceID, "kind", kind)
	h.Events.Publish(terminatingOnInterruptionEvents(claim, node)...)
	return nil
}

// terminateNow sets the claim's karpenter.sh/nodeclaim-termination-timestamp to now unless it
// has one, so that termination deletes its pods without waiting for evictions, PDBs or volume
// detachment: Karpenter's forceful termination of a broken instance.
func (h *Handler) terminateNow(ctx context.Context, claim *karpv1.NodeClaim) error {
	if _, ok := claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		return nil
	}
	base := claim.DeepCopy()
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = h.clock().Now().UTC().Format(time.RFC3339)
	if err := h.Kube.Patch(ctx, claim, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("annotating the termination timestamp of nodeclaim %s: %w", claim.Name, err)
	}
	return nil
}

// clock is Clock, or the real clock.
func (h *Handler) clock() clock.PassiveClock {
	if h.Clock != nil {
		return h.Clock
	}
	return clock.RealClock{}
}

// nodeOf returns the claim's Node, nil when it has none (yet, or any longer).
func (h *Handler) nodeOf(ctx context.Context, claim *karpv1.NodeClaim) (*corev1.Node, error) {
	if claim.Status.NodeName == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	if err := h.Kube.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting node %s of nodeclaim %s: %w", claim.Status.NodeName, claim.Name, err)
	}
	return node, nil
}

// MessageType is a notice's kind as Karpenter's metrics label it
// (karpenter_interruption_received_messages_total's message_type, and the reason of
// karpenter_nodeclaims_disrupted_total): a state change is instance_stopped or
// instance_terminated by its new state, the status check kinds (which never come through the
// queue, only as a disruption reason) instance_status, system_status and event_status, a kind
// not acted on no_op.
func MessageType(kind Kind, state string) string {
	switch kind {
	case Spot:
		return metrics.MessageTypeSpotInterrupted
	case Rebalance:
		return metrics.MessageTypeRebalanceRecommendation
	case ScheduledChange:
		return metrics.MessageTypeScheduledChange
	case StateChange:
		if instanceStopping(state) {
			return metrics.MessageTypeInstanceStopped
		}
		return metrics.MessageTypeInstanceTerminated
	case InstanceStatus:
		return metrics.MessageTypeInstanceStatus
	case SystemStatus:
		return metrics.MessageTypeSystemStatus
	case EventStatus:
		return metrics.MessageTypeEventStatus
	}
	return metrics.MessageTypeNoOp
}

// instanceStopping says a state change's new state is a stop, not a termination.
func instanceStopping(state string) bool { return state == "stopping" || state == "stopped" }
