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

// TestDaemonTerms: a daemonset's pod runs under its node selection terms (each required node
// affinity term with its nodeSelector) where it tolerates the node's taints, PreferNoSchedule
// being no bar; nowhere where it does not.
func TestDaemonTerms(t *testing.T) {
	spec := &corev1.PodSpec{
		NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}}}},
		}}}},
		Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
	}
	gpu := corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}
	soft := corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}
	hard := corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}
	terms := DaemonTerms(spec, []corev1.Taint{gpu, soft})
	if len(terms) != 2 {
		t.Fatalf("got %d terms under tolerated taints, want 2", len(terms))
	}
	for i, zone := range []string{"zone-a", "zone-b"} {
		if err := terms[i].Matches(map[string]string{corev1.LabelArchStable: "arm64", corev1.LabelTopologyZone: zone}); err != nil {
			t.Errorf("term %d does not match an arm64 node in %s: %v", i, zone, err)
		}
		if terms[i].Matches(map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelTopologyZone: zone}) == nil {
			t.Errorf("term %d matches an amd64 node: its nodeSelector is part of it", i)
		}
	}
	if terms := DaemonTerms(spec, []corev1.Taint{gpu, hard}); terms != nil {
		t.Errorf("got %v under an untolerated taint, want none", terms)
	}
	if terms := DaemonTerms(&corev1.PodSpec{}, nil); len(terms) != 1 || terms[0].Len() != 0 {
		t.Errorf("a pod selecting no node: got %v, want one empty term", terms)
	}
}
