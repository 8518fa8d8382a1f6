package cloudprovider

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Offering is one way to buy an instance type: in a zone, as a capacity type, at a price, and
// in a partition placement group in one of its partitions. The scheduler reads Zone,
// CapacityType and PlacementPartition as plain fields; no label maps are involved.
type Offering struct {
	// Zone is the availability zone, the value of topology.kubernetes.io/zone.
	Zone string
	// ZoneID is the zone's ID, the value of topology.k8s.aws/zone-id (the same zone name can be
	// another physical zone in another account); empty when unknown.
	ZoneID string
	// CapacityType is the value of karpenter.sh/capacity-type: spot, on-demand or reserved.
	CapacityType string
	// Price is the cost in $/hour.
	Price float64
	// Available says the cloud is believed to have capacity for it right now; offerings that
	// recently ran out are kept but marked unavailable. A reserved offering is available only
	// while its reservation has a free slot (ReservationCapacity > 0), so that a scheduler that
	// does not count reservations does not plan on a full one.
	Available bool
	// PlacementPartition is the partition of a partition placement group the offering launches
	// into, 1 to the group's partition count, the value of
	// karpenter.k8s.aws/placement-group-partition, as the AWS provider v1.15.2 offers one
	// offering per partition (offering/placement_group_resolver.go); 0 for every other
	// offering, which lacks the label.
	PlacementPartition int32
	// PlacementGroupID is the placement group the offering launches into, empty outside one.
	// It is not a label of the offering (karpenter.k8s.aws/placement-group-id is the instance
	// type's): it scopes the offering's ID, so that running out of capacity in a group, or in
	// one of its partitions, leaves the offering outside the group, and the other partitions,
	// available.
	PlacementGroupID string
	// ReservationID is the capacity reservation a reserved offering launches into, the value of
	// karpenter.k8s.aws/capacity-reservation-id; empty for spot and on-demand offerings, which
	// do not have the label.
	ReservationID string
	// ReservationType is the reservation's karpenter.k8s.aws/capacity-reservation-type: default
	// (an On-Demand Capacity Reservation) or capacity-block; empty when ReservationID is.
	ReservationType string
	// ReservationInterruptible is the reservation's
	// karpenter.k8s.aws/capacity-reservation-interruptible: its owner may reclaim it.
	ReservationInterruptible bool
	// ReservationCapacity is how many more instances the reservation is believed to take, as
	// Karpenter core v1.15's Offering.ReservationCapacity; 0 for other offerings.
	ReservationCapacity int
}

// ReservedPriceDivisor divides an instance type's on-demand price into its reserved offerings'
// price, as Karpenter's AWS provider v1.15.2 prices them: the reservation is paid for whether it
// is used or not, so a launch into it costs next to nothing more, and less than any other
// offering.
const ReservedPriceDivisor = 10_000_000.0

// Reserved reports whether the offering launches into a capacity reservation.
func (o Offering) Reserved() bool { return o.ReservationID != "" }

// reservationLabels are the labels only reserved offerings carry, as Karpenter's
// cloudprovider.ReservedCapacityLabels (with the AWS provider v1.15.2's interruptible label):
// every other offering lacks them.
var reservationLabels = []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible}

// reservationLabel is the offering's value of one of reservationLabels, and false when it has
// none (it is not reserved).
func (o Offering) reservationLabel(key string) (string, bool) {
	if !o.Reserved() {
		return "", false
	}
	switch key {
	case awsv1.LabelCapacityReservationID:
		return o.ReservationID, true
	case awsv1.LabelCapacityReservationType:
		return o.ReservationType, true
	default:
		return strconv.FormatBool(o.ReservationInterruptible), true
	}
}

// PartitionLabel is the value of karpenter.k8s.aws/placement-group-partition for a partition
// number: its decimal form.
func PartitionLabel(partition int32) string { return strconv.Itoa(int(partition)) }

// OfferingFilter is what requirements ask of an offering: its zone, zone ID, capacity type,
// capacity reservation labels and placement group partition, the well-known labels an
// offering, not an instance type, decides.
type OfferingFilter struct {
	zone, zoneID, capacityType, partition             scheduling.Requirement
	hasZone, hasZoneID, hasCapacityType, hasPartition bool
	// reservation are the requirements on reservationLabels.
	reservation []scheduling.Requirement
}

// NewOfferingFilter reads the offering keys of reqs.
func NewOfferingFilter(reqs scheduling.Requirements) OfferingFilter {
	var f OfferingFilter
	// One pass over the (few, sorted) requirements rather than a lookup per offering key.
	for _, r := range reqs.All() {
		switch r.Key {
		case corev1.LabelTopologyZone:
			f.zone, f.hasZone = r, true
		case awsv1.LabelTopologyZoneID:
			f.zoneID, f.hasZoneID = r, true
		case karpv1.CapacityTypeLabelKey:
			f.capacityType, f.hasCapacityType = r, true
		case awsv1.LabelPlacementGroupPartition:
			f.partition, f.hasPartition = r, true
		case awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible:
			f.reservation = append(f.reservation, r)
		}
	}
	return f
}

// Allows reports whether the offering meets the requirements, available or not. An offering
// without a known zone ID meets a zone ID requirement only when the requirement allows the
// label to be absent; so does a spot or on-demand offering a requirement on a capacity
// reservation label, and an offering outside a partition placement group a requirement on
// its partition, as Karpenter's offerings require those labels not to exist.
func (f OfferingFilter) Allows(o Offering) bool {
	if f.hasZone && !f.zone.Has(o.Zone) || f.hasCapacityType && !f.capacityType.Has(o.CapacityType) {
		return false
	}
	for _, r := range f.reservation {
		if v, ok := o.reservationLabel(r.Key); ok && !r.Has(v) || !ok && !r.AllowsAbsent() {
			return false
		}
	}
	if f.hasPartition {
		if o.PlacementPartition == 0 {
			if !f.partition.AllowsAbsent() {
				return false
			}
		} else if !f.partition.Has(PartitionLabel(o.PlacementPartition)) {
			return false
		}
	}
	if f.hasZoneID {
		if o.ZoneID == "" {
			return f.zoneID.AllowsAbsent()
		}
		return f.zoneID.Has(o.ZoneID)
	}
	return true
}

// IsOfferingKey reports whether the label is decided by the offering (zone, zone ID, capacity
// type, capacity reservation ID, type and interruptible, placement group partition) rather
// than by the instance type.
func IsOfferingKey(key string) bool {
	return key == corev1.LabelTopologyZone || key == awsv1.LabelTopologyZoneID || key == karpv1.CapacityTypeLabelKey ||
		key == awsv1.LabelPlacementGroupPartition || slices.Contains(reservationLabels, key)
}

// ID names the offering of the given instance type. The ID of an offering in a placement
// group names the group and partition too; see OfferingID.
func (o Offering) ID(instanceType string) OfferingID {
	return OfferingID{InstanceType: instanceType, Zone: o.Zone, CapacityType: o.CapacityType, ReservationID: o.ReservationID,
		PlacementGroupID: o.PlacementGroupID, PlacementPartition: o.PlacementPartition}
}

// Offerings are an instance type's offerings, sorted by zone then capacity type by the
// constructors of this package (then partition, for a partition placement group's).
//
// The filtering methods return the receiver itself, without allocating, when every offering
// passes; callers must therefore not modify a filtered result in place.
type Offerings []Offering

// Filter returns the offerings for which keep returns true.
func (ofs Offerings) Filter(keep func(Offering) bool) Offerings {
	for i, o := range ofs {
		if keep(o) {
			continue
		}
		// First rejection: copy what passed so far, then continue filtering into the copy.
		out := make(Offerings, i, len(ofs)-1)
		copy(out, ofs[:i])
		for _, o := range ofs[i+1:] {
			if keep(o) {
				out = append(out, o)
			}
		}
		return out
	}
	return ofs
}

// Available returns the offerings that are available.
func (ofs Offerings) Available() Offerings {
	return ofs.Filter(func(o Offering) bool { return o.Available })
}

// InZones returns the offerings in any of the zones.
func (ofs Offerings) InZones(zones ...string) Offerings {
	return ofs.Filter(func(o Offering) bool { return contains(zones, o.Zone) })
}

// WithCapacityTypes returns the offerings of any of the capacity types.
func (ofs Offerings) WithCapacityTypes(capacityTypes ...string) Offerings {
	return ofs.Filter(func(o Offering) bool { return contains(capacityTypes, o.CapacityType) })
}

// Compatible returns the available offerings in one of zones and of one of capacityTypes; a nil
// slice places no constraint.
func (ofs Offerings) Compatible(zones, capacityTypes []string) Offerings {
	return ofs.Filter(func(o Offering) bool {
		return o.Available && (zones == nil || contains(zones, o.Zone)) &&
			(capacityTypes == nil || contains(capacityTypes, o.CapacityType))
	})
}

// HasAvailable reports whether any offering is available.
func (ofs Offerings) HasAvailable() bool {
	for _, o := range ofs {
		if o.Available {
			return true
		}
	}
	return false
}

// Cheapest returns the lowest-priced offering (ties go to the earlier zone, then capacity
// type, reservation and partition), and false when there are none. It does not look at availability: call it on
// Available() or use CheapestWhere.
func (ofs Offerings) Cheapest() (Offering, bool) {
	return ofs.CheapestWhere(nil)
}

// CheapestWhere returns the lowest-priced offering for which keep returns true (a nil keep
// accepts all), with the same tie-breaking as Cheapest, without allocating.
func (ofs Offerings) CheapestWhere(keep func(Offering) bool) (Offering, bool) {
	var best Offering
	found := false
	for _, o := range ofs {
		if keep != nil && !keep(o) {
			continue
		}
		if !found || o.Price < best.Price || (o.Price == best.Price && offeringLess(o, best)) {
			best, found = o, true
		}
	}
	return best, found
}

// MostExpensive returns the highest-priced offering, and false when there are none.
func (ofs Offerings) MostExpensive() (Offering, bool) {
	var best Offering
	found := false
	for _, o := range ofs {
		if !found || o.Price > best.Price || (o.Price == best.Price && offeringLess(o, best)) {
			best, found = o, true
		}
	}
	return best, found
}

// Zones returns the distinct zones of the offerings, sorted.
func (ofs Offerings) Zones() []string {
	return distinct(ofs, func(o Offering) string { return o.Zone })
}

// CapacityTypes returns the distinct capacity types of the offerings, sorted.
func (ofs Offerings) CapacityTypes() []string {
	return distinct(ofs, func(o Offering) string { return o.CapacityType })
}

func offeringLess(a, b Offering) bool {
	if a.Zone != b.Zone {
		return a.Zone < b.Zone
	}
	if a.CapacityType != b.CapacityType {
		return a.CapacityType < b.CapacityType
	}
	if a.ReservationID != b.ReservationID {
		return a.ReservationID < b.ReservationID
	}
	return a.PlacementPartition < b.PlacementPartition
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

func distinct(ofs Offerings, key func(Offering) string) []string {
	var out []string
	for _, o := range ofs {
		if k := key(o); !contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
