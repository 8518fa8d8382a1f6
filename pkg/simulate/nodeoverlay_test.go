package simulate

import (
	"context"
	"math"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
)

// runOverlayExample runs examples/node-overlay.yaml, with its NodeOverlays and the gate or,
// when withOverlays is false, without both.
func runOverlayExample(t *testing.T, withOverlays bool) *Report {
	t.Helper()
	w, err := LoadWorkload("../../examples/node-overlay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !withOverlays {
		var objs []client.Object
		for _, o := range w.Objects {
			if _, ok := o.(*v1alpha1.NodeOverlay); !ok {
				objs = append(objs, o)
			}
		}
		w.Objects = objs
		w.FeatureGates = map[string]bool{"NodeOverlay": false}
	}
	rep, err := Run(context.Background(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestNodeOverlayExample: by list price the NodePool's fleet is c7i and the pods asking for
// the device plugin's resource cannot be placed; with the example's overlays, the "-20%"
// savings plan makes m7i the cheaper family, the fleet is m7i billed at 80% of its list price,
// and the resource the capacity overlay adds lets those pods run.
func TestNodeOverlayExample(t *testing.T) {
	list := map[string]float64{"c7i.xlarge": 0.1785, "c7i.2xlarge": 0.357, "m7i.xlarge": 0.2016, "m7i.2xlarge": 0.4032}
	for _, tc := range []struct {
		overlays    bool
		family      string
		discount    float64
		unscheduled int
	}{
		{overlays: false, family: "c7i.", discount: 1, unscheduled: 4},
		{overlays: true, family: "m7i.", discount: 0.8, unscheduled: 0},
	} {
		rep := runOverlayExample(t, tc.overlays)
		if len(rep.Nodes.ByType) == 0 {
			t.Fatalf("overlays %v: no nodes launched", tc.overlays)
		}
		for _, tcount := range rep.Nodes.ByType {
			if !strings.HasPrefix(tcount.InstanceType, tc.family) {
				t.Errorf("overlays %v: launched %d %s, want only %s*", tc.overlays, tcount.Count, tcount.InstanceType, tc.family)
			}
			want := list[tcount.InstanceType] * tc.discount
			if math.Abs(tcount.PricePerHour-want) > 1e-4 {
				t.Errorf("overlays %v: %s billed $%.4f/h, want $%.4f", tc.overlays, tcount.InstanceType, tcount.PricePerHour, want)
			}
		}
		if rep.Pods.NeverScheduled != tc.unscheduled {
			t.Errorf("overlays %v: %d pods never scheduled, want %d: %+v", tc.overlays, rep.Pods.NeverScheduled, tc.unscheduled, rep.Pods.Unscheduled)
		}
		t.Logf("overlays %v: $%.4f/h at the end, %+v", tc.overlays, rep.Cost.FinalPerHour, rep.Nodes.ByType)
	}
}

// TestNodeOverlayNeedsGate: a NodeOverlay with the gate off is refused with a message saying
// how to turn it on, rather than left unread as Karpenter would.
func TestNodeOverlayNeedsGate(t *testing.T) {
	_, err := ParseWorkload("gate-off.yaml", []byte(`
name: gate off
duration: 1m
manifests: |
  apiVersion: karpenter.sh/v1alpha1
  kind: NodeOverlay
  metadata: {name: discount}
  spec:
    requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
    priceAdjustment: "-10%"
`))
	if err == nil || !strings.Contains(err.Error(), "NodeOverlay discount needs the NodeOverlay feature gate") || !strings.Contains(err.Error(), "featureGates: {NodeOverlay: true}") {
		t.Fatalf("got %v, want the NodeOverlay gate refusal", err)
	}
}
