package disruption

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// fragmented builds a fleet Karpenter's consolidation cannot improve: n on-demand c.xlarge
// nodes each holding two pods of 40% of its CPU. No node's pods fit in the others' holes, a
// c.large holds one such pod only, and one new node for several of them costs as much as
// they do (the catalog's prices grow with size); five of them fit on a c.2xlarge, though.
func fragmented(t *testing.T, n int, overrides ...func(*karpv1.NodePool)) (*cluster, *karpv1.NodePool) {
	t.Helper()
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, append([]func(*karpv1.NodePool){everyBudget("100%"), func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
		}
	}}, overrides...)...)
	c := newCluster(catalog(), np)
	c.in.Options.Repack = true
	xl := findType(c.types, "c.xlarge")
	cpu := scheduling.ResourcesOf(xl.Allocatable()).MilliCPU * 2 / 5
	for i := range n {
		c.add(stateNode(np, fmt.Sprintf("n%02d", i), xl, karpv1.CapacityTypeOnDemand, "test-zone-1",
			pod(fmt.Sprintf("%dm", cpu), "1Gi"), pod(fmt.Sprintf("%dm", cpu), "1Gi")))
	}
	return c, np
}

// repackDecide decides with the fleet's packing measured, as the controller does.
func repackDecide(c *cluster) *Decision {
	in := c.in
	in.Packing = PackingOf(in)
	return Decide(in)
}

// checkRepack checks a re-pack command against its rules.
func checkRepack(t *testing.T, cmd *Command) {
	t.Helper()
	if cmd.Method != MethodRepack || cmd.Reason != karpv1.DisruptionReasonUnderutilized {
		t.Fatalf("%s by %s for %s, want re-pack consolidation for Underutilized", cmd.Message(), cmd.Method, cmd.Reason)
	}
	if len(cmd.Replacements) > len(cmd.Candidates) {
		t.Errorf("%s: more new nodes than it removes", cmd.Message())
	}
	if cmd.Savings < RepackMinSavingsShare*cmd.Price() {
		t.Errorf("%s saves $%.3f/h of $%.3f/h, want at least %.0f%%", cmd.Message(), cmd.Savings, cmd.Price(), 100*RepackMinSavingsShare)
	}
	own := map[string]bool{}
	for _, cand := range cmd.Candidates {
		own[cand.InstanceType+"/"+cand.CapacityType] = true
	}
	for _, r := range cmd.Replacements {
		for _, it := range r.Claim.InstanceTypes {
			if o, _ := it.CheapestOffering(r.Claim.Requirements); own[it.Name+"/"+o.CapacityType] {
				t.Errorf("%s may launch %s %s, a candidate's own type", cmd.Message(), it.Name, o.CapacityType)
			}
		}
	}
}

// TestRepackMovesTheFleetTowardsTheBound: on a fleet Karpenter's consolidation leaves alone,
// re-pack consolidation replaces nodes by fewer, cheaper ones, each step saving at least
// RepackMinSavingsShare, until the fleet is within RepackThreshold of the bound; then it
// stops, and its own result gives it nothing more to do.
func TestRepackMovesTheFleetTowardsTheBound(t *testing.T) {
	c, _ := fragmented(t, 10)
	if d := Decide(c.in); d.Command != nil {
		t.Fatalf("Karpenter's consolidation acts on the fragmented fleet: %s", d.Command.Message())
	}
	before := PackingOf(c.in)
	if before.Ratio() <= RepackThreshold {
		t.Fatalf("the fragmented fleet is %.3f× the bound: not fragmented", before.Ratio())
	}
	steps := 0
	for pass := 0; pass < 20; pass++ {
		d := repackDecide(c)
		if d.Command == nil {
			break
		}
		cost := c.cost()
		if d.Command.Method == MethodRepack {
			checkRepack(t, d.Command)
			steps++
		}
		t.Logf("%.3f× bound: %s %s", PackingOf(c.in).Ratio(), d.Command.Method, d.Command.Message())
		c.in.Now = c.in.Now.Add(10 * 60e9) // past the replacements' consolidateAfter
		c.apply(d.Command)
		if c.cost() >= cost {
			t.Fatalf("%s: $%.3f/h → $%.3f/h", d.Command.Message(), cost, c.cost())
		}
	}
	after := PackingOf(c.in)
	t.Logf("%d re-pack steps: $%.3f/h (%.3f× the bound $%.3f/h) → $%.3f/h (%.3f×, re-packed from scratch $%.3f/h)",
		steps, before.Current, before.Ratio(), before.Bound, after.Current, after.Ratio(), after.Repacked)
	if steps == 0 {
		t.Fatal("re-pack consolidation did nothing")
	}
	if after.Ratio() > RepackThreshold {
		t.Errorf("the fleet ends at %.3f× the bound, want within %.2f×", after.Ratio(), RepackThreshold)
	}
	c.in.Now = c.in.Now.Add(10 * 60e9)
	if d := repackDecide(c); d.Command != nil {
		t.Errorf("a command on the re-packed fleet: %s", d.Command.Message())
	}
}

// TestRepackLeavesAloneWhatItMayNotTouch: re-pack consolidation needs the packing measured,
// is off without Options.Repack (the RepackConsolidation gate), does nothing on a WhenEmpty NodePool or with an Underutilized
// budget of 0, stays within a budget, and never takes a node protected by do-not-disrupt (on
// the node or a pod) or a PodDisruptionBudget.
func TestRepackLeavesAloneWhatItMayNotTouch(t *testing.T) {
	c, _ := fragmented(t, 10)
	if d := Decide(c.in); d.Command != nil {
		t.Errorf("a command without the packing measured: %s", d.Command.Message())
	}
	c.in.Options.Repack = false
	if d := repackDecide(c); d.Command != nil {
		t.Errorf("a command with re-pack disabled: %s", d.Command.Message())
	}

	c, _ = fragmented(t, 10, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
	})
	if d := repackDecide(c); d.Command != nil {
		t.Errorf("a command on a WhenEmpty NodePool: %s", d.Command.Message())
	}
	c, _ = fragmented(t, 10, everyBudget("0", karpv1.DisruptionReasonUnderutilized))
	if d := repackDecide(c); d.Command != nil {
		t.Errorf("a command with an Underutilized budget of 0: %s", d.Command.Message())
	}
	c, _ = fragmented(t, 10, everyBudget("3"))
	if d := repackDecide(c); d.Command == nil || len(d.Command.Candidates) > 3 {
		t.Errorf("with a budget of 3: %+v", d.Command)
	} else {
		checkRepack(t, d.Command)
	}

	c, _ = fragmented(t, 10)
	protected := map[string]bool{"n00": true, "n01": true, "n02": true, "n03": true, "n04": true}
	c.in.Nodes[0].Node.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	c.in.Nodes[1].NodeClaim.Annotations[karpv1.DoNotDisruptAnnotationKey] = "true"
	c.in.Nodes[2].Pods[0].Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	for _, sn := range c.in.Nodes[3:5] {
		sn.Pods[1].Labels = map[string]string{"app": "guarded"}
	}
	c.in.PDBs = []*policyv1.PodDisruptionBudget{{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}}
	d := repackDecide(c)
	if d.Command == nil {
		t.Fatal("no command on the five unprotected nodes")
	}
	checkRepack(t, d.Command)
	for _, cand := range d.Command.Candidates {
		if protected[cand.Name()] {
			t.Errorf("%s takes protected node %s", d.Command.Message(), cand.Name())
		}
	}
}

// TestRepackNotUnderTheThreshold: a fleet within RepackThreshold of the bound is left alone,
// though single nodes of it are not full.
func TestRepackNotUnderTheThreshold(t *testing.T) {
	c, np := fragmented(t, 0)
	xl2 := findType(c.types, "c.2xlarge")
	cpu := scheduling.ResourcesOf(findType(c.types, "c.xlarge").Allocatable()).MilliCPU * 2 / 5
	for i := range 4 {
		var pods []*corev1.Pod
		for range 5 {
			pods = append(pods, pod(fmt.Sprintf("%dm", cpu), "1Gi"))
		}
		c.add(stateNode(np, fmt.Sprintf("full%d", i), xl2, karpv1.CapacityTypeOnDemand, "test-zone-1", pods...))
	}
	p := PackingOf(c.in)
	if p.Ratio() > RepackThreshold || p.Ratio() < 1 {
		t.Fatalf("the packed fleet is %.3f× the bound, want within [1, %.2f]", p.Ratio(), RepackThreshold)
	}
	d := repackDecide(c)
	if d.Command != nil {
		t.Errorf("a command on a packed fleet: %s", d.Command.Message())
	}
	if !d.evaluated(MethodRepack) {
		t.Error("re-pack consolidation was not evaluated")
	}
}

// TestRepackProperties: on random fragmented fleets (random budgets, policies, protected pods
// and nodes, nodes being deleted, well-packed neighbours), a re-pack command keeps every rule
// of consolidation (checkCommand) and of re-pack (checkRepack); and carried out pass after
// pass, the fleet only gets cheaper and settles: no command once it has.
func TestRepackProperties(t *testing.T) {
	budgets := []string{"0", "1", "3", "10%", "50%", "100%", "100%"}
	policies := []karpv1.ConsolidationPolicy{karpv1.ConsolidationPolicyWhenEmpty, karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, karpv1.ConsolidationPolicyBalanced}
	repacks := 0
	for seed := int64(0); seed < 100; seed++ {
		r := rand.New(rand.NewSource(seed))
		c, np := fragmented(t, 4+r.Intn(12), func(np *karpv1.NodePool) {
			np.Spec.Disruption.ConsolidationPolicy = policies[r.Intn(len(policies))]
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: budgets[r.Intn(len(budgets))]}}
		})
		xl := findType(c.types, "c.xlarge")
		for _, sn := range c.in.Nodes {
			switch r.Intn(12) {
			case 0:
				sn.Pods[0].Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
			case 1:
				sn.Pods[1].Labels = map[string]string{"app": "guarded"}
			case 2:
				sn.Node.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
			case 3:
				sn.MarkedForDeletion = true
			}
		}
		for i := range r.Intn(4) { // full neighbours
			c.add(stateNode(np, fmt.Sprintf("full-%d", i), xl, karpv1.CapacityTypeOnDemand, "test-zone-1", pod("3", "6Gi")))
		}
		c.in.PDBs = []*policyv1.PodDisruptionBudget{{
			ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
		}}
		settled := -1
		for pass := 0; pass < 40; pass++ {
			c.in.Now = c.in.Now.Add(10 * time.Minute)
			d := repackDecide(c)
			if d.Command == nil {
				if settled < 0 {
					settled = pass
				}
				continue
			}
			if settled >= 0 {
				t.Fatalf("seed %d: a command after the fleet settled at pass %d: %s %s", seed, settled, d.Command.Method, d.Command.Message())
			}
			checkCommand(t, seed, c, d.Command)
			if d.Command.Method == MethodRepack {
				checkRepack(t, d.Command)
				if np.Spec.Disruption.ConsolidationPolicy == karpv1.ConsolidationPolicyWhenEmpty {
					t.Errorf("seed %d: re-pack on a WhenEmpty NodePool: %s", seed, d.Command.Message())
				}
				repacks++
			}
			cost := c.cost()
			c.apply(d.Command)
			if c.cost() >= cost {
				t.Errorf("seed %d: %s: $%.3f/h → $%.3f/h", seed, d.Command.Message(), cost, c.cost())
			}
		}
		if settled < 0 {
			t.Errorf("seed %d: still disrupting after 40 passes", seed)
		}
	}
	if repacks < 15 {
		t.Errorf("%d re-pack commands on 100 fragmented fleets: the test shows little", repacks)
	}
	t.Logf("%d re-pack commands", repacks)
}

// TestRepackSpotToOnDemand: without SpotToSpotConsolidation Karpenter's consolidation leaves a
// nearly empty spot node alone (its replacement could be spot); re-pack replaces it by a
// cheaper on-demand node.
func TestRepackSpotToOnDemand(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	c.in.Options.Repack = true
	c.add(stateNode(np, "big", findType(c.types, "c.4xlarge"), karpv1.CapacityTypeSpot, "test-zone-1", pod("1", "1Gi")))
	if d := Decide(c.in); d.Command != nil {
		t.Fatalf("Karpenter's consolidation replaces the spot node without the gate: %s", d.Command.Message())
	}
	d := repackDecide(c)
	if d.Command == nil || len(d.Command.Replacements) != 1 {
		t.Fatalf("command %+v, want one replacement", d.Command)
	}
	checkRepack(t, d.Command)
	r := d.Command.Replacements[0]
	if cts, ok := r.Claim.Requirements.Get(karpv1.CapacityTypeLabelKey); !ok || cts.Has(karpv1.CapacityTypeSpot) || !cts.Has(karpv1.CapacityTypeOnDemand) {
		t.Errorf("%s: the replacement may launch as %v, want on-demand only", d.Command.Message(), cts)
	}
	if r.CapacityType() != karpv1.CapacityTypeOnDemand {
		t.Errorf("%s: replacement %s", d.Command.Message(), r.CapacityType())
	}
}
