package cloudprovider_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
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

// TestOfferingFilterReservationLabels: requirements on karpenter.k8s.aws/capacity-reservation-id,
// -type and -interruptible are met by the reserved offerings whose reservation has those
// values, and by spot and on-demand offerings only when they allow the labels to be absent, as
// Karpenter's AWS provider v1.15.2 gives reserved offerings In requirements on them and every
// other offering DoesNotExist (pkg/providers/instancetype/offering, base_resolver.go and
// reserved_capacity_resolver.go); they are offering keys, and label the node of a reserved
// offering.
func TestOfferingFilterReservationLabels(t *testing.T) {
	od := cloudprovider.Offering{Zone: "us-west-2a", CapacityType: "on-demand", Available: true}
	cr := cloudprovider.Offering{Zone: "us-west-2a", CapacityType: "reserved", Available: true, ReservationID: "cr-1", ReservationType: "default"}
	block := cloudprovider.Offering{Zone: "us-west-2a", CapacityType: "reserved", Available: true, ReservationID: "cr-2", ReservationType: "capacity-block"}
	intr := cloudprovider.Offering{Zone: "us-west-2a", CapacityType: "reserved", Available: true, ReservationID: "cr-3", ReservationType: "default", ReservationInterruptible: true}
	for _, tc := range []struct {
		name string
		reqs []corev1.NodeSelectorRequirement
		want []bool // od, cr, block, intr
	}{
		{"none", nil, []bool{true, true, true, true}},
		{"id In", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelCapacityReservationID, Operator: corev1.NodeSelectorOpIn, Values: []string{"cr-1"}}}, []bool{false, true, false, false}},
		{"id NotIn", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelCapacityReservationID, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"cr-1"}}}, []bool{true, false, true, true}},
		{"id Exists", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelCapacityReservationID, Operator: corev1.NodeSelectorOpExists}}, []bool{false, true, true, true}},
		{"id DoesNotExist", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelCapacityReservationID, Operator: corev1.NodeSelectorOpDoesNotExist}}, []bool{true, false, false, false}},
		{"type capacity-block", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelCapacityReservationType, Operator: corev1.NodeSelectorOpIn, Values: []string{"capacity-block"}}}, []bool{false, false, true, false}},
		{"interruptible false", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelCapacityReservationInterruptible, Operator: corev1.NodeSelectorOpIn, Values: []string{"false"}}}, []bool{false, true, true, false}},
	} {
		reqs, err := scheduling.FromNodeSelectorRequirements(tc.reqs...)
		if err != nil {
			t.Fatal(err)
		}
		f := cloudprovider.NewOfferingFilter(reqs)
		for i, o := range []cloudprovider.Offering{od, cr, block, intr} {
			if got := f.Allows(o); got != tc.want[i] {
				t.Errorf("%s: Allows(%s) = %t, want %t", tc.name, o.ID("m5.large"), got, tc.want[i])
			}
		}
	}
	for _, key := range []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible} {
		if !cloudprovider.IsOfferingKey(key) {
			t.Errorf("%s is not an offering key", key)
		}
	}
	it := &cloudprovider.InstanceType{Name: "m5.large", Labels: map[string]string{}}
	labels := it.NodeLabels(intr)
	if labels[awsv1.LabelCapacityReservationID] != "cr-3" || labels[awsv1.LabelCapacityReservationType] != "default" || labels[awsv1.LabelCapacityReservationInterruptible] != "true" {
		t.Errorf("reserved node labels %v", labels)
	}
	if labels := it.NodeLabels(od); labels[awsv1.LabelCapacityReservationID] != "" || len(labels) != 2 {
		t.Errorf("on-demand node labels %v", labels)
	}
	if got := cr.ID("m5.large").String(); got != "m5.large/us-west-2a/reserved/cr-1" {
		t.Errorf("ID %s", got)
	}
}

// TestOfferingFilterPartition: karpenter.k8s.aws/placement-group-partition is an offering key,
// as the AWS provider v1.15.2's PlacementGroupResolver gives each offering of a partition
// placement group an In requirement on its partition: a requirement on it is met by the
// offerings of the partitions it allows, and by an offering outside a partition group only when
// it allows the label to be absent; a partition's offering labels its node with the partition.
func TestOfferingFilterPartition(t *testing.T) {
	plain := cloudprovider.Offering{Zone: "us-west-2a", CapacityType: "on-demand", Available: true}
	p1 := cloudprovider.Offering{Zone: "us-west-2a", CapacityType: "on-demand", Available: true, PlacementGroupID: "pg-1", PlacementPartition: 1}
	p3 := cloudprovider.Offering{Zone: "us-west-2a", CapacityType: "on-demand", Available: true, PlacementGroupID: "pg-1", PlacementPartition: 3}
	for _, tc := range []struct {
		name string
		reqs []corev1.NodeSelectorRequirement
		want []bool // plain, p1, p3
	}{
		{"none", nil, []bool{true, true, true}},
		{"In 3", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelPlacementGroupPartition, Operator: corev1.NodeSelectorOpIn, Values: []string{"3"}}}, []bool{false, false, true}},
		{"NotIn 3", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelPlacementGroupPartition, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"3"}}}, []bool{true, true, false}},
		{"Gt 1", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelPlacementGroupPartition, Operator: corev1.NodeSelectorOpGt, Values: []string{"1"}}}, []bool{false, false, true}},
		{"Exists", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelPlacementGroupPartition, Operator: corev1.NodeSelectorOpExists}}, []bool{false, true, true}},
		{"DoesNotExist", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelPlacementGroupPartition, Operator: corev1.NodeSelectorOpDoesNotExist}}, []bool{true, false, false}},
	} {
		reqs, err := scheduling.FromNodeSelectorRequirements(tc.reqs...)
		if err != nil {
			t.Fatal(err)
		}
		f := cloudprovider.NewOfferingFilter(reqs)
		for i, o := range []cloudprovider.Offering{plain, p1, p3} {
			if got := f.Allows(o); got != tc.want[i] {
				t.Errorf("%s: Allows(%s) = %t, want %t", tc.name, o.ID("m5.large"), got, tc.want[i])
			}
		}
	}
	if !cloudprovider.IsOfferingKey(awsv1.LabelPlacementGroupPartition) || cloudprovider.IsOfferingKey(awsv1.LabelPlacementGroupID) {
		t.Errorf("the partition must be an offering key, the group ID an instance type label")
	}
	it := &cloudprovider.InstanceType{Name: "m5.large", Labels: map[string]string{awsv1.LabelPlacementGroupID: "pg-1"}}
	if labels := it.NodeLabels(p3); labels[awsv1.LabelPlacementGroupPartition] != "3" || labels[awsv1.LabelPlacementGroupID] != "pg-1" {
		t.Errorf("partition node labels %v", labels)
	}
	if _, ok := it.NodeLabels(plain)[awsv1.LabelPlacementGroupPartition]; ok {
		t.Errorf("an offering outside a partition group labels its node with a partition")
	}
	if got := p3.ID("m5.large").String(); got != "m5.large/us-west-2a/on-demand/pg-1/3" {
		t.Errorf("ID %s", got)
	}
}
