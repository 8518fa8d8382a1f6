package cloudprovider

import (
	"errors"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// HoursPerMonth is the month of every $/month figure (view, simulate): 730 hours, a year's over
// twelve, as AWS's pricing pages count it.
const HoursPerMonth = 730

// Prices is a source of instance prices.
type Prices interface {
	// Price returns the $/hour of instanceType in zone bought as capacityType, and false when
	// that combination is not for sale (no offering is made for it).
	Price(instanceType, zone, capacityType string) (float64, bool)
}

// PriceFunc adapts a function to Prices.
type PriceFunc func(instanceType, zone, capacityType string) (float64, bool)

// Price calls f.
func (f PriceFunc) Price(instanceType, zone, capacityType string) (float64, bool) {
	return f(instanceType, zone, capacityType)
}

// PriceOverride sets the price of an instance type bought as a capacity type, in one zone or,
// with an empty Zone, in every zone.
type PriceOverride struct {
	// InstanceType is the instance type's name; required.
	InstanceType string
	// Zone limits the override to one zone; empty means every zone.
	Zone string
	// CapacityType is spot, on-demand or reserved; required.
	CapacityType string
	// Price is the $/hour; zero or more.
	Price float64
}

type priceKey struct {
	instanceType, zone, capacityType string
}

type overriddenPrices struct {
	base      Prices
	overrides map[priceKey]float64
}

// WithPriceOverrides returns Prices that answer from the overrides first — a zone's override
// before an every-zone one — and from base (which may be nil) otherwise. An override also
// prices a combination base does not sell. When two overrides name the same instance type,
// zone and capacity type, the later one wins.
func WithPriceOverrides(base Prices, overrides ...PriceOverride) (Prices, error) {
	p := &overriddenPrices{base: base, overrides: make(map[priceKey]float64, len(overrides))}
	for _, o := range overrides {
		if o.InstanceType == "" || o.CapacityType == "" {
			return nil, errors.New("price override needs an instance type and a capacity type")
		}
		if o.Price < 0 || math.IsNaN(o.Price) || math.IsInf(o.Price, 0) {
			return nil, fmt.Errorf("price override for %s/%s: invalid price %v", o.InstanceType, o.CapacityType, o.Price)
		}
		p.overrides[priceKey{o.InstanceType, o.Zone, o.CapacityType}] = o.Price
	}
	return p, nil
}

// Price implements Prices.
func (p *overriddenPrices) Price(instanceType, zone, capacityType string) (float64, bool) {
	if v, ok := p.overrides[priceKey{instanceType, zone, capacityType}]; ok {
		return v, true
	}
	if v, ok := p.overrides[priceKey{instanceType, "", capacityType}]; ok {
		return v, true
	}
	if p.base == nil {
		return 0, false
	}
	return p.base.Price(instanceType, zone, capacityType)
}

// CapacityTypeAfterReservation is the capacity type a node of capacityType has once its
// capacity reservation ends: on-demand for a reserved node (billed so, and relabelled so by the
// capacity type controller), capacityType itself otherwise.
func CapacityTypeAfterReservation(capacityType string) string {
	if capacityType == karpv1.CapacityTypeReserved {
		return karpv1.CapacityTypeOnDemand
	}
	return capacityType
}

// NodePrice is what a launched node costs, $/hour, as its instance types price it; label reads
// the node's labels (its NodeClaim's or its Node's). It is the cheapest offering of its instance
// type in its zone and capacity type, and of its capacity reservation when it is reserved and
// names one, as Karpenter prices a node from the offerings compatible with its labels; else the
// cheapest of its capacity type in any zone, a reserved node's counting as on-demand, as it is
// billed once its reservation ends; else, when its capacity type is unknown or not offered, the
// cheapest offering of its instance type. The first of lists whose instance type of that name
// has offerings is read. It is false when none has. Disruption's candidates, its re-pack, the
// pods' deletion cost and the cluster's cost metrics all price nodes with it.
func NodePrice(label func(key string) string, lists ...[]*InstanceType) (float64, bool) {
	name, zone, capacityType := label(corev1.LabelInstanceTypeStable), label(corev1.LabelTopologyZone), label(karpv1.CapacityTypeLabelKey)
	if name == "" {
		return 0, false
	}
	reservation := ""
	if capacityType == karpv1.CapacityTypeReserved {
		reservation = label(awsv1.LabelCapacityReservationID)
	}
	fallback := CapacityTypeAfterReservation(capacityType)
	for _, its := range lists {
		for _, it := range its {
			if it.Name != name {
				continue
			}
			for _, match := range []func(Offering) bool{
				func(o Offering) bool {
					return o.CapacityType == capacityType && o.Zone == zone && (reservation == "" || o.ReservationID == reservation)
				},
				func(o Offering) bool { return o.CapacityType == fallback },
				func(Offering) bool { return true },
			} {
				if o, ok := it.Offerings.CheapestWhere(match); ok {
					return o.Price, true
				}
			}
		}
	}
	return 0, false
}
