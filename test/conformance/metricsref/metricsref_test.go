// Package metricsref records the metrics Karpenter v1.15.0 registers (name, type, label names)
// from Karpenter itself, as a fixture the main module's metrics test holds this project to.
package metricsref

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	// Every package of Karpenter v1.15.0 that registers metrics on controller-runtime's
	// registry when it is initialized.
	_ "sigs.k8s.io/karpenter/pkg/cloudprovider/metrics"
	_ "sigs.k8s.io/karpenter/pkg/controllers/disruption"
	nodemetrics "sigs.k8s.io/karpenter/pkg/controllers/metrics/node"
	_ "sigs.k8s.io/karpenter/pkg/controllers/metrics/nodepool"
	_ "sigs.k8s.io/karpenter/pkg/controllers/metrics/pod"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/termination"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/termination/terminator"
	_ "sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/lifecycle"
	_ "sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/reboot"
	_ "sigs.k8s.io/karpenter/pkg/controllers/pod/deletioncost"
	_ "sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	_ "sigs.k8s.io/karpenter/pkg/controllers/state"
	_ "sigs.k8s.io/karpenter/pkg/metrics"
	_ "sigs.k8s.io/karpenter/pkg/operator"
	_ "sigs.k8s.io/karpenter/pkg/state/cost"
)

var update = flag.Bool("update", false, "rewrite the fixture from Karpenter's registry")

const fixture = "../../../pkg/metrics/testdata/karpenter-core-metrics.json"

// metric is one metric family as Karpenter registers it.
type metric struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Labels []string `json:"labels"`
}

var (
	constructorPattern = regexp.MustCompile(`opmetrics\.NewPrometheus(Counter|Gauge|Histogram|Summary)\(`)
	subsystemPattern   = regexp.MustCompile(`Subsystem:\s*([\w."]+)`)
	namePattern        = regexp.MustCompile(`Name:\s*"([^"]+)"`)
	constantPattern    = regexp.MustCompile(`(?m)^\s*(\w+)\s*=\s*"([a-z_]*)"`)
)

// metricTypes reads the type of each metric from Karpenter's source (the registry's
// descriptors do not carry it): every metric is made by operatorpkg's NewPrometheusCounter,
// NewPrometheusGauge, NewPrometheusHistogram or NewPrometheusSummary with literal options.
func metricTypes(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/karpenter").Output()
	if err != nil {
		t.Fatalf("finding Karpenter's source: %v", err)
	}
	root := strings.TrimSpace(string(out))
	var sources []string
	constants := map[string]string{"Namespace": "karpenter"}
	err = filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sources = append(sources, string(raw))
		for _, m := range constantPattern.FindAllStringSubmatch(string(raw), -1) {
			constants[m[1]] = m[2]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, src := range sources {
		for _, loc := range constructorPattern.FindAllStringSubmatchIndex(src, -1) {
			block := src[loc[1]:min(len(src), loc[1]+800)]
			name := namePattern.FindStringSubmatchIndex(block)
			if name == nil {
				t.Fatalf("cannot read the metric made at %q", block[:min(len(block), 200)])
			}
			fqName := "karpenter_" + block[name[2]:name[3]]
			// Options without a Subsystem name the metric karpenter_NAME.
			if sub := subsystemPattern.FindStringSubmatch(block[:name[0]]); sub != nil {
				subsystem := strings.Trim(sub[1], `"`)
				if !strings.HasPrefix(sub[1], `"`) {
					subsystem = constants[sub[1][strings.LastIndex(sub[1], ".")+1:]]
				}
				fqName = "karpenter_" + subsystem + "_" + block[name[2]:name[3]]
			}
			types[fqName] = strings.ToLower(src[loc[2]:loc[3]])
		}
	}
	return types
}

var descPattern = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

// TestKarpenterMetricsFixture reads every karpenter_* descriptor registered by Karpenter
// v1.15.0's packages and checks the fixture holds exactly them (-update rewrites it).
func TestKarpenterMetricsFixture(t *testing.T) {
	// The node metrics are made when their controller is, labelled by the well-known labels
	// (Karpenter's own here; the AWS provider adds its instance labels).
	nodemetrics.NewController(nil)
	ch := make(chan *prometheus.Desc, 1024)
	go func() {
		crmetrics.Registry.(prometheus.Collector).Describe(ch)
		close(ch)
	}()
	types := metricTypes(t)
	var got []metric
	for d := range ch {
		m := descPattern.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read descriptor %s", d)
		}
		if !strings.HasPrefix(m[1], "karpenter_") {
			continue
		}
		labels := []string{}
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		if types[m[1]] == "" {
			t.Errorf("%s: no type found in Karpenter's source", m[1])
		}
		got = append(got, metric{Name: m[1], Type: types[m[1]], Labels: labels})
	}
	slices.SortFunc(got, func(a, b metric) int { return strings.Compare(a.Name, b.Name) })
	raw, _ := json.MarshalIndent(got, "", "  ")
	raw = append(raw, '\n')
	if *update {
		if err := os.WriteFile(fixture, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(raw) {
		t.Errorf("%s differs from Karpenter's registry; run with -update and review:\n%s", fixture, fmt.Sprint(string(raw)))
	}
}
