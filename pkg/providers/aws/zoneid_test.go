package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// TestZoneIDRequirement: a claim requiring topology.k8s.aws/zone-id launches in that zone only,
// and the claim carries its zone's ID, as the AWS provider v1.15.2 labels it from the
// EC2NodeClass's subnets (cloudprovider.go instanceToNodeClaim); the instance types' offerings
// carry the IDs DescribeSubnets reported.
func TestZoneIDRequirement(t *testing.T) {
	f := newFixture(t)
	nc, np := f.seed004()
	ids := map[string]string{}
	for _, s := range nc.Status.Subnets {
		if s.ZoneID != "" {
			ids[s.Zone] = s.ZoneID
		}
	}
	if ids["us-west-2b"] != "usw2-az2" {
		t.Fatalf("subnets' zone IDs %v, want us-west-2b as usw2-az2", ids)
	}
	claim := claimFor(np, "zone-id", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		req(awsv1.LabelTopologyZoneID, corev1.NodeSelectorOpIn, "usw2-az2"),
		req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand))
	launched, err := f.provider.Create(f.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if zone, id := launched.Labels[corev1.LabelTopologyZone], launched.Labels[awsv1.LabelTopologyZoneID]; zone != "us-west-2b" || id != "usw2-az2" {
		t.Errorf("launched in %s (zone ID %q), want us-west-2b (usw2-az2)", zone, id)
	}
	for _, in := range f.aws.Instances() {
		if in.Zone != "us-west-2b" {
			t.Errorf("instance %s in %s, want us-west-2b", in.ID, in.Zone)
		}
	}
}
