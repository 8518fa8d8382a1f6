package sim

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// Reservation is an EC2 capacity reservation the simulated account holds: an On-Demand
// Capacity Reservation or a Capacity Block of Count instances of InstanceType in Zone. An
// EC2NodeClass's capacityReservationSelectorTerms select it as they select reservations on
// EC2 (by ID, or by tags with the owner and instance match criteria), and with the
// ReservedCapacity gate the cloud offers it as Karpenter's AWS provider v1.15.2 does: one
// reserved offering of its type in its zone at the on-demand price / 10,000,000, available
// while it has a free slot.
type Reservation struct {
	// ID is the reservation's ID, cr- and 17 hex digits or more.
	ID string
	// InstanceType and Zone are what the reservation holds capacity for.
	InstanceType, Zone string
	// Count is how many instances it takes at once.
	Count int
	// Type is default (an On-Demand Capacity Reservation) or capacity-block; empty means
	// default.
	Type string
	// Interruptible says the owner may reclaim the capacity (an interruptible reservation).
	Interruptible bool
	// InstanceMatchCriteria is targeted (only launches that name it; the default) or open.
	InstanceMatchCriteria string
	// OwnerID is the owning account; empty means Account.
	OwnerID string
	// Tags are the reservation's tags, which selector terms may match.
	Tags map[string]string
	// End, when set, is when the reservation ends: a Capacity Block's instances are
	// terminated then, as EC2 reclaims them; an On-Demand Capacity Reservation's keep running
	// as on-demand instances. After End nothing launches into it.
	End time.Time
}

// Account is the simulated cloud's account ID, the owner of reservations that name none.
const Account = "111122223333"

// reservationIDPattern is EC2's form of a capacity reservation ID, as the EC2NodeClass's
// validation takes it.
var reservationIDPattern = regexp.MustCompile(`^cr-[0-9a-z]+$`)

// Validate reports what is wrong with the reservation, given the cloud's zones.
func (r Reservation) Validate(zones []string) error {
	switch {
	case !reservationIDPattern.MatchString(r.ID):
		return fmt.Errorf("capacity reservation id %q is not cr- followed by lower-case letters and digits (such as cr-0123456789abcdef0)", r.ID)
	case r.InstanceType == "":
		return fmt.Errorf("capacity reservation %s: instance type is required", r.ID)
	case !slices.Contains(zones, r.Zone):
		return fmt.Errorf("capacity reservation %s: zone %q is not one of the cloud's zones %v", r.ID, r.Zone, zones)
	case r.Count <= 0:
		return fmt.Errorf("capacity reservation %s: count %d must be at least 1", r.ID, r.Count)
	case r.Type != "" && r.Type != string(awsv1.CapacityReservationTypeDefault) && r.Type != string(awsv1.CapacityReservationTypeCapacityBlock):
		return fmt.Errorf("capacity reservation %s: type %q is neither default nor capacity-block", r.ID, r.Type)
	case r.InstanceMatchCriteria != "" && r.InstanceMatchCriteria != "open" && r.InstanceMatchCriteria != "targeted":
		return fmt.Errorf("capacity reservation %s: instance match criteria %q is neither open nor targeted", r.ID, r.InstanceMatchCriteria)
	}
	return nil
}

// withDefaults fills the fields left empty.
func (r Reservation) withDefaults() Reservation {
	r.Type = cmp.Or(r.Type, string(awsv1.CapacityReservationTypeDefault))
	r.InstanceMatchCriteria = cmp.Or(r.InstanceMatchCriteria, "targeted")
	r.OwnerID = cmp.Or(r.OwnerID, Account)
	return r
}

// capacityBlockWarning is how long before its end a Capacity Block is expiring, as the AWS
// provider v1.15.2 marks it (and stops offering it).
const capacityBlockWarning = 40 * time.Minute

// selectedReservations are the cloud's reservations the NodeClass's terms select, active at
// now, as v1.15.2's capacity reservation provider lists them from EC2 (active reservations
// only; by ID, or by tags, a value of "*" matching any, owner and match criteria).
func (c *Cloud) selectedReservations(nc *awsv1.EC2NodeClass, now time.Time) []awsv1.CapacityReservation {
	var out []awsv1.CapacityReservation
	for _, r := range c.reservations {
		if !r.End.IsZero() && !now.Before(r.End) || !slices.ContainsFunc(nc.Spec.CapacityReservationSelectorTerms, r.SelectedBy) {
			continue
		}
		cr := awsv1.CapacityReservation{ID: r.ID, AvailabilityZone: r.Zone, InstanceType: r.InstanceType, OwnerID: r.OwnerID,
			InstanceMatchCriteria: r.InstanceMatchCriteria, ReservationType: awsv1.CapacityReservationType(r.Type), Interruptible: r.Interruptible,
			State: awsv1.CapacityReservationStateActive}
		if !r.End.IsZero() {
			end := metav1.NewTime(r.End)
			cr.EndTime = &end
			if r.Type == string(awsv1.CapacityReservationTypeCapacityBlock) && !now.Before(r.End.Add(-capacityBlockWarning)) {
				cr.State = awsv1.CapacityReservationStateExpiring
			}
		}
		out = append(out, cr)
	}
	return out
}

// SelectedBy reports whether a selector term selects the reservation, as EC2 lists reservations
// for the AWS provider v1.15.2: by ID, or by tags (a value of "*" matching any), owner and
// instance match criteria.
func (r Reservation) SelectedBy(t awsv1.CapacityReservationSelectorTerm) bool {
	if t.ID != "" {
		return t.ID == r.ID
	}
	if len(t.Tags) == 0 && t.InstanceMatchCriteria == "" {
		return false
	}
	if t.OwnerID != "" && t.OwnerID != r.OwnerID || t.InstanceMatchCriteria != "" && t.InstanceMatchCriteria != r.InstanceMatchCriteria {
		return false
	}
	for k, v := range t.Tags {
		if have, ok := r.Tags[k]; !ok || v != "*" && have != v {
			return false
		}
	}
	return true
}

// freeSlotsLocked is how many more instances the reservation takes.
func (c *Cloud) freeSlotsLocked(r Reservation) int {
	return r.Count - c.used[cloudprovider.OfferingID{InstanceType: r.InstanceType, Zone: r.Zone, CapacityType: karpv1.CapacityTypeReserved, ReservationID: r.ID}]
}

// withReservedOfferings adds to the instance types one reserved offering per reservation in
// the NodeClass's status that has not ended or started expiring by now (whether the status
// says so yet or not), with the ReservedCapacity gate, as the AWS provider v1.15.2's
// ReservedCapacityResolver: in the reservation's zone, at the type's on-demand price there /
// 10,000,000, with the reservation's ID, type, interruptibility and free slots, available
// while it has a free slot and is neither expiring nor ended. Types without a reservation are
// returned as they are; the others are copies.
func (c *Cloud) withReservedOfferings(nc *awsv1.EC2NodeClass, its []*cloudprovider.InstanceType, byName map[string]*cloudprovider.InstanceType) ([]*cloudprovider.InstanceType, map[string]*cloudprovider.InstanceType) {
	if !c.reservedCapacity || len(nc.Status.CapacityReservations) == 0 || len(c.reservations) == 0 {
		return its, byName
	}
	now := c.clock.Now()
	c.mu.Lock()
	free := map[string]int{}
	for _, r := range c.reservations {
		if !r.expiringAt(now) {
			free[r.ID] = c.freeSlotsLocked(r)
		}
	}
	c.mu.Unlock()
	byType := map[string][]awsv1.CapacityReservation{}
	for _, r := range nc.Status.CapacityReservations {
		if _, ok := free[r.ID]; ok {
			byType[r.InstanceType] = append(byType[r.InstanceType], r)
		}
	}
	if len(byType) == 0 {
		return its, byName
	}
	zoneIDs := cloudprovider.ZoneIDsOf(nc.Status.Subnets)
	out := slices.Clone(its)
	outByName := maps.Clone(byName)
	for i, it := range its {
		rs := byType[it.Name]
		if len(rs) == 0 {
			continue
		}
		offerings := slices.Clone(it.Offerings)
		for _, r := range rs {
			od, ok := c.prices.Price(it.Name, r.AvailabilityZone, karpv1.CapacityTypeOnDemand)
			if !ok {
				continue
			}
			o := cloudprovider.Offering{Zone: r.AvailabilityZone, ZoneID: zoneIDs[r.AvailabilityZone], CapacityType: karpv1.CapacityTypeReserved,
				Price: od / cloudprovider.ReservedPriceDivisor, ReservationID: r.ID, ReservationType: string(r.ReservationType),
				ReservationInterruptible: r.Interruptible, ReservationCapacity: max(free[r.ID], 0)}
			o.Available = o.ReservationCapacity > 0 && r.State != awsv1.CapacityReservationStateExpiring && slices.Contains(c.zones, r.AvailabilityZone)
			offerings = append(offerings, o)
		}
		slices.SortStableFunc(offerings, func(a, b cloudprovider.Offering) int {
			return cmp.Or(cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.CapacityType, b.CapacityType), cmp.Compare(a.ReservationID, b.ReservationID))
		})
		copied := it.WithOfferings(offerings)
		out[i] = copied
		if outByName != nil {
			outByName[it.Name] = copied
		}
	}
	return out, outByName
}

// expiringAt reports whether the reservation has ended by now or, a Capacity Block, is within
// 40 minutes of its end.
func (r Reservation) expiringAt(now time.Time) bool {
	if r.End.IsZero() {
		return false
	}
	if r.Type == string(awsv1.CapacityReservationTypeCapacityBlock) {
		return !now.Before(r.End.Add(-capacityBlockWarning))
	}
	return !now.Before(r.End)
}

// reservation is the reservation of the ID.
func (c *Cloud) reservation(id string) (Reservation, bool) {
	if id == "" {
		return Reservation{}, false
	}
	i := slices.IndexFunc(c.reservations, func(r Reservation) bool { return r.ID == id })
	if i < 0 {
		return Reservation{}, false
	}
	return c.reservations[i], true
}

// reservationChange is how long until one of the NodeClass's reservations changes state (a
// Capacity Block starts expiring, a reservation ends); zero when none will.
func (c *Cloud) reservationChange(nc *awsv1.EC2NodeClass, now time.Time) time.Duration {
	var next time.Duration
	for _, cr := range nc.Status.CapacityReservations {
		if cr.EndTime == nil {
			continue
		}
		for _, t := range []time.Time{cr.EndTime.Add(-capacityBlockWarning), cr.EndTime.Time} {
			if d := t.Sub(now); d > 0 && (next == 0 || d < next) && (t.Equal(cr.EndTime.Time) || cr.ReservationType == awsv1.CapacityReservationTypeCapacityBlock) {
				next = d
			}
		}
	}
	return next
}

// ExpiringReservations returns which of the reservation IDs are expiring: Capacity Blocks
// within 40 minutes of their end (expiration.ExpiringReservations), or already ended. IDs the
// cloud does not hold are not expiring.
func (c *Cloud) ExpiringReservations(_ context.Context, ids []string) (map[string]bool, error) {
	now := c.clock.Now()
	out := map[string]bool{}
	for _, id := range ids {
		if r, ok := c.reservation(id); ok && r.Type == string(awsv1.CapacityReservationTypeCapacityBlock) && r.expiringAt(now) {
			out[id] = true
		}
	}
	return out, nil
}
