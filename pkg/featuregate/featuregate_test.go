package featuregate

import (
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
	if got := AWS.Defaults().String(); got != "NodeClassCEL=false" {
		t.Errorf("AWS defaults %s, want NodeClassCEL=false", got)
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
		// Off is what runs here, so the gates of features not built may be set off.
		{in: "NodeRepair=false,NodeOverlay=false,CapacityBuffer=false,TerminateFirstDrift=false,TerminateFirstRepair=false,PodDeletionCostManagement=false",
			enabled: []string{ReservedCapacity}},
		{in: "PodDeletionCostManagement=true", err: []string{"--feature-gates (FEATURE_GATES)", "PodDeletionCostManagement=true", "not built yet", "set it to false"}},
		{in: "TerminateFirstDrift=true", err: []string{"TerminateFirstDrift=true", "not built yet"}},
		{in: "TerminateFirstRepair=true", err: []string{"TerminateFirstRepair=true", "not built yet"}},
		{in: "SpotToSpot=true", err: []string{`unknown feature gate "SpotToSpot"`, "the known gates are NodeRepair, ReservedCapacity, SpotToSpotConsolidation, NodeOverlay, StaticCapacity, CapacityBuffer,"}},
		{in: "spotToSpotConsolidation=true", err: []string{`unknown feature gate "spotToSpotConsolidation"`}},
		{in: "SpotToSpotConsolidation", err: []string{`"SpotToSpotConsolidation": want Name=true or Name=false`}},
		{in: "SpotToSpotConsolidation=yes", err: []string{`"SpotToSpotConsolidation=yes"`}},
		// Every bad item is reported, not only the first.
		{in: "TerminateFirstDrift=true,Bogus=false", err: []string{"TerminateFirstDrift=true", `"Bogus"`}},
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
	if _, err := AWS.Parse("NodeClassCEL=false"); err != nil {
		t.Errorf("NodeClassCEL=false: %v", err)
	}
	_, err := AWS.Parse("NodeClassCEL=true")
	if err == nil || !strings.Contains(err.Error(), "--aws-feature-gates (AWS_FEATURE_GATES)") || !strings.Contains(err.Error(), "NodeClassCEL=true") {
		t.Errorf("NodeClassCEL=true: error %v, want one naming the setting and the gate", err)
	}
	if _, err := AWS.Parse("SpotToSpotConsolidation=true"); err == nil || !strings.Contains(err.Error(), "the known gates are NodeClassCEL") {
		t.Errorf("a Karpenter gate in AWS_FEATURE_GATES: error %v, want it unknown there", err)
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
	_, err = Karpenter.FromMap(map[string]bool{TerminateFirstDrift: true, "Aaa": true})
	if err == nil {
		t.Fatal("TerminateFirstDrift=true and an unknown gate accepted")
	}
	msg := err.Error()
	if i, j := strings.Index(msg, `"Aaa"`), strings.Index(msg, "TerminateFirstDrift=true"); i < 0 || j < 0 || i > j {
		t.Errorf("error %q: want the unknown gate Aaa, then TerminateFirstDrift", msg)
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
