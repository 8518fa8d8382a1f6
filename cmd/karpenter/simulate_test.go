package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateCompareWritesJSONAndReport: --compare honours --output json and --report, which
// it once ignored: the JSON holds the differences and both runs, and the page is written.
func TestSimulateCompareWritesJSONAndReport(t *testing.T) {
	page := filepath.Join(t.TempDir(), "compare.html")
	stdout, stderr, err := run(t, "", "simulate", "../../examples/getting-started.yaml", "--compare", "../../examples/compare/on-demand-only.yaml",
		"-o", "json", "--report", page)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var c struct {
		A, B        string
		Differences []struct{ Metric string }
		RunA, RunB  struct {
			Version     string
			NodeHistory []any `json:"nodeHistory"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatalf("not JSON: %v\n%.400s", err, stdout)
	}
	if c.A != "../../examples/getting-started.yaml" || c.B != "../../examples/compare/on-demand-only.yaml" || len(c.Differences) == 0 {
		t.Errorf("comparison %+v", c)
	}
	if c.RunA.Version != version || len(c.RunA.NodeHistory) == 0 || len(c.RunB.NodeHistory) == 0 {
		t.Errorf("runs: version %q, %d and %d nodes", c.RunA.Version, len(c.RunA.NodeHistory), len(c.RunB.NodeHistory))
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "<h2>Differences</h2>") || !strings.Contains(string(html), "A: ../../examples/getting-started.yaml") {
		t.Errorf("the page is not the comparison:\n%.400s", html)
	}
	// As text, the report's path is said at the end.
	stdout, stderr, err = run(t, "", "simulate", "../../examples/getting-started.yaml", "--compare", "../../examples/compare/on-demand-only.yaml", "--report", page)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "Comparing ../../examples/getting-started.yaml (A)") || !strings.Contains(stdout, "Report with charts: "+page) {
		t.Errorf("stdout:\n%s", stdout)
	}
}

// TestSimulateJSONCarriesTheVersion: the report says which karpenter produced it.
func TestSimulateJSONCarriesTheVersion(t *testing.T) {
	stdout, stderr, err := run(t, "", "simulate", "../../examples/getting-started.yaml", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.HasPrefix(stdout, "{\n  \"version\": \""+version+"\",") {
		t.Errorf("stdout:\n%.200s", stdout)
	}
}
