package simulate

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/packing"
)

// Packing is how far the fleet was from its pods packed from scratch (package packing), ours:
// its $/hour over the lower bound of what any packing of its pods on its NodePools' instance
// types costs (1 is as cheap as the pods allow).
type Packing struct {
	// PeakRatio is the highest ratio the disruption controller measured along the run (every
	// minute, and after each disruption); 0 when it measured none with pods.
	PeakRatio float64 `json:"peakRatio"`
	// FinalRatio is the ratio at the end: FinalPerHour (the Karpenter nodes' $/hour, without
	// those being deleted) over FinalBoundPerHour; 0 when no pod runs on them.
	FinalRatio float64 `json:"finalRatio"`
	// FinalPerHour, FinalRepackedPerHour and FinalBoundPerHour are, at the end, what the
	// nodes cost, what the scheduler's packing of their pods from scratch would cost, and the
	// lower bound of any packing, $/hour.
	FinalPerHour         float64 `json:"finalPerHour"`
	FinalRepackedPerHour float64 `json:"finalRepackedPerHour"`
	FinalBoundPerHour    float64 `json:"finalBoundPerHour"`
}

// packingRatio is the ratio of the disruption controller's last measure, for a sample; 0
// when it has none.
func packingRatio(e *engine) float64 {
	if p := e.disruption.Packing(); p != nil {
		return round(p.Ratio())
	}
	return 0
}

// packingReport measures the fleet at the end, and takes the peak of the samples.
func packingReport(ctx context.Context, e *engine, samples []Sample) (Packing, error) {
	var out Packing
	for _, s := range samples {
		out.PeakRatio = math.Max(out.PeakRatio, s.PackingRatio)
	}
	p, err := e.disruption.MeasurePacking(ctx)
	if err != nil {
		return out, fmt.Errorf("measuring the packing: %w", err)
	}
	setFinalPacking(&out, p)
	return out, nil
}

func setFinalPacking(out *Packing, p *packing.Result) {
	out.FinalRatio = round(p.Ratio())
	out.FinalPerHour, out.FinalRepackedPerHour, out.FinalBoundPerHour = round(p.Current), round(p.Repacked), round(p.Bound)
	out.PeakRatio = math.Max(out.PeakRatio, out.FinalRatio)
}

// writePackingText writes the report's packing lines, or nothing when no pod ran at the end:
// the ratio at the end and its highest along the run, what the bound is, and, when the ratio at
// the end is at the re-pack threshold or above, where to look for why.
func writePackingText(b *strings.Builder, p Packing) {
	if p.FinalBoundPerHour <= 0 {
		return
	}
	fmt.Fprintf(b, "Packing   %.2f× the bound at the end, %.2f× at its highest; the bound, $%.2f/hour, is the least the pods at the end could cost on new nodes (packed from scratch by the scheduler: $%.2f/hour)\n",
		p.FinalRatio, p.PeakRatio, p.FinalBoundPerHour, p.FinalRepackedPerHour)
	switch {
	case p.FinalRatio < disruption.RepackThreshold:
	case p.FinalRepackedPerHour < p.FinalPerHour:
		fmt.Fprintf(b, "          at %.2f×, the nodes cost more than their pods need: why consolidation leaves them is below; the RepackConsolidation gate (ours) replaces the most wasteful nodes of a fleet at %.2f× or more\n",
			p.FinalRatio, disruption.RepackThreshold)
	default:
		// The bound packs fractions of nodes: whole nodes of the NodePools' types do no better.
		b.WriteString("          whole nodes of the NodePools' instance types hold these pods no cheaper: the gap to the bound is the unused part of the nodes they need\n")
	}
}
