package cloudprovider

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestUnavailableOfferings(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	u := NewUnavailableOfferings(clk, time.Minute)
	it := &InstanceType{Name: "m5.large", Offerings: Offerings{
		{Zone: "a", CapacityType: "spot", Price: 1, Available: true},
		{Zone: "b", CapacityType: "spot", Price: 1, Available: true},
	}, PriceOverlaid: true, CapacityOverlaid: true}
	u.MarkUnavailable(OfferingID{InstanceType: "m5.large", Zone: "a", CapacityType: "spot"})
	got := u.Apply([]*InstanceType{it})[0]
	if got == it || got.Offerings[0].Available || !got.Offerings[1].Available {
		t.Fatalf("offerings = %+v", got.Offerings)
	}
	if !got.PriceOverlaid || !got.CapacityOverlaid {
		t.Fatal("Apply dropped the NodeOverlay marks: a NodeClaim would launch by list prices")
	}
	if !it.Offerings[0].Available {
		t.Fatal("Apply changed the shared instance type")
	}
	clk.Step(time.Minute)
	if got := u.Apply([]*InstanceType{it})[0]; got != it {
		t.Fatal("offering still unavailable after the TTL")
	}
}

// TestUnavailablePlacementScopes: marks of a placement group's partition, or of the group,
// leave the offering outside the group and the group's other partitions available, while a
// mark outside any group reaches the group's offerings too, as the AWS provider v1.15.2 scopes
// and reads its unavailable offerings (awscache.WithPlacementGroup and
// WithPlacementGroupPartition; offering/base_resolver.go checks both keys).
func TestUnavailablePlacementScopes(t *testing.T) {
	id := func(group string, partition int32) OfferingID {
		return OfferingID{InstanceType: "m5.large", Zone: "a", CapacityType: "on-demand", PlacementGroupID: group, PlacementPartition: partition}
	}
	plain, p1, p2, other := id("", 0), id("pg-1", 1), id("pg-1", 2), id("pg-2", 1)
	for _, tc := range []struct {
		name   string
		marked OfferingID
		want   map[OfferingID]bool
	}{
		{"partition", p1, map[OfferingID]bool{plain: false, p1: true, p2: false, other: false}},
		{"group", id("pg-1", 0), map[OfferingID]bool{plain: false, p1: true, p2: true, other: false}},
		{"outside any group", plain, map[OfferingID]bool{plain: true, p1: true, p2: true, other: true}},
	} {
		u := NewUnavailableOfferings(clocktesting.NewFakeClock(time.Unix(0, 0)), time.Minute)
		u.MarkUnavailable(tc.marked)
		for o, want := range tc.want {
			if got := u.IsUnavailable(o); got != want {
				t.Errorf("%s marked: %s unavailable %t, want %t", tc.name, o, got, want)
			}
		}
	}
}
