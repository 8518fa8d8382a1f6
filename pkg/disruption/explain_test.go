package disruption

import (
	"strings"
	"testing"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestExplanations: every node a decision leaves is explained in Karpenter's words, with what
// would let disruption act on it: a spot node full of its pod (spot-to-spot consolidation off),
// a node whose pod says do-not-disrupt, a node of a NodePool whose budget allows nothing; with an
// empty node beside them, the decision deletes it next and has not looked at the others yet.
func TestExplanations(t *testing.T) {
	for _, withEmpty := range []bool{false, true} {
		explain(t, withEmpty)
	}
}

func explain(t *testing.T, withEmpty bool) {
	t.Helper()
	spot := builders.NodePool(builders.NodePoolOptions{Name: "spot", Ready: true}, everyBudget("100%"))
	frozen := builders.NodePool(builders.NodePoolOptions{Name: "frozen", Ready: true}, everyBudget("0"))
	c := newCluster(catalog(), spot, frozen)
	large := findType(c.types, "c.large")
	c.add(stateNode(spot, "full", large, karpv1.CapacityTypeSpot, "test-zone-1", pod("1500m", "2Gi")))
	protected := pod("1500m", "2Gi")
	protected.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	c.add(stateNode(spot, "protected", large, karpv1.CapacityTypeSpot, "test-zone-1", protected))
	if withEmpty {
		c.add(stateNode(spot, "empty", large, karpv1.CapacityTypeSpot, "test-zone-1"))
	}
	c.add(stateNode(frozen, "held", large, karpv1.CapacityTypeOnDemand, "test-zone-1", pod("1", "1Gi")))

	d := Decide(c.in)
	got := map[string]NodeExplanation{}
	for _, e := range d.Explanations(c.in) {
		got[e.Node] = e
	}
	want := map[string]struct{ reason, change string }{
		"full":      {spotToSpotDisabled, "SpotToSpotConsolidation feature gate"},
		"protected": {`Pod has "karpenter.sh/do-not-disrupt" annotation`, `without its "karpenter.sh/do-not-disrupt" annotation`},
		"held":      {`NodePool "frozen"'s disruption budgets allow no disruption now`, "spec.disruption.budgets"},
	}
	if withEmpty {
		want["empty"] = struct{ reason, change string }{"the next pass disrupts it (emptiness", ""}
		want["full"] = struct{ reason, change string }{"not looked at yet", ""}
	}
	if len(got) != len(want) {
		t.Errorf("explained %d nodes, want %d: %+v", len(got), len(want), got)
	}
	for node, w := range want {
		e, ok := got[node]
		switch {
		case !ok:
			t.Errorf("with an empty node %t: %s not explained", withEmpty, node)
		case !strings.HasPrefix(e.Reason, w.reason):
			t.Errorf("with an empty node %t: %s: reason %q, want it to start with %q", withEmpty, node, e.Reason, w.reason)
		case w.change == "" && e.Change != "", !strings.Contains(e.Change, w.change):
			t.Errorf("%s: change %q, want one with %q", node, e.Change, w.change)
		case e.Next != (node == "empty"):
			t.Errorf("%s: next %t", node, e.Next)
		}
	}
}

// TestExplanationsOfPassedOver: a node consolidation never looks at (a WhenEmpty NodePool's,
// with pods) is explained by that, even when a pod of it says do-not-disrupt too, with the
// NodePool change that would let consolidation act.
func TestExplanationsOfPassedOver(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "empty-only", Ready: true}, everyBudget("100%"), func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
	})
	c := newCluster(catalog(), np)
	protected := pod("500m", "1Gi")
	protected.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	c.add(stateNode(np, "busy", findType(c.types, "c.large"), karpv1.CapacityTypeOnDemand, "test-zone-1", protected))
	got := Decide(c.in).Explanations(c.in)
	if len(got) != 1 || got[0].Reason != `NodePool "empty-only" has consolidation policy WhenEmpty, but node is not empty` ||
		got[0].Change != `consolidationPolicy: WhenEmptyOrUnderutilized in NodePool "empty-only"` {
		t.Errorf("explanations %+v, want the WhenEmpty policy and its change", got)
	}
}
