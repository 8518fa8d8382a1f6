package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	_ "sigs.k8s.io/controller-runtime/pkg/controller" // registers controller-runtime's reconcile metrics
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// karpenterMetric is a metric as Karpenter serves it (testdata fixtures).
type karpenterMetric struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Labels []string `json:"labels"`
}

// notServedYet are Karpenter's metrics this project does not serve yet, each with why; the
// test fails when one of them becomes served, so the list only shrinks (docs/metrics.md
// lists them too).
var notServedYet = map[string]string{}

// labelsDifferYet are Karpenter's metrics this project serves with other label names, each
// with why.
var labelsDifferYet = map[string]string{}

var descPattern = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

// servedMetrics are this project's metrics: name to type and sorted label names.
func servedMetrics(t *testing.T) map[string]karpenterMetric {
	t.Helper()
	out := map[string]karpenterMetric{}
	add := func(d *prometheus.Desc, kind string) {
		m := descPattern.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read descriptor %s", d)
		}
		labels := []string{}
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		out[m[1]] = karpenterMetric{Name: m[1], Type: kind, Labels: labels}
	}
	for _, c := range eventMetrics() {
		var kind string
		switch c.(type) {
		case *prometheus.GaugeVec, prometheus.Gauge: // before Counter, whose methods a Gauge has too
			kind = "gauge"
		case *prometheus.CounterVec, prometheus.Counter:
			kind = "counter"
		case *prometheus.HistogramVec:
			kind = "histogram"
		case *prometheus.SummaryVec:
			kind = "summary"
		case prometheus.Histogram: // or a Summary: the same interface, told apart by their samples Histogram or a Summary: the same interface, told apart by their samples
			var sample dto.Metric
			if err := c.(prometheus.Metric).Write(&sample); err != nil {
				t.Fatal(err)
			}
			kind = "histogram"
			if sample.Summary != nil {
				kind = "summary"
			}
		case *gaugeSlot:
			for _, d := range gaugeDescs {
				add(d, "gauge")
			}
			continue
		case *schedulingRunGauges:
			kind = "gauge"
		default:
			t.Fatalf("collector %T: teach the test its type", c)
		}
		ch := make(chan *prometheus.Desc, 16)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			add(d, kind)
		}
	}
	return out
}

// TestKarpenterMetricsServed holds the metrics to Karpenter's, read from Karpenter itself:
// testdata/karpenter-core-metrics.json is written by test/conformance/metricsref from Karpenter
// v1.15.0's registry, testdata/karpenter-aws-metrics.json from its AWS provider's source.
// Every one is served with the same type and label names, or is listed above with why not.
func TestKarpenterMetricsServed(t *testing.T) {
	var upstream []karpenterMetric
	for _, f := range []string{"testdata/karpenter-core-metrics.json", "testdata/karpenter-aws-metrics.json"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ms []karpenterMetric
		if err := json.Unmarshal(raw, &ms); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		upstream = append(upstream, ms...)
	}
	served := servedMetrics(t)
	matched := 0
	for _, want := range upstream {
		got, ok := served[want.Name]
		_, pending := notServedYet[want.Name]
		switch {
		case !ok && !pending:
			t.Errorf("%s (%s, labels %v) is not served", want.Name, want.Type, want.Labels)
		case ok && pending:
			t.Errorf("%s is served now: take it out of notServedYet", want.Name)
		case ok && got.Type != want.Type:
			t.Errorf("%s is a %s, Karpenter's a %s", want.Name, got.Type, want.Type)
		case ok && !slices.Equal(got.Labels, want.Labels) && labelsDifferYet[want.Name] == "":
			t.Errorf("%s has labels %v, Karpenter's %v", want.Name, got.Labels, want.Labels)
		case ok && slices.Equal(got.Labels, want.Labels) && labelsDifferYet[want.Name] != "":
			t.Errorf("%s has Karpenter's labels now: take it out of labelsDifferYet", want.Name)
		case ok:
			matched++
		}
	}
	for name := range notServedYet {
		if !slices.ContainsFunc(upstream, func(m karpenterMetric) bool { return m.Name == name }) {
			t.Errorf("notServedYet lists %s, which Karpenter does not have", name)
		}
	}
	t.Logf("%d of Karpenter's %d metrics served (%d with other labels), %d not yet", matched, len(upstream), len(labelsDifferYet), len(notServedYet))
	var ours []string
	for name := range served {
		if !slices.ContainsFunc(upstream, func(m karpenterMetric) bool { return m.Name == name }) {
			ours = append(ours, name)
		}
	}
	slices.Sort(ours)
	t.Logf("ours only: %v", ours)
}

// TestKarpenterReferencePageServed: every metric of Karpenter's metrics reference page (the 71
// names of testdata/karpenter-reference-page.txt) is served, with Karpenter's type and labels
// (TestKarpenterMetricsServed checks those).
func TestKarpenterReferencePageServed(t *testing.T) {
	data, err := os.ReadFile("testdata/karpenter-reference-page.txt")
	if err != nil {
		t.Fatal(err)
	}
	served := servedMetrics(t)
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	found := 0
	for _, name := range names {
		if _, ok := served[name]; ok {
			found++
		} else {
			t.Errorf("%s, on Karpenter's metrics reference page, is not served", name)
		}
	}
	if len(names) != 71 {
		t.Errorf("the page lists %d metrics, want the 71 of Karpenter v1.15's", len(names))
	}
	t.Logf("%d of the %d metrics of Karpenter's reference page served", found, len(names))
}

// TestKarpenterDashboardsRender loads Karpenter's published Grafana dashboards (capacity and
// performance, testdata/dashboards, from its v1.14 getting-started guide) and checks that
// every metric their panels query is served: ours, or controller-runtime's (served by the
// operator's manager). node_* series come from node-exporter, not from Karpenter.
func TestKarpenterDashboardsRender(t *testing.T) {
	served := servedMetrics(t)
	ch := make(chan *prometheus.Desc, 256)
	go func() {
		crmetrics.Registry.(prometheus.Collector).Describe(ch)
		close(ch)
	}()
	runtimeMetrics := map[string]bool{}
	for d := range ch {
		if m := descPattern.FindStringSubmatch(d.String()); m != nil {
			runtimeMetrics[m[1]] = true
		}
	}
	exprPattern := regexp.MustCompile(`"expr":\s*"((?:[^"\\]|\\.)*)"`)
	metricPattern := regexp.MustCompile(`\b((?:karpenter|controller_runtime)_[a-z_]+)`)
	files, _ := filepath.Glob("testdata/dashboards/*.json")
	if len(files) != 2 {
		t.Fatalf("%d dashboards, want Karpenter's two", len(files))
	}
	queried := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range exprPattern.FindAllStringSubmatch(string(raw), -1) {
			for _, m := range metricPattern.FindAllString(e[1], -1) {
				queried++
				name := m
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if base := strings.TrimSuffix(m, suffix); base != m && (served[base].Name != "" || runtimeMetrics[base]) {
						name = base
					}
				}
				if served[name].Name == "" && !runtimeMetrics[name] {
					t.Errorf("%s: a panel queries %s, which is not served", filepath.Base(f), m)
				}
			}
		}
	}
	if queried < 30 {
		t.Fatalf("found only %d metric references; is the pattern broken?", queried)
	}
}
