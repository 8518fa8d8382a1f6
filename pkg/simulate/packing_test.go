package simulate

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/openkarpenter/karpenter/pkg/disruption"
)

// TestFragmentedExample: examples/fragmented.yaml leaves a fleet of part-filled nodes that
// Karpenter's consolidation alone cannot improve; re-pack consolidation brings it to within
// disruption.RepackThreshold (1.10×) of the lower bound of its pods packed from scratch, and
// the report shows the ratio at the peak and the end.
func TestFragmentedExample(t *testing.T) {
	ctx := context.Background()
	w, err := LoadWorkload("../../examples/fragmented.yaml")
	if err != nil {
		t.Fatal(err)
	}
	with, err := Run(ctx, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !w.FeatureGates["RepackConsolidation"] {
		t.Fatal("examples/fragmented.yaml does not turn the RepackConsolidation gate on")
	}
	w.FeatureGates["RepackConsolidation"] = false
	without, err := Run(ctx, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with re-pack: %.3f× the bound at the end ($%.3f/h, bound $%.3f/h, re-packed $%.3f/h), %.3f× at peak, %d nodes, methods %v",
		with.Packing.FinalRatio, with.Packing.FinalPerHour, with.Packing.FinalBoundPerHour, with.Packing.FinalRepackedPerHour, with.Packing.PeakRatio, with.Nodes.Final, with.DisruptionMethods)
	t.Logf("Karpenter's consolidation only: %.3f× the bound at the end ($%.3f/h), %d nodes, methods %v",
		without.Packing.FinalRatio, without.Packing.FinalPerHour, without.Nodes.Final, without.DisruptionMethods)
	if r := with.Packing.FinalRatio; r < 1 || r > disruption.RepackThreshold {
		t.Errorf("final packing ratio %.3f, want within [1, %.2f]", r, disruption.RepackThreshold)
	}
	if with.Packing.PeakRatio <= disruption.RepackThreshold {
		t.Errorf("peak packing ratio %.3f: the fleet was never fragmented", with.Packing.PeakRatio)
	}
	if without.Packing.FinalRatio <= disruption.RepackThreshold {
		t.Errorf("Karpenter's consolidation alone ends at %.3f× the bound: the example shows nothing of re-pack", without.Packing.FinalRatio)
	}
	if with.DisruptionMethods[disruption.MethodRepack] == 0 || without.DisruptionMethods[disruption.MethodRepack] != 0 {
		t.Errorf("re-pack consolidation removed %d nodes with it on, %d with it off", with.DisruptionMethods[disruption.MethodRepack], without.DisruptionMethods[disruption.MethodRepack])
	}
	if with.Cost.FinalPerHour >= without.Cost.FinalPerHour {
		t.Errorf("re-pack ends at $%.3f/h, Karpenter's consolidation alone at $%.3f/h", with.Cost.FinalPerHour, without.Cost.FinalPerHour)
	}
	// The re-pack's commands are Karpenter's Underutilized consolidation.
	if with.Disruptions["Underutilized"] < with.DisruptionMethods[disruption.MethodRepack] {
		t.Errorf("removals %v, methods %v: re-pack's not all Underutilized", with.Disruptions, with.DisruptionMethods)
	}
	// The ratio is sampled along the run, and said in the text report.
	sampled := false
	for _, s := range with.Series {
		sampled = sampled || s.PackingRatio > disruption.RepackThreshold
	}
	if !sampled {
		t.Error("no sample of the series has the fragmented fleet's packing ratio")
	}
	var text bytes.Buffer
	if err := WriteText(&text, with); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Packing   1.0") || !strings.Contains(text.String(), "× the bound at the end") {
		t.Errorf("the text report does not give the packing ratio:\n%s", text.String())
	}
}

// TestPackingText: the packing line says what the bound is, and below the line, only at the
// re-pack threshold or above, either where the waste can go (re-packed from scratch is cheaper)
// or that whole nodes do no better.
func TestPackingText(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Packing
		want []string
		not  []string
	}{
		{"close", Packing{PeakRatio: 1.2, FinalRatio: 1.05, FinalPerHour: 1.05, FinalRepackedPerHour: 1.05, FinalBoundPerHour: 1},
			[]string{"Packing   1.05× the bound at the end, 1.20× at its highest; the bound, $1.00/hour, is the least"}, []string{"RepackConsolidation", "whole nodes"}},
		{"re-pack saves", Packing{PeakRatio: 13, FinalRatio: 13, FinalPerHour: 4.69, FinalRepackedPerHour: 0.46, FinalBoundPerHour: 0.36},
			[]string{"why consolidation leaves them is below", "RepackConsolidation"}, []string{"whole nodes"}},
		{"whole nodes", Packing{PeakRatio: 3.19, FinalRatio: 1.59, FinalPerHour: 0.31, FinalRepackedPerHour: 0.31, FinalBoundPerHour: 0.19},
			[]string{"whole nodes of the NodePools' instance types hold these pods no cheaper"}, []string{"RepackConsolidation"}},
	} {
		var b strings.Builder
		writePackingText(&b, tc.p)
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, b.String(), w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(b.String(), n) {
				t.Errorf("%s: %q says %q", tc.name, b.String(), n)
			}
		}
	}
}
