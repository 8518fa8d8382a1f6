package expiration

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// expiringIDs is a cloud whose listed reservations are expiring; it records what it was asked.
type expiringIDs struct {
	expiring map[string]bool
	asked    []string
}

func (e *expiringIDs) ExpiringReservations(_ context.Context, ids []string) (map[string]bool, error) {
	e.asked = append(e.asked, ids...)
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = e.expiring[id]
	}
	return out, nil
}

// TestReservationControllerDeletesExpiring: the NodeClaims of an expiring capacity reservation
// are deleted, others kept, as the AWS provider v1.15.2's capacityreservation.expiration
// controller (Reconcile: NodeClaims labelled with a reservation ID, the reservation expiring).
func TestReservationControllerDeletesExpiring(t *testing.T) {
	inReservation := func(id string) func(*karpv1.NodeClaim) {
		return func(c *karpv1.NodeClaim) {
			c.Labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeReserved
			c.Labels[awsv1.LabelCapacityReservationID] = id
		}
	}
	block := claim(t, "in-block", "Never", inReservation("cr-0b10c"))
	odcr := claim(t, "in-odcr", "Never", inReservation("cr-00dc4"))
	plain := claim(t, "plain", "Never")
	cloud := &expiringIDs{expiring: map[string]bool{"cr-0b10c": true}}
	var seen []Expiry
	c := NewReservationController(env.Client, cloud, nil)
	c.Observe(func(x Expiry) { seen = append(seen, x) })
	if err := c.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		claim    *karpv1.NodeClaim
		deleting bool
	}{{block, true}, {odcr, false}, {plain, false}} {
		got := &karpv1.NodeClaim{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(tc.claim), got); err != nil {
			t.Fatal(err)
		}
		if deleting := got.DeletionTimestamp != nil; deleting != tc.deleting {
			t.Errorf("%s deleting = %v, want %v", tc.claim.Name, deleting, tc.deleting)
		}
	}
	if len(seen) != 1 || seen[0].NodeClaim != "in-block" || seen[0].Reservation != "cr-0b10c" {
		t.Errorf("observed %+v", seen)
	}
	if len(cloud.asked) != 2 {
		t.Errorf("asked about %v, want the two reservations the claims run in", cloud.asked)
	}
}
