package lowerbound

import (
	"math"
	"slices"
	"testing"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// TestModelLayout: vectors are cpu, memory, pods, ephemeral storage, a dimension per class
// past the first (1 per pod of the class; a type of the class holds its pod slots), then the
// extended resources.
func TestModelLayout(t *testing.T) {
	m := NewModel(3, 1)
	r := scheduling.Resources{MilliCPU: 500, Memory: 1 << 30, Pods: 1, EphemeralStorage: 7}
	m.AddShape("s", 2, r, []float64{1}, 4)
	m.AddType("t", 2, scheduling.Resources{MilliCPU: 4000, Memory: 16 << 30, Pods: 29}, []float64{4}, 0.5)
	m.AddType("u", 0, scheduling.Resources{MilliCPU: 2000, Memory: 8 << 30, Pods: 10}, nil, 0.2)
	if got, want := m.Shapes()[0].Requests, []float64{500, 1 << 30, 1, 7, 0, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("shape vector %v, want %v", got, want)
	}
	if got, want := m.Types()[0].Capacity, []float64{4000, 16 << 30, 29, 0, 0, 29, 4}; !slices.Equal(got, want) {
		t.Errorf("type vector %v, want %v", got, want)
	}
	if got, want := m.Types()[1].Capacity, []float64{2000, 8 << 30, 10, 0, 0, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("class-0 type vector %v, want %v", got, want)
	}
}

// TestModelClasses: a class's pods go only to the class's types, however cheap the others.
func TestModelClasses(t *testing.T) {
	pod := scheduling.Resources{MilliCPU: 1000, Memory: 1 << 30, Pods: 1}
	for _, tc := range []struct {
		name  string
		class int
		want  float64
	}{
		{"unrestricted pods take the cheap type", 0, 1.0},
		{"the class's pods take its dear type", 1, 4.0},
	} {
		m := NewModel(2, 0)
		m.AddShape("pods", tc.class, pod, nil, 8)
		m.AddType("cheap", 0, scheduling.Resources{MilliCPU: 8000, Memory: 32 << 30, Pods: 110}, nil, 1.0)
		m.AddType("dear", 1, scheduling.Resources{MilliCPU: 8000, Memory: 32 << 30, Pods: 110}, nil, 4.0)
		sol, err := m.Solve()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if math.Abs(sol.Cost-tc.want) > 1e-6 {
			t.Errorf("%s: cost %v, want %v", tc.name, sol.Cost, tc.want)
		}
	}
}
