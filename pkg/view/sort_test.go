package view

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

func TestViewSort(t *testing.T) {
	objs := Objects{
		Nodes: []corev1.Node{
			// old, cheap, half-full CPU, a quarter of memory
			testNode("b-old", nodeOptions{created: t0.Add(-48 * time.Hour), cpu: "2", memory: "8Gi"}),
			// new, expensive, a quarter of CPU, full memory
			testNode("a-new", nodeOptions{created: t0.Add(-time.Minute), instanceType: "large", cpu: "4", memory: "4Gi"}),
			// middle-aged, unknown price, empty
			testNode("c-mid", nodeOptions{created: t0.Add(-time.Hour), instanceType: "unknown"}),
			// same age as c-mid, spot: the tie goes by name
			testNode("d-mid", nodeOptions{created: t0.Add(-time.Hour), instanceType: "large", capacityType: karpv1.CapacityTypeSpot}),
		},
		Pods: []corev1.Pod{
			testPod("p1", "b-old", "1", "2Gi", corev1.PodRunning),
			testPod("p2", "a-new", "1", "4Gi", corev1.PodRunning),
		},
	}
	for _, tc := range []struct {
		key  SortKey
		want []string
	}{
		{"", []string{"b-old", "c-mid", "d-mid", "a-new"}},
		{SortCreation, []string{"b-old", "c-mid", "d-mid", "a-new"}},
		{SortName, []string{"a-new", "b-old", "c-mid", "d-mid"}},
		{SortPrice, []string{"a-new", "d-mid", "b-old", "c-mid"}},
		{SortCPU, []string{"b-old", "a-new", "c-mid", "d-mid"}},
		{SortMemory, []string{"a-new", "b-old", "c-mid", "d-mid"}},
	} {
		t.Run(string(tc.key), func(t *testing.T) {
			s := NewSnapshot(objs, Options{Now: t0, Prices: testPrices, Sort: tc.key})
			var got []string
			for _, r := range s.Rows {
				got = append(got, r.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

func TestViewParseSortKey(t *testing.T) {
	for _, k := range SortKeys {
		if got, err := ParseSortKey(string(k)); err != nil || got != k {
			t.Errorf("ParseSortKey(%q) = %q, %v", k, got, err)
		}
	}
	if _, err := ParseSortKey("age"); err == nil || err.Error() != `unknown sort "age": want one of creation, price, name, cpu, memory` {
		t.Errorf("ParseSortKey(age) error = %v", err)
	}
}
