package cloudprovider_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// TestNodePrice: a node is priced at the offering its labels name (its reservation's when it
// is reserved), else at the cheapest of its capacity type (on-demand for a reserved node whose
// reservation is gone), else at its type's cheapest, and not at all when its instance type is
// unknown or has no offerings.
func TestNodePrice(t *testing.T) {
	its := []*cloudprovider.InstanceType{{Name: "m5.large", Offerings: cloudprovider.Offerings{
		{Zone: "a", CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.096, Available: true},
		{Zone: "b", CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.090, Available: true},
		{Zone: "a", CapacityType: karpv1.CapacityTypeSpot, Price: 0.040, Available: true},
		{Zone: "a", CapacityType: karpv1.CapacityTypeReserved, ReservationID: "cr-cheap", Price: 0.001, Available: true},
		{Zone: "a", CapacityType: karpv1.CapacityTypeReserved, ReservationID: "cr-mine", Price: 0.002, Available: false},
	}}}
	other := []*cloudprovider.InstanceType{{Name: "c5.large", Offerings: cloudprovider.Offerings{
		{Zone: "a", CapacityType: karpv1.CapacityTypeSpot, Price: 0.03, Available: true},
	}}}
	labels := func(typ, zone, ct, reservation string) func(string) string {
		m := map[string]string{corev1.LabelInstanceTypeStable: typ, corev1.LabelTopologyZone: zone,
			karpv1.CapacityTypeLabelKey: ct, awsv1.LabelCapacityReservationID: reservation}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name   string
		label  func(string) string
		lists  [][]*cloudprovider.InstanceType
		want   float64
		priced bool
	}{
		{"zone and capacity type", labels("m5.large", "a", karpv1.CapacityTypeOnDemand, ""), [][]*cloudprovider.InstanceType{its}, 0.096, true},
		{"its own reservation, not the cheapest", labels("m5.large", "a", karpv1.CapacityTypeReserved, "cr-mine"), [][]*cloudprovider.InstanceType{its}, 0.002, true},
		{"reserved without an id: the zone's cheapest reservation", labels("m5.large", "a", karpv1.CapacityTypeReserved, ""), [][]*cloudprovider.InstanceType{its}, 0.001, true},
		{"a reservation gone counts on-demand", labels("m5.large", "a", karpv1.CapacityTypeReserved, "cr-gone"), [][]*cloudprovider.InstanceType{its}, 0.090, true},
		{"a zone without the offering: its capacity type elsewhere", labels("m5.large", "c", karpv1.CapacityTypeOnDemand, ""), [][]*cloudprovider.InstanceType{its}, 0.090, true},
		{"no offering of its capacity type: the type's cheapest", labels("c5.large", "a", karpv1.CapacityTypeOnDemand, ""), [][]*cloudprovider.InstanceType{other}, 0.03, true},
		{"a type without offerings: the next list", labels("c5.large", "a", karpv1.CapacityTypeSpot, ""), [][]*cloudprovider.InstanceType{{{Name: "c5.large"}}, other}, 0.03, true},
		{"the first list that holds the type", labels("c5.large", "a", karpv1.CapacityTypeSpot, ""), [][]*cloudprovider.InstanceType{its, other}, 0.03, true},
		{"unknown type", labels("r5.large", "a", karpv1.CapacityTypeSpot, ""), [][]*cloudprovider.InstanceType{its, other}, 0, false},
		{"no capacity type: the type's cheapest", labels("m5.large", "a", "", ""), [][]*cloudprovider.InstanceType{its}, 0.001, true},
		{"no offerings anywhere", labels("c5.large", "a", karpv1.CapacityTypeSpot, ""), [][]*cloudprovider.InstanceType{{{Name: "c5.large"}}}, 0, false},
	} {
		got, ok := cloudprovider.NodePrice(tc.label, tc.lists...)
		if got != tc.want || ok != tc.priced {
			t.Errorf("%s: NodePrice = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.priced)
		}
	}
}
