package simulate

import (
	"context"
	"strings"
	"testing"
)

// TestWebExplainsItsEndState: examples/web.yaml ends its day on spot nodes that consolidation
// would replace with cheaper spot nodes but may not (SpotToSpotConsolidation off): the report says
// so of each node, in its text and JSON, with the gate that would change it; and the change it
// names does change it: with the gate on, the day ends cheaper, without the big nodes.
func TestWebExplainsItsEndState(t *testing.T) {
	rep := sharedReport(t, "../../examples/web.yaml")
	if len(rep.Fleet) == 0 {
		t.Fatal("no node at the end")
	}
	big := 0
	for _, n := range rep.Fleet {
		if n.StaysBecause == "" {
			t.Errorf("%s (%s): no reason it stays", n.Name, n.InstanceType)
		}
		if n.InstanceType != "m6a.48xlarge" {
			continue
		}
		big++
		if !strings.HasPrefix(n.StaysBecause, "SpotToSpotConsolidation is disabled") || !strings.Contains(n.WouldChange, "featureGates: {SpotToSpotConsolidation: true}") {
			t.Errorf("%s (m6a.48xlarge spot) stays because %q, would change with %q; want spot-to-spot consolidation and its gate", n.Name, n.StaysBecause, n.WouldChange)
		}
	}
	if big == 0 {
		t.Fatalf("no m6a.48xlarge at the end (the example's comment says two): %+v", rep.Fleet)
	}
	var text strings.Builder
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Why the 5 nodes at the end stay", "SpotToSpotConsolidation is disabled", "would change it: the SpotToSpotConsolidation feature gate", "why consolidation leaves them is below"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
	var js strings.Builder
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"staysBecause": "SpotToSpotConsolidation is disabled`) {
		t.Error("the JSON report lacks the fleet's staysBecause")
	}

	w, err := LoadWorkload("../../examples/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w.FeatureGates = map[string]bool{"SpotToSpotConsolidation": true}
	with, err := Run(context.Background(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range with.Fleet {
		if n.InstanceType == "m6a.48xlarge" {
			t.Errorf("with SpotToSpotConsolidation on, %s (m6a.48xlarge) still stays: %s", n.Name, n.StaysBecause)
		}
	}
	if with.Cost.FinalPerHour >= rep.Cost.FinalPerHour {
		t.Errorf("with SpotToSpotConsolidation on the day ends at $%.4f/hour, without at $%.4f/hour: the change the report names changes nothing", with.Cost.FinalPerHour, rep.Cost.FinalPerHour)
	}
	t.Logf("the day ends at $%.4f/hour, with SpotToSpotConsolidation on at $%.4f/hour", rep.Cost.FinalPerHour, with.Cost.FinalPerHour)
}

// TestCompareSaysWhyRunsEndApart: examples/web.yaml against its NodePool restricted to
// on-demand ends $/hour apart for one reason, which the comparison names in one line; each
// difference carries a stable field name.
func TestCompareSaysWhyRunsEndApart(t *testing.T) {
	c := Compare("web.yaml", "on-demand-only.yaml", sharedReport(t, "../../examples/web.yaml"), webOnDemand(t))
	want := `B ends $2.88/hour cheaper than A: A keeps $4.69/hour of nodes at the end because "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node", B none.`
	if c.Why != want {
		t.Errorf("why:\n got %q\nwant %q", c.Why, want)
	}
	fields := map[string]bool{}
	for _, d := range append(c.Differences, c.Unchanged...) {
		if d.Field == "" || fields[d.Field] {
			t.Errorf("difference %q: field %q empty or repeated", d.Metric, d.Field)
		}
		fields[d.Field] = true
	}
	if !fields["cost.finalPerHour"] || !fields["disruptions.Underutilized"] {
		t.Errorf("fields %v lack cost.finalPerHour or disruptions.Underutilized", fields)
	}
	var text strings.Builder
	if err := WriteText(&text, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), want) {
		t.Errorf("the text lacks the reason:\n%s", text.String())
	}
}

// webOnDemand is the report of examples/web.yaml with its NodePool restricted to on-demand
// (examples/compare/on-demand-only.yaml), run once for the tests that read it (sharedReport).
func webOnDemand(t *testing.T) *Report {
	t.Helper()
	const key = "../../examples/web.yaml --compare ../../examples/compare/on-demand-only.yaml"
	exampleReports.Lock()
	defer exampleReports.Unlock()
	if rep, ok := exampleReports.reports[key]; ok {
		return rep
	}
	w, err := LoadWorkload("../../examples/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	other, err := w.WithManifests("../../examples/compare/on-demand-only.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	exampleReports.reports[key] = rep
	return rep
}
