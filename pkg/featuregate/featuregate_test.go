package featuregate

import (
	"slices"
	"strings"
	"testing"
)

// TestDefaults: unset gates take Karpenter v1.15's defaults (ReservedCapacity on, the Alpha
// gates off), and this project's own RepackConsolidation is off.
func TestDefaults(t *testing.T) {
	gates, err := Karpenter.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	want := "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false," +
		"CapacityBuffer=false,TerminateFirstDrift=false,TerminateFirstRepair=false,PodDeletionCostManagement=false,RepackConsolidation=false"
	if got := gates.String(); got != want {
		t.Errorf("defaults %s, want %s", got, want)
	}
	// The AWS provider v1.15.2's --aws-feature-gates default.
	if want := "NodeClassCEL=false,DRANVIDIAGPU=false,DRAEFA=false,RebootForRepair=false"; AWS.Defaults().String() != want {
		t.Errorf("AWS defaults %s, want %s", AWS.Defaults(), want)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		enabled []string // gates that must be on
		err     []string // substrings of the error; none means no error
	}{
		{in: "SpotToSpotConsolidation=true", enabled: []string{SpotToSpotConsolidation, ReservedCapacity}},
		{in: "NodeRepair=true", enabled: []string{NodeRepair, ReservedCapacity}},
		{in: "NodeOverlay=true", enabled: []string{ReservedCapacity, NodeOverlay}},
		{in: "CapacityBuffer=true", enabled: []string{CapacityBuffer, ReservedCapacity}},
		{in: "RepackConsolidation=true", enabled: []string{RepackConsolidation, ReservedCapacity}},
		{in: " StaticCapacity = true , ReservedCapacity=false ,", enabled: []string{StaticCapacity}},
		{in: "SpotToSpotConsolidation=false,SpotToSpotConsolidation=true", enabled: []string{SpotToSpotConsolidation, ReservedCapacity}},
		{in: "NodeRepair=false,NodeOverlay=false,CapacityBuffer=false,TerminateFirstDrift=false,TerminateFirstRepair=false,PodDeletionCostManagement=false",
			enabled: []string{ReservedCapacity}},
		{in: "PodDeletionCostManagement=true", enabled: []string{ReservedCapacity, PodDeletionCostManagement}},
		{in: "TerminateFirstDrift=true", enabled: []string{ReservedCapacity, TerminateFirstDrift}},
		{in: "TerminateFirstRepair=true", enabled: []string{ReservedCapacity, TerminateFirstRepair}},
		// Names the table does not know set nothing, as in Karpenter (ParseFeatureGates reads
		// only the names it knows): see TestUnknownGates.
		{in: "SpotToSpot=true", enabled: []string{ReservedCapacity}},
		{in: "spotToSpotConsolidation=true,NodeRepair=true", enabled: []string{NodeRepair, ReservedCapacity}},
		{in: "SpotToSpotConsolidation", err: []string{`"SpotToSpotConsolidation": want Name=true or Name=false`}},
		{in: "SpotToSpotConsolidation=yes", err: []string{`"SpotToSpotConsolidation=yes"`}},
		// Every bad item is reported, not only the first.
		{in: "NodeRepair=maybe,Bogus", err: []string{`"NodeRepair=maybe"`, `"Bogus"`}},
	} {
		gates, err := Karpenter.Parse(tc.in)
		if len(tc.err) > 0 {
			if err == nil {
				t.Errorf("%q: parsed as %s, want an error", tc.in, gates)
				continue
			}
			for _, want := range tc.err {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q: error %q does not say %q", tc.in, err, want)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		for _, name := range Karpenter.Names() {
			want := false
			for _, on := range tc.enabled {
				want = want || on == name
			}
			if got := gates.Enabled(name); got != want {
				t.Errorf("%q: %s=%t, want %t", tc.in, name, got, want)
			}
		}
	}
}

func TestAWSGates(t *testing.T) {
	for _, setting := range []string{"NodeClassCEL=false", "NodeClassCEL=true"} {
		gates, err := AWS.Parse(setting)
		if err != nil || gates.Enabled(NodeClassCEL) != strings.HasSuffix(setting, "true") {
			t.Errorf("%s: %v, NodeClassCEL %v", setting, err, err == nil && gates.Enabled(NodeClassCEL))
		}
	}
	// What the AWS provider v1.15.2's chart renders by default (settings.awsFeatureGates).
	gates, err := AWS.Parse("NodeClassCEL=false,DRANVIDIAGPU=false,DRAEFA=false,RebootForRepair=false")
	if err != nil || len(gates.Unknown()) > 0 {
		t.Errorf("v1.15.2's default AWS_FEATURE_GATES: %v, unknown %v", err, gates.Unknown())
	}
	// No gate of v1.15.2 stops the controller.
	for _, name := range []string{NodeClassCEL, DRANVIDIAGPU, DRAEFA, RebootForRepair} {
		if gates, err := AWS.Parse(name + "=true"); err != nil || !gates.Enabled(name) {
			t.Errorf("%s=true: %v, want it accepted and on", name, err)
		}
	}
	gates, err = AWS.Parse("SpotToSpotConsolidation=true")
	if err != nil || !slices.Equal(gates.Unknown(), []string{"SpotToSpotConsolidation"}) {
		t.Errorf("a Karpenter gate in AWS_FEATURE_GATES: %v, unknown %v; want it accepted as unknown there", err, gates.Unknown())
	}
}

// TestUnknownGates: a name the table does not know is accepted, sets nothing and is listed by
// Unknown (in name order) for the caller to warn about; Check still refuses it for callers
// that must.
func TestUnknownGates(t *testing.T) {
	gates, err := Karpenter.Parse("Zeta=true,SpotToSpotConsolidation=true,Alpha=false")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gates.Unknown(), []string{"Alpha", "Zeta"}) || !gates.Enabled(SpotToSpotConsolidation) {
		t.Errorf("unknown %v, gates %s", gates.Unknown(), gates)
	}
	if err := Karpenter.Check("Zeta", true); err == nil || !strings.Contains(err.Error(), `unknown feature gate "Zeta"`) {
		t.Errorf("Check of an unknown name: %v", err)
	}
}

// TestFromMap checks gates given as a mapping (the simulator's workload): the same checks as
// Parse, each error naming its gate, in name order.
func TestFromMap(t *testing.T) {
	gates, err := Karpenter.FromMap(map[string]bool{StaticCapacity: true, ReservedCapacity: false})
	if err != nil {
		t.Fatal(err)
	}
	if !gates.Enabled(StaticCapacity) || gates.Enabled(ReservedCapacity) || gates.Enabled(SpotToSpotConsolidation) {
		t.Errorf("gates %s, want StaticCapacity on and the rest off", gates)
	}
	// A table with gates whose feature is not built (none of Karpenter's now).
	table := Table{Setting: "--test-gates (TEST_GATES)", Gates: []Gate{
		{Name: "Zulu", Stage: "Alpha", Support: NotBuilt, Here: "zulu is not built yet"},
		{Name: "Bravo", Stage: "Alpha", Support: NotBuilt, Here: "bravo is not built yet"},
		{Name: "Built", Stage: "Alpha", Support: Switches, Here: "works"},
	}}
	_, err = table.FromMap(map[string]bool{"Zulu": true, "Bravo": true, "Built": true, "Aaa": true})
	if err == nil {
		t.Fatal("Zulu=true and Bravo=true accepted")
	}
	msg := err.Error()
	if i, j := strings.Index(msg, "Bravo=true"), strings.Index(msg, "Zulu=true"); i < 0 || j < 0 || i > j || strings.Contains(msg, "Aaa") || strings.Contains(msg, "Built") ||
		!strings.Contains(msg, "not built yet") {
		t.Errorf("error %q: want Bravo, then Zulu (by name), and neither the unknown Aaa nor the built gate", msg)
	}
	for _, tb := range []*Table{&Karpenter, &AWS} {
		for _, g := range tb.Gates {
			if g.Support == NotBuilt {
				t.Errorf("%s: %s is not built: v1.15's gates must each work or be refused per object, never stop the controller", tb.Setting, g.Name)
			}
		}
	}
}

// TestTable: every gate has Karpenter's stage and an explanation, and no name repeats.
func TestTable(t *testing.T) {
	for _, table := range []Table{Karpenter, AWS} {
		seen := map[string]bool{}
		for _, g := range table.Gates {
			if seen[g.Name] {
				t.Errorf("%s: %s listed twice", table.Setting, g.Name)
			}
			seen[g.Name] = true
			if g.Stage != "Alpha" && g.Stage != "Beta" {
				t.Errorf("%s: stage %q", g.Name, g.Stage)
			}
			if g.Here == "" {
				t.Errorf("%s: no explanation of what it does here", g.Name)
			}
			// A gate on by default must not be refused when on: the controller must start
			// with the defaults.
			if g.Default && g.Support == NotBuilt {
				t.Errorf("%s is on by default but refused when on", g.Name)
			}
		}
	}
}

func TestEnabledPanicsOnUnknownName(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Enabled of an unknown name did not panic")
		}
	}()
	Karpenter.Defaults().Enabled("Bogus")
}
