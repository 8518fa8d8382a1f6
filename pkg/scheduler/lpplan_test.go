package scheduler

import (
	"slices"
	"testing"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// TestWholeCounts: a pattern the LP fills in cpu and memory at once (the spot batch's on-demand
// pods on an m5a.12xlarge's room) loses most of a pod of each shape on whole nodes, and less per
// room on a node with four times the room; counts are never topped past their ceiling, and an
// overshooting floor is cut until it fits.
func TestWholeCounts(t *testing.T) {
	const gi = 1 << 30
	sizes := []scheduling.Resources{
		{MilliCPU: 3000, Memory: 1 * gi, Pods: 1},
		{MilliCPU: 500, Memory: 12 * gi, Pods: 1},
	}
	room := scheduling.Resources{MilliCPU: 47810, Memory: 187624849408, Pods: 234, EphemeralStorage: 1}
	x := []float64{13.70001045334507, 13.419937279929577}
	if got := wholeCounts(x, 1, sizes, room); !slices.Equal(got, []int{13, 13}) {
		t.Errorf("own room: %v, want [13 13]", got)
	}
	big := scheduling.Resources{MilliCPU: 191450, Memory: 753912512512, Pods: 737, EphemeralStorage: 1}
	if got := wholeCounts(x, 4, sizes, big); !slices.Equal(got, []int{54, 54}) {
		t.Errorf("four times the room: %v, want [54 54]", got)
	}
	// Room for 20 of the first shape: the ceiling of 2.5 caps the top-up at 3.
	if got := wholeCounts([]float64{2.5, 0}, 1, sizes, room); !slices.Equal(got, []int{3, 0}) {
		t.Errorf("top-up: %v, want [3 0]", got)
	}
	// A floor that overshoots a smaller room (3 and 2: 10 cpu of 9) is cut where it overshoots
	// most (the first, at its count), then the second is topped up to its ceiling.
	small := scheduling.Resources{MilliCPU: 9000, Memory: 100 * gi, Pods: 110}
	if got := wholeCounts([]float64{3, 2.2}, 1, sizes, small); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("cut: %v, want [2 3]", got)
	}
}
