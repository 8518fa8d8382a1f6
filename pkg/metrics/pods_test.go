package metrics_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/test/metricstest"
)

// runGauges are the scheduling run gauges served for a controller, by name.
func runGauges(t *testing.T, r *prometheus.Registry, controller string) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for _, name := range []string{"karpenter_scheduler_queue_depth", "karpenter_scheduler_unfinished_work_seconds"} {
		for _, m := range metricstest.Gathered(t, r, name, map[string]string{metrics.LabelController: controller}) {
			out[name] = append(out[name], m.GetGauge().GetValue())
		}
	}
	return out
}

// While a run goes on, each scrape reads its queue depth and how long it has run; once it
// finishes, its depth reads 0 and its unfinished work is gone; the next run replaces it.
func TestSchedulingRunGauges(t *testing.T) {
	r := prometheus.NewRegistry()
	if err := metrics.Register(r); err != nil {
		t.Fatal(err)
	}
	var queued atomic.Int64
	queued.Store(7)
	run := metrics.StartSchedulingRun("test-controller", "run-1", func() int { return int(queued.Load()) })
	first := runGauges(t, r, "test-controller")
	if d := first["karpenter_scheduler_queue_depth"]; len(d) != 1 || d[0] != 7 {
		t.Errorf("queue depth %v at the start, want [7]", d)
	}
	queued.Store(3)
	time.Sleep(20 * time.Millisecond)
	later := runGauges(t, r, "test-controller")
	if d := later["karpenter_scheduler_queue_depth"]; len(d) != 1 || d[0] != 3 {
		t.Errorf("queue depth %v later, want [3]", d)
	}
	if w, w0 := later["karpenter_scheduler_unfinished_work_seconds"], first["karpenter_scheduler_unfinished_work_seconds"]; len(w) != 1 || len(w0) != 1 || w[0] < w0[0]+0.02 {
		t.Errorf("unfinished work %v then %v, want it to grow with the 20ms waited", w0, w)
	}
	run.Finish()
	done := runGauges(t, r, "test-controller")
	if d, w := done["karpenter_scheduler_queue_depth"], done["karpenter_scheduler_unfinished_work_seconds"]; len(d) != 1 || d[0] != 0 || len(w) != 0 {
		t.Errorf("after the run: queue depth %v, unfinished work %v; want [0] and none", d, w)
	}
	metrics.StartSchedulingRun("test-controller", "run-2", func() int { return 1 }).Finish()
	if text, err := testutil.CollectAndFormat(r, expfmt.TypeTextPlain, "karpenter_scheduler_queue_depth"); err != nil || strings.Contains(string(text), "run-1") || !strings.Contains(string(text), "run-2") {
		t.Errorf("queue depth after a second run: %s (%v), want run-2's only", text, err)
	}
}
