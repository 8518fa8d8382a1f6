package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/test/metricstest"
)

// TestSetPackingReplacesTheFigures: the packing gauges hold the last figures set, the
// fleet's under nodepool "", and a NodePool left out of them is no longer served.
func TestSetPackingReplacesTheFigures(t *testing.T) {
	metrics.SetPacking([]metrics.PackingFigures{
		{Ratio: 1.5, Repacked: 2, Bound: 1.8},
		{NodePool: "a", Ratio: 1.25, Repacked: 1, Bound: 0.8},
		{NodePool: "b", Ratio: 2, Repacked: 1, Bound: 1},
	})
	value := func(g prometheus.Collector, pool string) []float64 {
		t.Helper()
		var out []float64
		for _, m := range metricstest.Collected(t, g, map[string]string{"nodepool": pool}) {
			out = append(out, m.GetGauge().GetValue())
		}
		return out
	}
	for _, c := range []struct {
		name  string
		g     prometheus.Collector
		pool  string
		wants float64
	}{
		{"ratio", metrics.ClusterPackingRatio, "", 1.5}, {"ratio", metrics.ClusterPackingRatio, "a", 1.25},
		{"repacked", metrics.ClusterRepackedCost, "", 2}, {"bound", metrics.ClusterPackingBound, "b", 1},
	} {
		if got := value(c.g, c.pool); len(got) != 1 || got[0] != c.wants {
			t.Errorf("%s of nodepool %q = %v, want %v", c.name, c.pool, got, c.wants)
		}
	}
	metrics.SetPacking([]metrics.PackingFigures{{Ratio: 1.1, Repacked: 1, Bound: 1}, {NodePool: "a", Ratio: 1.1, Repacked: 1, Bound: 1}})
	if got := value(metrics.ClusterPackingRatio, "b"); len(got) != 0 {
		t.Errorf("nodepool b still served after it left: %v", got)
	}
	if got := value(metrics.ClusterPackingRatio, ""); len(got) != 1 || got[0] != 1.1 {
		t.Errorf("the fleet's ratio = %v, want 1.1", got)
	}
}
