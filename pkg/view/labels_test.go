package view

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestViewParseResources(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []corev1.ResourceName
	}{
		{"cpu", []corev1.ResourceName{"cpu"}},
		{"cpu,memory,nvidia.com/gpu", []corev1.ResourceName{"cpu", "memory", "nvidia.com/gpu"}},
		{" cpu , hugepages-2Mi,pods ", []corev1.ResourceName{"cpu", "hugepages-2Mi", "pods"}},
	} {
		if got, err := ParseResources(tc.in); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseResources(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "no resources: want a comma-separated list such as cpu,memory,nvidia.com/gpu"},
		{" ", "no resources"},
		{"cpu,", `empty item in "cpu,": separate the items with single commas`},
		{"cpu,,memory", `empty item in "cpu,,memory"`},
		{"cpu, cpu", `cpu is listed twice in "cpu, cpu"`},
		{"nvidia.com/gpu/x", `"nvidia.com/gpu/x" is not a resource name (such as cpu, memory or nvidia.com/gpu)`},
		{"gpu!", `"gpu!" is not a resource name`},
	} {
		if _, err := ParseResources(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseResources(%q) error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestViewParseExtraLabels(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		// The view's own columns show these: they are not repeated.
		{"topology.kubernetes.io/zone,karpenter.sh/nodepool", nil},
		{"team, eks-node-viewer/node-age,eks-node-viewer/node-nvidia.com/gpu-usage", []string{"team", UsageLabel("nvidia.com/gpu")}},
		{"node.kubernetes.io/instance-type,karpenter.sh/capacity-type,team", []string{"team"}},
	} {
		if got, err := ParseExtraLabels(tc.in); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseExtraLabels(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{",team", `empty item in ",team"`},
		{"team,team", `team is listed twice`},
		{"a b", `"a b" is not a label key (such as topology.kubernetes.io/zone)`},
		{"example.com/", `"example.com/" is not a label key`},
		{"eks-node-viewer/node-a/b/c-usage", `eks-node-viewer/node-a/b/c-usage: "a/b/c" is not a resource name`},
	} {
		if _, err := ParseExtraLabels(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseExtraLabels(%q) error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestViewLabelValue(t *testing.T) {
	objs := resourceCluster()
	s := NewSnapshot(objs, Options{Now: t0, ExtraLabels: []string{UsageLabel(gpuResource)}})
	if !slices.Contains(s.Measured, gpuResource) || slices.Contains(s.Resources, gpuResource) {
		t.Fatalf("resources %v, measured %v: want the GPUs measured for the label, not shown", s.Resources, s.Measured)
	}
	for _, tc := range []struct {
		row, key string
		want     string
		ok       bool
	}{
		{"gpu-1", "team", "ml", true},
		{"gpu-1", "example.com/none", "", false},
		{"gpu-1", NodeAgeLabel, "120m", true},
		{"gpu-1", UsageLabel(gpuResource), "75%", true},
		{"gpu-1", UsageLabel(corev1.ResourceCPU), "75%", true},
		{"system-1", UsageLabel(gpuResource), "", false},              // it has no GPUs
		{"system-1", UsageLabel("example.com/unmeasured"), "", false}, // not measured
		{"default-x7k2p", corev1.LabelTopologyZone, "zone-b", true},
		{"default-x7k2p", UsageLabel(corev1.ResourceCPU), "", false}, // claims have no usage
		{"default-x7k2p", NodeAgeLabel, "20s", true},
	} {
		var row *Row
		for i := range s.Rows {
			if s.Rows[i].Name == tc.row {
				row = &s.Rows[i]
			}
		}
		if got, ok := s.LabelValue(row, tc.key); got != tc.want || ok != tc.ok {
			t.Errorf("%s %s = %q, %v; want %q, %v", tc.row, tc.key, got, ok, tc.want, tc.ok)
		}
	}
	// A row without a creation time has no age.
	if _, ok := s.LabelValue(&Row{}, NodeAgeLabel); ok {
		t.Error("a row created at the zero time has an age")
	}
}
