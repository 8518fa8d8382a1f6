package cloudprovider

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

func TestUnmetMinValues(t *testing.T) {
	family := "karpenter.k8s.aws/instance-family"
	two, three := 2, 3
	reqs, err := scheduling.FromNodePoolRequirements(
		karpv1.NodeSelectorRequirementWithMinValues{Key: family, Operator: corev1.NodeSelectorOpExists, MinValues: &two},
		karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpExists, MinValues: &three},
	)
	if err != nil {
		t.Fatal(err)
	}
	it := func(name, fam string) *InstanceType {
		return &InstanceType{Name: name, Labels: map[string]string{corev1.LabelInstanceTypeStable: name, family: fam}}
	}
	its := []*InstanceType{it("m5.large", "m5"), it("m5.xlarge", "m5"), it("c5.large", "c5")}
	for _, tc := range []struct {
		its        []*InstanceType
		want       []string
		wantPrefix int
	}{
		{its, nil, 3},
		{its[:2], []string{family, corev1.LabelInstanceTypeStable}, 2},
		{its[1:], []string{corev1.LabelInstanceTypeStable}, 2},
		{nil, []string{family, corev1.LabelInstanceTypeStable}, 0},
	} {
		if got := UnmetMinValues(reqs, tc.its); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("UnmetMinValues(%d types) = %v, want %v", len(tc.its), got, tc.want)
		}
		if got := MinValuesPrefix(reqs, tc.its); got != tc.wantPrefix {
			t.Errorf("MinValuesPrefix(%d types) = %d, want %d", len(tc.its), got, tc.wantPrefix)
		}
	}
	if got := MinValuesPrefix(scheduling.Requirements{}, its); got != 0 {
		t.Errorf("MinValuesPrefix without minValues = %d, want 0", got)
	}
}
