package aws

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	kevents "github.com/openkarpenter/karpenter/pkg/events"
)

// EventReasonSpotServiceLinkedRole is the reason of the Warning on a NodeClaim whose spot launch
// failed for want of the Spot service-linked role. Karpenter records this Event with no reason
// at all, which no one can select or alert on; we give it this one.
const EventReasonSpotServiceLinkedRole kevents.Reason = "SpotServiceLinkedRoleCreationFailure"

// spotServiceLinkedRoleEvent: Karpenter's message, then how to fix it.
func spotServiceLinkedRoleEvent(claim *karpv1.NodeClaim) kevents.Event {
	return kevents.Event{InvolvedObject: claim, Type: corev1.EventTypeWarning, Reason: EventReasonSpotServiceLinkedRole,
		Message:      fmt.Sprintf("Attempted to launch a spot instance but failed due to %q: create the EC2 Spot service-linked role (aws iam create-service-linked-role --aws-service-name spot.amazonaws.com) or let Karpenter's role create it (iam:CreateServiceLinkedRole); launching on-demand meanwhile", spotRoleMissingCode),
		DedupeValues: []string{string(claim.UID)}}
}
