// Package metricstest reads Prometheus metrics in tests: the samples of a metric whose labels
// include a set, their sum, and the observation count and sum of a histogram or summary, which
// client_golang's testutil.ToFloat64 does not read.
package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Observations are the number and sum of the observations of o: a Histogram or Summary, or
// one series of a vector of them (as WithLabelValues returns it).
func Observations(t testing.TB, o prometheus.Observer) (count uint64, sum float64) {
	t.Helper()
	m, ok := o.(prometheus.Metric)
	if !ok {
		t.Fatalf("%T is not a metric", o)
	}
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if s := d.GetSummary(); s != nil {
		return s.GetSampleCount(), s.GetSampleSum()
	}
	return d.GetHistogram().GetSampleCount(), d.GetHistogram().GetSampleSum()
}

// Matching returns the samples of f whose labels include want (every sample when want is
// empty); none when f is nil.
func Matching(f *dto.MetricFamily, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range f.GetMetric() {
		if hasLabels(m, want) {
			out = append(out, m)
		}
	}
	return out
}

// Gathered returns the samples of the metric named name that g serves whose labels include
// want.
func Gathered(t testing.TB, g prometheus.Gatherer, name string, want map[string]string) []*dto.Metric {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return Matching(f, want)
		}
	}
	return nil
}

// Collected returns the samples c collects, whatever their metric, whose labels include want.
// Collecting a vector reads its series without creating any.
func Collected(t testing.TB, c prometheus.Collector, want map[string]string) []*dto.Metric {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	var out []*dto.Metric
	var err error
	for m := range ch {
		d := &dto.Metric{}
		if werr := m.Write(d); werr != nil {
			err = werr
			continue // drain the channel so that Collect returns
		}
		if hasLabels(d, want) {
			out = append(out, d)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Sum adds the samples: counter and gauge values, histogram and summary observation counts.
func Sum(samples []*dto.Metric) float64 {
	total := 0.0
	for _, m := range samples {
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		case m.Summary != nil:
			total += float64(m.GetSummary().GetSampleCount())
		}
	}
	return total
}

// Label is the value of the sample's label name, "" when it has none.
func Label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// hasLabels reports whether the sample's labels include want; a label the sample lacks reads
// as empty.
func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		if Label(m, k) != v {
			return false
		}
	}
	return true
}
