package scheduler

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// ledger counts a run's capacity reservation slots, as Karpenter's ReservationManager
// (v1.15.0 provisioning/scheduling/reservationmanager.go): a reservation takes as many claims as
// its offerings' ReservationCapacity (the least any instance type reports, should NodePools
// see it differently); each claim whose cheapest offering is reserved holds one slot and is
// pinned to its reservation, and once a reservation's slots are all held its offerings are no
// longer offered to other claims, which fall back to spot or on-demand as their NodePools allow.
//
// Karpenter holds a slot of every reservation a claim could launch into and, in the
// provisioner's strict mode, leaves a pod that finds them all held to its next loop, where the
// launched claims have made the reservation full and the pod falls back. Here a claim holds
// the one slot its target launches into and the pod falls back in the same batch: the same
// nodes, a loop sooner.
type ledger struct {
	// left is, per reservation ID, the slots no claim of the run holds yet.
	left map[string]int
}

// newLedger counts the slots of the reservations the NodePools' instance types offer; nil when
// they offer none, which costs nothing on the hot path.
func newLedger(pools []*NodePool) *ledger {
	var l *ledger
	for _, np := range pools {
		for _, it := range np.InstanceTypes {
			for _, o := range it.Offerings {
				if !o.Reserved() || !o.Available {
					continue
				}
				if l == nil {
					l = &ledger{left: map[string]int{}}
				}
				if n, ok := l.left[o.ReservationID]; !ok || o.ReservationCapacity < n {
					l.left[o.ReservationID] = o.ReservationCapacity
				}
			}
		}
	}
	return l
}

// offers reports whether a claim with these requirements may launch into the offering: any
// offering but a reservation with no slot left, unless the requirements pin that reservation
// (the claim holds one of its slots).
func (l *ledger) offers(o cloudprovider.Offering, reqs scheduling.Requirements) bool {
	if l == nil || !o.Reserved() || l.left[o.ReservationID] > 0 {
		return true
	}
	return pinned(reqs) == o.ReservationID
}

// cheapest is the instance type's cheapest available offering that the requirements allow and
// the ledger offers.
func (l *ledger) cheapest(it *cloudprovider.InstanceType, reqs scheduling.Requirements) (cloudprovider.Offering, bool) {
	if l == nil {
		return it.CheapestOffering(reqs)
	}
	f := cloudprovider.NewOfferingFilter(reqs)
	return it.Offerings.CheapestWhere(func(o cloudprovider.Offering) bool {
		return o.Available && f.Allows(o) && l.offers(o, reqs)
	})
}

// pinned is the reservation the requirements pin a claim to, or "".
func pinned(reqs scheduling.Requirements) string {
	r, ok := reqs.Get(awsv1.LabelCapacityReservationID)
	if !ok || !r.IsFinite() || r.Len() != 1 {
		return ""
	}
	return r.Values()[0]
}

// reserve gives the claim a slot of the reservation its target launches into, when the
// target's cheapest offering is reserved, has a slot left, and the claim holds none yet, and
// pins the claim to it
// as Karpenter's NodeClaim.FinalizeScheduling does: capacity type reserved, that reservation's
// ID. Later pods join the claim only where that reservation still takes them (Karpenter's
// strict mode). Taking a reservation's last slot makes the NodePools' cached prices stale.
func (s *solver) reserve(c *claimState) {
	l := s.ledger
	if l == nil || c.target == nil || c.reservation != "" {
		return
	}
	o, ok := l.cheapest(c.target.it, c.requirements)
	if !ok || !o.Reserved() || l.left[o.ReservationID] <= 0 {
		// A full reservation is offered only where the requirements pin it: a NodePool that
		// names the one reservation it launches into. Such a claim holds no slot; its launch
		// finds the reservation full, as Karpenter's strict mode leaves it.
		return
	}
	c.reservation = o.ReservationID
	l.left[o.ReservationID]--
	c.requirements = c.requirements.
		With(scheduling.MustRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeReserved)).
		With(scheduling.MustRequirement(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, o.ReservationID))
	if l.left[o.ReservationID] == 0 {
		for _, ps := range s.pools {
			ps.forgetPrices()
		}
	}
}
