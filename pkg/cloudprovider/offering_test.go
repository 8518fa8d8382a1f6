package cloudprovider_test

import (
	"reflect"
	"testing"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

func offerings() cloudprovider.Offerings {
	return cloudprovider.Offerings{
		{Zone: "us-east-1a", CapacityType: "on-demand", Price: 0.096, Available: true},
		{Zone: "us-east-1a", CapacityType: "spot", Price: 0.030, Available: false},
		{Zone: "us-east-1b", CapacityType: "on-demand", Price: 0.096, Available: true},
		{Zone: "us-east-1b", CapacityType: "spot", Price: 0.035, Available: true},
		{Zone: "us-east-1c", CapacityType: "spot", Price: 0.035, Available: true},
	}
}

func zonesAndTypes(ofs cloudprovider.Offerings) []string {
	var out []string
	for _, o := range ofs {
		out = append(out, o.Zone+"/"+o.CapacityType)
	}
	return out
}

func TestOfferingFilters(t *testing.T) {
	ofs := offerings()
	for _, tc := range []struct {
		name string
		got  cloudprovider.Offerings
		want []string
	}{
		{"Available", ofs.Available(), []string{"us-east-1a/on-demand", "us-east-1b/on-demand", "us-east-1b/spot", "us-east-1c/spot"}},
		{"InZones", ofs.InZones("us-east-1c", "us-east-1a"), []string{"us-east-1a/on-demand", "us-east-1a/spot", "us-east-1c/spot"}},
		{"WithCapacityTypes", ofs.WithCapacityTypes("spot"), []string{"us-east-1a/spot", "us-east-1b/spot", "us-east-1c/spot"}},
		{"Compatible", ofs.Compatible([]string{"us-east-1a", "us-east-1b"}, []string{"spot"}), []string{"us-east-1b/spot"}},
		{"Compatible nil zones", ofs.Compatible(nil, []string{"on-demand"}), []string{"us-east-1a/on-demand", "us-east-1b/on-demand"}},
		{"InZones none", ofs.InZones("eu-west-1a"), nil},
		{"Filter all", ofs.Filter(func(cloudprovider.Offering) bool { return true }), zonesAndTypes(ofs)},
	} {
		if got := zonesAndTypes(tc.got); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !reflect.DeepEqual(offerings(), ofs) {
		t.Error("filters modified the receiver")
	}
	if got := ofs.Zones(); !reflect.DeepEqual(got, []string{"us-east-1a", "us-east-1b", "us-east-1c"}) {
		t.Errorf("Zones = %v", got)
	}
	if got := ofs.CapacityTypes(); !reflect.DeepEqual(got, []string{"on-demand", "spot"}) {
		t.Errorf("CapacityTypes = %v", got)
	}
	if !ofs.HasAvailable() || ofs[1:2].HasAvailable() || cloudprovider.Offerings(nil).HasAvailable() {
		t.Error("HasAvailable")
	}
}

func TestOfferingFiltersDoNotAllocateWhenNothingIsFiltered(t *testing.T) {
	ofs := offerings().Available()
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	cts := []string{"on-demand", "spot"}
	n := testing.AllocsPerRun(100, func() {
		_ = ofs.Available()
		_ = ofs.Compatible(zones, cts)
		_, _ = ofs.CheapestWhere(func(o cloudprovider.Offering) bool { return o.Available })
	})
	if n != 0 {
		t.Errorf("%v allocations per run, want 0", n)
	}
}

func TestCheapest(t *testing.T) {
	ofs := offerings()
	if o, ok := ofs.Cheapest(); !ok || o.Zone != "us-east-1a" || o.CapacityType != "spot" {
		t.Errorf("Cheapest = %+v", o)
	}
	// Ties go to the earlier zone.
	if o, ok := ofs.Available().Cheapest(); !ok || o.Zone != "us-east-1b" || o.Price != 0.035 {
		t.Errorf("Available().Cheapest = %+v", o)
	}
	reversed := cloudprovider.Offerings{ofs[4], ofs[3], ofs[2], ofs[0]}
	if o, _ := reversed.Cheapest(); o.Zone != "us-east-1b" {
		t.Errorf("Cheapest is order-dependent: %+v", o)
	}
	if o, ok := ofs.CheapestWhere(func(o cloudprovider.Offering) bool { return o.CapacityType == "on-demand" }); !ok || o.Zone != "us-east-1a" {
		t.Errorf("CheapestWhere on-demand = %+v", o)
	}
	if o, ok := ofs.MostExpensive(); !ok || o.Zone != "us-east-1a" || o.CapacityType != "on-demand" {
		t.Errorf("MostExpensive = %+v", o)
	}
	if _, ok := cloudprovider.Offerings(nil).Cheapest(); ok {
		t.Error("Cheapest of none reported ok")
	}
	if id := ofs[0].ID("m5.large"); id.String() != "m5.large/us-east-1a/on-demand" {
		t.Errorf("ID = %v", id)
	}
}

func TestPriceOverrides(t *testing.T) {
	base, err := catalog.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	prices, err := cloudprovider.WithPriceOverrides(base,
		cloudprovider.PriceOverride{InstanceType: "m5.large", CapacityType: "spot", Price: 0.05},
		cloudprovider.PriceOverride{InstanceType: "m5.large", Zone: "us-east-1c", CapacityType: "spot", Price: 0.02},
		cloudprovider.PriceOverride{InstanceType: "m5.large", Zone: "us-east-1c", CapacityType: "spot", Price: 0.01},
		cloudprovider.PriceOverride{InstanceType: "custom.large", Zone: "us-east-1a", CapacityType: "reserved", Price: 0},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		it, zone, ct string
		want         float64
		ok           bool
	}{
		{"m5.large", "us-east-1a", "spot", 0.05, true},
		{"m5.large", "us-east-1c", "spot", 0.01, true},
		{"m5.large", "us-east-1a", "on-demand", 0.096, true},
		{"custom.large", "us-east-1a", "reserved", 0, true},
		{"custom.large", "us-east-1b", "reserved", 0, false},
		{"m5.large", "us-east-1a", "reserved", 0, false},
	} {
		got, ok := prices.Price(tc.it, tc.zone, tc.ct)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Price(%s, %s, %s) = %v, %v; want %v, %v", tc.it, tc.zone, tc.ct, got, ok, tc.want, tc.ok)
		}
	}
	for _, bad := range []cloudprovider.PriceOverride{
		{CapacityType: "spot", Price: 1},
		{InstanceType: "m5.large", Price: 1},
		{InstanceType: "m5.large", CapacityType: "spot", Price: -1},
	} {
		if _, err := cloudprovider.WithPriceOverrides(base, bad); err == nil {
			t.Errorf("WithPriceOverrides(%+v): want an error", bad)
		}
	}
	onlyOverrides, err := cloudprovider.WithPriceOverrides(nil, cloudprovider.PriceOverride{InstanceType: "a", CapacityType: "spot", Price: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := onlyOverrides.Price("m5.large", "z", "spot"); ok {
		t.Error("nil base priced an unknown type")
	}
	fn := cloudprovider.PriceFunc(func(string, string, string) (float64, bool) { return 2, true })
	if p, ok := fn.Price("x", "y", "z"); p != 2 || !ok {
		t.Error("PriceFunc")
	}
}
