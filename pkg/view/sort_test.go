package view

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// sortObjects are four nodes that every sort key orders differently, and a claim without a node.
func sortObjects() Objects {
	return Objects{
		Nodes: []corev1.Node{
			// old, cheap, half-full CPU, a quarter of memory, zone-10, one GPU of two used
			testNode("b-old", nodeOptions{created: t0.Add(-48 * time.Hour), cpu: "2", memory: "8Gi", zone: "zone-10",
				labels: map[string]string{"team": "web"}}),
			// new, expensive, a quarter of CPU, full memory, zone-9
			testNode("a-new", nodeOptions{created: t0.Add(-time.Minute), instanceType: "large", cpu: "4", memory: "4Gi", zone: "zone-9",
				labels: map[string]string{"team": "batch"}}),
			// middle-aged, unknown price, empty, no team
			testNode("c-mid", nodeOptions{created: t0.Add(-time.Hour), instanceType: "unknown"}),
			// same age as c-mid, spot: the tie goes by name; the same team as a-new
			testNode("d-mid", nodeOptions{created: t0.Add(-time.Hour), instanceType: "large", capacityType: karpv1.CapacityTypeSpot,
				labels: map[string]string{"team": "batch"}}),
		},
		NodeClaims: []karpv1.NodeClaim{
			testClaim("e-claim", claimOptions{created: t0.Add(-2 * time.Hour), labels: map[string]string{"team": "api"}}),
		},
		Pods: []corev1.Pod{
			testPod("p1", "b-old", "1", "2Gi", corev1.PodRunning),
			testPod("p2", "a-new", "1", "4Gi", corev1.PodRunning),
		},
	}
}

func rowNames(s Snapshot) []string {
	names := make([]string, len(s.Rows))
	for i, r := range s.Rows {
		names[i] = r.Name
	}
	return names
}

func TestViewSort(t *testing.T) {
	for _, tc := range []struct {
		key   SortKey
		order SortOrder
		want  []string
	}{
		// The named keys in their default order, then reversed.
		{"", "", []string{"b-old", "e-claim", "c-mid", "d-mid", "a-new"}},
		{SortCreation, "", []string{"b-old", "e-claim", "c-mid", "d-mid", "a-new"}},
		{SortCreation, SortDescending, []string{"b-old", "e-claim", "c-mid", "d-mid", "a-new"}},
		{SortCreation, SortAscending, []string{"a-new", "c-mid", "d-mid", "e-claim", "b-old"}}, // ties still by name
		{SortName, "", []string{"a-new", "b-old", "c-mid", "d-mid", "e-claim"}},
		{SortName, SortDescending, []string{"e-claim", "d-mid", "c-mid", "b-old", "a-new"}},
		{SortPrice, "", []string{"a-new", "d-mid", "b-old", "c-mid", "e-claim"}},             // unpriced last
		{SortPrice, SortAscending, []string{"b-old", "d-mid", "a-new", "c-mid", "e-claim"}},  // unpriced still last
		{SortCPU, "", []string{"b-old", "a-new", "c-mid", "d-mid", "e-claim"}},               // the claim has no usage: last
		{SortCPU, SortAscending, []string{"c-mid", "d-mid", "a-new", "b-old", "e-claim"}},    // ...either way
		{SortMemory, "", []string{"a-new", "b-old", "c-mid", "d-mid", "e-claim"}},            //
		{SortMemory, SortAscending, []string{"c-mid", "d-mid", "b-old", "a-new", "e-claim"}}, //
		{NodeAgeLabel, "", []string{"a-new", "c-mid", "d-mid", "e-claim", "b-old"}},          // as creation=asc
		{"eks-node-viewer/node-cpu-usage", "", []string{"c-mid", "d-mid", "a-new", "b-old", "e-claim"}},
		{"eks-node-viewer/node-memory-usage", SortDescending, []string{"a-new", "b-old", "c-mid", "d-mid", "e-claim"}},
		// A label: its values in order, ties by name, the rows without it last either way.
		{"team", "", []string{"e-claim", "a-new", "d-mid", "b-old", "c-mid"}},
		{"team", SortAscending, []string{"e-claim", "a-new", "d-mid", "b-old", "c-mid"}},
		{"team", SortDescending, []string{"b-old", "a-new", "d-mid", "e-claim", "c-mid"}},
		// Numbers in values by value: zone-9 before zone-10 (and digits before letters: zone-a
		// last); the claim has no zone.
		{corev1.LabelTopologyZone, SortAscending, []string{"a-new", "b-old", "c-mid", "d-mid", "e-claim"}},
		{corev1.LabelTopologyZone, SortDescending, []string{"c-mid", "d-mid", "b-old", "a-new", "e-claim"}},
		// No row has the label: all by name.
		{"example.com/none", SortDescending, []string{"a-new", "b-old", "c-mid", "d-mid", "e-claim"}},
	} {
		t.Run(string(tc.key)+"="+string(tc.order), func(t *testing.T) {
			s := NewSnapshot(sortObjects(), Options{Now: t0, Prices: testPrices, Sort: tc.key, Order: tc.order})
			if got := rowNames(s); !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

// A claim's requirements that allow a single value sort as its label would.
func TestViewSortClaimRequirement(t *testing.T) {
	objs := Objects{NodeClaims: []karpv1.NodeClaim{
		testClaim("a", claimOptions{requirements: map[string][]string{corev1.LabelTopologyZone: {"zone-c"}}}),
		testClaim("b", claimOptions{requirements: map[string][]string{corev1.LabelTopologyZone: {"zone-a", "zone-b"}}}),
		testClaim("c", claimOptions{labels: map[string]string{corev1.LabelTopologyZone: "zone-b"},
			requirements: map[string][]string{corev1.LabelTopologyZone: {"zone-a"}}}), // the label wins
	}}
	s := NewSnapshot(objs, Options{Sort: corev1.LabelTopologyZone})
	if got, want := rowNames(s), []string{"c", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if objs.NodeClaims[0].Labels[corev1.LabelTopologyZone] != "" {
		t.Errorf("the claim's labels were changed: %v", objs.NodeClaims[0].Labels)
	}
}

// Sorting by the usage of a resource the rows do not show measures it without showing it.
func TestViewSortMeasuresItsResource(t *testing.T) {
	s := NewSnapshot(sortObjects(), Options{Sort: SortMemory, Resources: []corev1.ResourceName{corev1.ResourceCPU}})
	if !slices.Equal(s.Resources, []corev1.ResourceName{corev1.ResourceCPU}) ||
		!slices.Equal(s.Measured, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}) {
		t.Errorf("resources %v, measured %v; want [cpu], [cpu memory]", s.Resources, s.Measured)
	}
	if got := rowNames(s); got[0] != "a-new" {
		t.Errorf("order %v, want a-new (full memory) first", got)
	}
	if out := render(t, s, RenderOptions{}); strings.Contains(out, "MEMORY") {
		t.Errorf("memory is shown:\n%s", out)
	}
}

func TestViewParseSort(t *testing.T) {
	for _, tc := range []struct {
		in        string
		wantKey   SortKey
		wantOrder SortOrder
	}{
		{"creation", SortCreation, SortDescending},
		{"creation=asc", SortCreation, SortAscending},
		{"creation=dsc", SortCreation, SortDescending},
		{"price", SortPrice, SortDescending},
		{"name", SortName, SortAscending},
		{"cpu", SortCPU, SortDescending},
		{"memory=asc", SortMemory, SortAscending},
		{"eks-node-viewer/node-cpu-usage=dsc", "eks-node-viewer/node-cpu-usage", SortDescending},
		{"eks-node-viewer/node-nvidia.com/gpu-usage", "eks-node-viewer/node-nvidia.com/gpu-usage", SortAscending},
		{"eks-node-viewer/node-age", NodeAgeLabel, SortAscending},
		{"topology.kubernetes.io/zone=dsc", corev1.LabelTopologyZone, SortDescending},
		{"team", "team", SortAscending},
	} {
		key, order, err := ParseSort(tc.in)
		if err != nil || key != tc.wantKey || order != tc.wantOrder {
			t.Errorf("ParseSort(%q) = %q, %q, %v; want %q, %q", tc.in, key, order, err, tc.wantKey, tc.wantOrder)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"creation=up", `unknown sort order "up" in "creation=up": want asc or dsc, as in creation=dsc`},
		{"creation=", `unknown sort order "" in "creation=": want asc or dsc`},
		{"", `no sort key in "": want one of creation, price, name, cpu, memory, or a label key`},
		{"=asc", `no sort key in "=asc"`},
		{"by price", `unknown sort "by price": want one of creation, price, name, cpu, memory, or a label key: "by price" is not a label key`},
		{"eks-node-viewer/node-a b-usage", `"a b" is not a resource name`},
	} {
		if _, _, err := ParseSort(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSort(%q) error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestViewNaturalCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"a", "b", -1},
		{"node-2", "node-10", -1},
		{"node-10", "node-2", 1},
		{"node-02", "node-2", 0},
		{"2", "10a", -1},
		{"a10b2", "a10b10", -1},
		{"abc", "ab", 1},
		{"zone-a", "zone-1", 1}, // bytes: digits before letters
	} {
		if got := naturalCompare(tc.a, tc.b); got != tc.want {
			t.Errorf("naturalCompare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
