package scheduling

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// TestLaunchChoiceLabels: a launch takes the default tenancy unless the requirements allow
// dedicated only, as Karpenter's AWS provider picks it.
func TestLaunchChoiceLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		reqs []corev1.NodeSelectorRequirement
		want map[string]string
	}{
		{"unconstrained", nil, map[string]string{awsv1.LabelInstanceTenancy: "default"}},
		{"both", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceTenancy, Operator: corev1.NodeSelectorOpIn, Values: []string{"dedicated", "default"}}}, map[string]string{awsv1.LabelInstanceTenancy: "default"}},
		{"dedicated", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceTenancy, Operator: corev1.NodeSelectorOpIn, Values: []string{"dedicated"}}}, map[string]string{awsv1.LabelInstanceTenancy: "dedicated"}},
		{"not default", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceTenancy, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"default"}}}, map[string]string{awsv1.LabelInstanceTenancy: "dedicated"}},
		{"neither", []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceTenancy, Operator: corev1.NodeSelectorOpIn, Values: []string{"host"}}}, map[string]string{}},
	} {
		reqs, err := FromNodeSelectorRequirements(tc.reqs...)
		if err != nil {
			t.Fatal(err)
		}
		if got := reqs.LaunchChoiceLabels(); !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if !IsWellKnownLabel(awsv1.LabelInstanceTenancy) || RestrictedLabelReason(awsv1.LabelInstanceTenancy) != "" {
		t.Errorf("instance-tenancy is not a well-known label a NodePool may name")
	}
}
