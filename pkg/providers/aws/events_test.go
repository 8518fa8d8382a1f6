package aws

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	kevents "github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

// TestEventTable holds the provider's Events to docs/events.md: the spot service-linked role
// Warning on the NodeClaim, Karpenter's message followed by the fix, once per claim.
func TestEventTable(t *testing.T) {
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "c"}}
	eventlog.CheckTable(t, []eventlog.Case{{
		Name:   "spot service-linked role",
		Events: []kevents.Event{spotServiceLinkedRoleEvent(claim)},
		Want: [][5]string{{"NodeClaim", "default-abcde", "Warning", "SpotServiceLinkedRoleCreationFailure",
			`Attempted to launch a spot instance but failed due to "AuthFailure.ServiceLinkedRoleCreationNotPermitted": create the EC2 Spot service-linked role (aws iam create-service-linked-role --aws-service-name spot.amazonaws.com) or let Karpenter's role create it (iam:CreateServiceLinkedRole); launching on-demand meanwhile`}},
		Dedupe: [][]string{{"c"}},
	}})
}
