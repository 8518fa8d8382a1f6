package cloudprovider_test

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// TestWindowsSupportedButNotSimulated: the AWS provider takes the Windows AMI families, as the
// AWS provider v1.15.2's validation (pkg/controllers/nodeclass/validation.go) does; the
// simulated cloud does not model Windows nodes, so ValidateSimulated refuses them by name,
// never silently simulating Linux nodes instead. It refuses a placement group by name too.
func TestWindowsSupportedButNotSimulated(t *testing.T) {
	for _, nc := range []*awsv1.EC2NodeClass{
		{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "windows2019@latest"}}}},
		{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "windows2025@latest"}}}},
		{Spec: awsv1.EC2NodeClassSpec{AMIFamily: ptr.To(awsv1.AMIFamilyWindows2022), AMISelectorTerms: []awsv1.AMISelectorTerm{{ID: "ami-1"}}}},
	} {
		reason, field, err := cloudprovider.ValidateSimulated(nc)
		if err == nil || reason != cloudprovider.ReasonAMIFamilyNotSupported || field != "spec.amiFamily" ||
			!strings.Contains(err.Error(), "the simulated cloud does not model Windows nodes yet") {
			t.Errorf("ValidateSimulated(%+v) = %s %s %v, want AMIFamilyNotSupported naming the simulated cloud", nc.Spec, reason, field, err)
		}
	}
	placed := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{PlacementGroupSelector: &awsv1.PlacementGroupSelector{Name: ptr.To("training")}}}
	if reason, _, err := cloudprovider.ValidateSimulated(placed); reason != cloudprovider.ReasonPlacementGroupsNotSupported || err == nil ||
		!strings.Contains(err.Error(), "the simulated cloud") {
		t.Errorf("ValidateSimulated(placement group) = %s %v, want PlacementGroupsNotSupported naming the simulated cloud", reason, err)
	}
	al2023 := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}}
	if _, _, err := cloudprovider.ValidateSimulated(al2023); err != nil {
		t.Errorf("ValidateSimulated(al2023): %v", err)
	}
}
