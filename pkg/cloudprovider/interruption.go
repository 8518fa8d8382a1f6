package cloudprovider

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// InterruptionKind is what a cloud says is about to happen to an instance.
type InterruptionKind string

// Kinds of interruption notice.
const (
	// InterruptionSpot: the spot instance is reclaimed shortly (two minutes on EC2).
	InterruptionSpot InterruptionKind = "SpotInterruption"
	// InterruptionRebalance: the spot instance is at elevated risk of interruption. Recorded,
	// not acted on, as Karpenter does.
	InterruptionRebalance InterruptionKind = "RebalanceRecommendation"
	// InterruptionScheduledChange: the instance is to be retired or maintained.
	InterruptionScheduledChange InterruptionKind = "ScheduledChange"
	// InterruptionStateChange: the instance is stopping, stopped, shutting down or terminated.
	InterruptionStateChange InterruptionKind = "StateChange"
)

// Event reasons of interruption notices, on the NodeClaim.
const (
	EventReasonSpotInterrupted         = "SpotInterrupted"
	EventReasonRebalanceRecommendation = "SpotRebalanceRecommendation"
	EventReasonScheduledChange         = "InstanceScheduledChange"
	EventReasonInstanceStopping        = "InstanceStopping"
)

// InterruptionHandler acts on a cloud's notice about an instance, whichever way the notice came
// (EC2's through the SQS queue, the simulated cloud's by polling it): for a spot interruption
// it marks the offering out of capacity, so the replacement goes elsewhere; for a spot
// interruption, a scheduled change or a stop it deletes the NodeClaim, which cordons and drains
// the node (the evicted pods are provisioned at once) and terminates the instance; a rebalance
// recommendation is only recorded. Each notice is an Event on the NodeClaim.
type InterruptionHandler struct {
	// Kube deletes NodeClaims.
	Kube client.Client
	// Unavailable learns of reclaimed spot offerings; nil for none.
	Unavailable *UnavailableOfferings
	// Events records on NodeClaims; nil for none.
	Events record.EventRecorder
}

// Handle acts on one notice about the instance of claim. detail adds to the Event (the
// stopping state of a state change).
func (h *InterruptionHandler) Handle(ctx context.Context, kind InterruptionKind, claim *karpv1.NodeClaim, instanceID, detail string) error {
	var reason string // karpenter_nodeclaims_disrupted_total's, as Karpenter's AWS provider names the message kind
	switch kind {
	case InterruptionRebalance:
		h.event(claim, corev1.EventTypeNormal, EventReasonRebalanceRecommendation, fmt.Sprintf("EC2 recommends rebalancing spot instance %s", instanceID))
		return nil
	case InterruptionSpot:
		zone, typ := claim.Labels[corev1.LabelTopologyZone], claim.Labels[corev1.LabelInstanceTypeStable]
		if h.Unavailable != nil && zone != "" && typ != "" {
			h.Unavailable.MarkUnavailable(OfferingID{InstanceType: typ, Zone: zone, CapacityType: karpv1.CapacityTypeSpot})
		}
		h.event(claim, corev1.EventTypeWarning, EventReasonSpotInterrupted, fmt.Sprintf("Spot instance %s is being reclaimed: draining and replacing the node", instanceID))
		reason = metrics.ReasonSpotInterrupted
	case InterruptionScheduledChange:
		reason = metrics.ReasonScheduledChange
		h.event(claim, corev1.EventTypeWarning, EventReasonScheduledChange, fmt.Sprintf("Instance %s has a scheduled change: draining and replacing the node", instanceID))
	case InterruptionStateChange:
		reason = metrics.ReasonInstanceStopped
		if detail == "shutting-down" || detail == "terminated" {
			reason = metrics.ReasonInstanceTerminated
		}
		h.event(claim, corev1.EventTypeWarning, EventReasonInstanceStopping, fmt.Sprintf("Instance %s is %s: draining and replacing the node", instanceID, detail))
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
	metrics.NodeClaimDisrupted(reason, claim.Labels[karpv1.NodePoolLabelKey], claim.Labels[karpv1.CapacityTypeLabelKey], "", metrics.TerminationMode(claim))
	log.FromContext(ctx).Info("deleted nodeclaim of interrupted instance", "nodeclaim", claim.Name, "instance", instanceID, "kind", kind)
	return nil
}

func (h *InterruptionHandler) event(claim *karpv1.NodeClaim, typ, reason, message string) {
	if h.Events != nil {
		h.Events.Event(claim, typ, reason, message)
	}
}
