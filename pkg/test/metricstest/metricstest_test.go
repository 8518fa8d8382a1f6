package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestObservations(t *testing.T) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h"}, []string{"l"})
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "s"})
	h.WithLabelValues("a").Observe(2)
	h.WithLabelValues("a").Observe(3)
	h.WithLabelValues("b").Observe(7)
	s.Observe(4)
	if n, sum := Observations(t, h.WithLabelValues("a")); n != 2 || sum != 5 {
		t.Errorf("histogram series a: %d observations summing %v, want 2 summing 5", n, sum)
	}
	if n, sum := Observations(t, s); n != 1 || sum != 4 {
		t.Errorf("summary: %d observations summing %v, want 1 summing 4", n, sum)
	}
}

func TestSeriesMatchingLabels(t *testing.T) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c"}, []string{"pool", "zone"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h"})
	c.WithLabelValues("default", "a").Add(1)
	c.WithLabelValues("default", "b").Add(2)
	c.WithLabelValues("other", "a").Add(4)
	g.Set(8)
	h.Observe(100)
	r := prometheus.NewRegistry()
	r.MustRegister(c, g, h)
	for _, tc := range []struct {
		name string
		want map[string]string
		sum  float64
	}{
		{"c", nil, 7},
		{"c", map[string]string{"pool": "default"}, 3},
		{"c", map[string]string{"pool": "default", "zone": "b"}, 2},
		{"c", map[string]string{"pool": "none"}, 0},
		{"c", map[string]string{"missing": ""}, 7}, // a label a sample lacks reads as empty
		{"g", nil, 8},
		{"h", nil, 1}, // observation count
		{"absent", nil, 0},
	} {
		if got := Sum(Gathered(t, r, tc.name, tc.want)); got != tc.sum {
			t.Errorf("%s%v gathered: %v, want %v", tc.name, tc.want, got, tc.sum)
		}
	}
	if got := Sum(Collected(t, c, map[string]string{"zone": "a"})); got != 5 {
		t.Errorf("collected zone a: %v, want 5", got)
	}
	if got := Collected(t, c, map[string]string{"zone": "c"}); len(got) != 0 {
		t.Errorf("collected zone c: %v, want none", got)
	}
	if s := Gathered(t, r, "c", map[string]string{"pool": "other"}); len(s) != 1 || Label(s[0], "zone") != "a" || Label(s[0], "missing") != "" {
		t.Errorf("pool other: %v, want one sample in zone a", s)
	}
}
