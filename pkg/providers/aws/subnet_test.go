package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// TestSubnetOutOfAddresses: when the subnet a launch chose has run out of free addresses
// (InsufficientFreeAddressesInSubnet), the subnet is avoided and the next launch goes to
// another subnet of the same zone; the offering (type, zone, capacity type) is not marked out of
// capacity, since the zone still has room.
func TestSubnetOutOfAddresses(t *testing.T) {
	f := newFixture(t)
	tags := map[string]string{"karpenter.sh/discovery": testCluster}
	// The zone's roomiest subnet by the last count, which then fills up.
	f.aws.AddSubnet(fakeSubnet("subnet-0e000000000000001", "us-west-2a", tags))
	f.aws.SetSubnetAvailableIPs("subnet-0e000000000000001", 5000)
	nc, np := f.seed004()
	if nc.Status.Subnets[0].ID != "subnet-0e000000000000001" {
		t.Fatalf("subnets %+v: want the new one first", nc.Status.Subnets)
	}
	f.aws.SetSubnetAvailableIPs("subnet-0e000000000000001", 0)
	claim := claimFor(np, "subnet-full", nil, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a"),
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"))
	_, err := f.provider.Create(f.ctx, claim)
	if err == nil || cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("first launch: %v, want a retryable error that is not insufficient capacity", err)
	}
	if f.provider.Unavailable().IsUnavailable(cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: karpv1.CapacityTypeOnDemand}) {
		t.Error("the offering was marked out of capacity; only the subnet is")
	}
	launched, err := f.provider.Create(f.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range f.aws.Instances() {
		if in.ID == instanceIDOfClaim(t, launched) && in.SubnetID != "subnet-0a000000000000000" {
			t.Errorf("launched in %s, want the zone's other subnet subnet-0a000000000000000", in.SubnetID)
		}
	}
}

func instanceIDOfClaim(t *testing.T, claim *karpv1.NodeClaim) string {
	t.Helper()
	id, err := instanceIDOf(claim.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
