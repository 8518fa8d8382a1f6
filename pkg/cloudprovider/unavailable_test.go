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
	}}
	u.MarkUnavailable(OfferingID{InstanceType: "m5.large", Zone: "a", CapacityType: "spot"})
	got := u.Apply([]*InstanceType{it})[0]
	if got == it || got.Offerings[0].Available || !got.Offerings[1].Available {
		t.Fatalf("offerings = %+v", got.Offerings)
	}
	if !it.Offerings[0].Available {
		t.Fatal("Apply changed the shared instance type")
	}
	clk.Step(time.Minute)
	if got := u.Apply([]*InstanceType{it})[0]; got != it {
		t.Fatal("offering still unavailable after the TTL")
	}
}
