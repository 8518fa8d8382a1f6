package disruption

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

func everyBudget(nodes string, reasons ...karpv1.DisruptionReason) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: nodes, Reasons: reasons}}
	}
}

func TestEmptyNodeDeleted(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	c.add(stateNode(np, "busy", m, "on-demand", "test-zone-1", pod("3", "8Gi")))
	c.add(stateNode(np, "empty", m, "on-demand", "test-zone-1"))
	d := Decide(c.in)
	if d.Command == nil || d.Command.Method != MethodEmptiness || len(d.Command.Candidates) != 1 || d.Command.Candidates[0].Name() != "empty" {
		t.Fatalf("command = %+v, want emptiness of node empty", d.Command)
	}
	if got := d.Command.Message(); got != "deleting empty node" {
		t.Errorf("message = %q", got)
	}
}

func TestConsolidateAfterNeverKeepsEmptyNode(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	})
	c := newCluster(catalog(), np)
	c.add(stateNode(np, "empty", findType(c.types, "m.xlarge"), "on-demand", "test-zone-1"))
	d := Decide(c.in)
	if d.Command != nil {
		t.Fatalf("command = %s, want none", d.Command.Message())
	}
	if len(d.Claims) != 1 || d.Claims[0].Consolidatable || d.Claims[0].ConsolidatableReason != ReasonConsolidateAfterNever {
		t.Errorf("claims = %+v", d.Claims)
	}
}

func TestConsolidateAfterWaitsForPodEvents(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("30m")
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	})
	c := newCluster(catalog(), np)
	sn := c.add(stateNode(np, "empty", findType(c.types, "m.xlarge"), "on-demand", "test-zone-1"))
	sn.NodeClaim.Status.LastPodEventTime = metav1.NewTime(epoch.Add(-10 * time.Minute))
	if d := Decide(c.in); d.Command != nil {
		t.Fatalf("command before consolidateAfter: %s", d.Command.Message())
	}
	c.in.Now = epoch.Add(21 * time.Minute)
	if d := Decide(c.in); d.Command == nil || d.Command.Method != MethodEmptiness {
		t.Fatalf("no emptiness after consolidateAfter: %+v", d.Command)
	}
}

func TestUnderutilizedNodesConsolidatedOntoFewer(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.2xlarge")
	for _, name := range []string{"a", "b", "c", "d"} {
		c.add(stateNode(np, name, m, "on-demand", "test-zone-1", pod("1", "2Gi"), pod("1", "2Gi")))
	}
	d := Decide(c.in)
	if d.Command == nil || d.Command.Method != MethodMultiNode {
		t.Fatalf("command = %+v, want multi-node consolidation", d.Command)
	}
	if d.Command.Savings <= 0 {
		t.Errorf("savings = %f", d.Command.Savings)
	}
	before := c.cost()
	c.apply(d.Command)
	if after := c.cost(); after >= before || len(c.in.Nodes) >= 4 {
		t.Errorf("cost %.3f → %.3f with %d nodes", before, after, len(c.in.Nodes))
	}
}

func TestSingleNodeReplacedByCheaper(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	c.add(stateNode(np, "big", findType(c.types, "m.4xlarge"), "on-demand", "test-zone-1", pod("1", "2Gi")))
	d := Decide(c.in)
	if d.Command == nil || len(d.Command.Replacements) != 1 {
		t.Fatalf("command = %+v, want a replacement", d.Command)
	}
	r := d.Command.Replacements[0]
	if r.Price >= d.Command.Candidates[0].Price {
		t.Errorf("replacement $%.3f not cheaper than $%.3f", r.Price, d.Command.Candidates[0].Price)
	}
	t.Log(d.Command.Message())
}

// wideCatalog is 24 general-purpose types of 16 cpu, priced apart: enough cheaper types for
// a spot-to-spot consolidation of the dearest.
func wideCatalog() []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for i := range 24 {
		out = append(out, builders.InstanceType(builders.InstanceTypeOptions{
			Name: fmt.Sprintf("g%02d.4xlarge", i), CPU: 16, MemoryGiB: 64, PricePerHour: 0.5 + 0.05*float64(i),
		}))
	}
	return out
}

// Spot-to-spot, as Karpenter: a spot node whose replacement may be spot is not replaced without
// the gate; with it, one node is replaced only when 15 cheaper types remain, and the launch
// offers just the 15 cheapest, spot only.
func TestSpotToSpot(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	c.add(stateNode(np, "spot", findType(c.types, "m.4xlarge"), "spot", "test-zone-1", pod("1", "2Gi")))
	if d := Decide(c.in); d.Command != nil {
		t.Errorf("spot node replaced without the gate: %s", d.Command.Message())
	}
	c.in.Options.SpotToSpotConsolidation = true
	if d := Decide(c.in); d.Command != nil {
		t.Errorf("spot node replaced with fewer than 15 cheaper types: %s", d.Command.Message())
	}

	c = newCluster(wideCatalog(), np)
	c.add(stateNode(np, "spot", findType(c.types, "g23.4xlarge"), "spot", "test-zone-1", pod("1", "2Gi")))
	if d := Decide(c.in); d.Command != nil {
		t.Errorf("spot node replaced without the gate: %s", d.Command.Message())
	}
	c.in.Options.SpotToSpotConsolidation = true
	d := Decide(c.in)
	if d.Command == nil || len(d.Command.Replacements) != 1 {
		t.Fatalf("command %v, want a spot-to-spot replacement", d.Command)
	}
	r := d.Command.Replacements[0]
	if cts, _ := r.Claim.Requirements.Get(karpv1.CapacityTypeLabelKey); cts.Has(karpv1.CapacityTypeOnDemand) || !cts.Has(karpv1.CapacityTypeSpot) {
		t.Errorf("replacement capacity types %s, want spot only", cts)
	}
	if n := len(r.Claim.InstanceTypes); n != MinInstanceTypesForSpotToSpot {
		t.Errorf("replacement offers %d types, want the %d cheapest", n, MinInstanceTypesForSpotToSpot)
	}
	if r.Claim.InstanceTypes[0].Name != "g00.4xlarge" {
		t.Errorf("cheapest offered %s, want g00.4xlarge", r.Claim.InstanceTypes[0].Name)
	}
}

// An on-demand node replaced by a claim that may be spot or on-demand is priced as spot, so
// the claim is made spot only: a launch that fell back to on-demand would cost more.
func TestOnDemandReplacementIsSpotOnly(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	c.add(stateNode(np, "big", findType(c.types, "m.4xlarge"), "on-demand", "test-zone-1", pod("1", "2Gi")))
	d := Decide(c.in)
	if d.Command == nil || len(d.Command.Replacements) != 1 {
		t.Fatalf("command %v, want a replacement", d.Command)
	}
	if cts, _ := d.Command.Replacements[0].Claim.Requirements.Get(karpv1.CapacityTypeLabelKey); cts.Has(karpv1.CapacityTypeOnDemand) {
		t.Errorf("replacement capacity types %s, want spot only", cts)
	}
}

// Multi-node consolidation never replaces nodes with one of their own type at no saving: four
// part-filled on-demand m.xlarge nodes are consolidated by deleting some, not by a fifth
// m.xlarge.
// TestEvictionCostOrdersCandidates: consolidation tries first the node that saves the most per
// unit of reschedule cost, as Karpenter v1.15.0 (consolidation.go sortCandidates by
// SavingsRatio; utils/disruption EvictionCost): a pod whose pod-deletion-cost says it is
// precious keeps its node longer than an equal node of an equal pod. Before, candidates were
// ordered by pod count and the protected pod's node, first by name, went first.
func TestEvictionCostOrdersCandidates(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
		everyBudget("1")(np)
		np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
		}
	})
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	// Tried first, and kept: nothing cheaper holds its pod, which fits nowhere else.
	c.add(stateNode(np, "big", findType(c.types, "m.4xlarge"), "on-demand", "test-zone-1", pod("10", "60Gi")))
	precious := pod("1", "1Gi")
	precious.Annotations = map[string]string{corev1.PodDeletionCost: "1000000000"}
	c.add(stateNode(np, "a", m, "on-demand", "test-zone-1", precious))
	c.add(stateNode(np, "b", m, "on-demand", "test-zone-1", pod("1", "1Gi")))
	d := Decide(c.in)
	if d.Command == nil || len(d.Command.Candidates) != 1 || d.Command.Candidates[0].Name() != "b" {
		t.Fatalf("command %+v, want node b deleted first: a's pod costs more to evict", d.Command)
	}
}

// TestManagedPodDeletionCostNotRead: with the PodDeletionCostManagement gate, consolidation
// no longer reads controller.kubernetes.io/pod-deletion-cost as a pod's cost, as Karpenter
// v1.15.0's EvictionCost (pkg/utils/disruption) with the gate on: Karpenter writes it itself
// (package deletioncost). The cluster of TestEvictionCostOrdersCandidates then deletes a
// first (names break the tie), and karpenter.sh/disruption-cost still counts.
func TestManagedPodDeletionCostNotRead(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
		everyBudget("1")(np)
		np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
		}
	})
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	c.add(stateNode(np, "big", findType(c.types, "m.4xlarge"), "on-demand", "test-zone-1", pod("10", "60Gi")))
	ranked := pod("1", "1Gi")
	ranked.Annotations = map[string]string{corev1.PodDeletionCost: "1000000000"}
	c.add(stateNode(np, "a", m, "on-demand", "test-zone-1", ranked))
	c.add(stateNode(np, "b", m, "on-demand", "test-zone-1", pod("1", "1Gi")))
	c.in.Options.PodDeletionCostManagement = true
	d := Decide(c.in)
	if d.Command == nil || len(d.Command.Candidates) != 1 || d.Command.Candidates[0].Name() != "a" {
		t.Fatalf("command %+v, want node a deleted first: its pod-deletion-cost is not read", d.Command)
	}
	both := pod("1", "1Gi")
	both.Annotations = map[string]string{karpv1.DisruptionCostAnnotationKey: "134217728", corev1.PodDeletionCost: "-134217728"}
	if got := ManagedEvictionCost(both); got != 2 {
		t.Errorf("ManagedEvictionCost = %v, want 2 (disruption-cost read, pod-deletion-cost not)", got)
	}
	if got := ManagedEvictionCost(ranked); got != 1 {
		t.Errorf("ManagedEvictionCost of a pod with only pod-deletion-cost = %v, want 1", got)
	}
}

// TestEmptyCountsEvictionCost: a node whose pods cost nothing to evict (karpenter.sh/disruption-cost
// low enough) is empty, as Karpenter v1.15.0's Candidate.IsEmpty (RescheduleDisruptionCost <= 1):
// emptiness deletes it even under WhenEmpty, and by the Empty budget.
func TestEmptyCountsEvictionCost(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	})
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	throwaway := pod("1", "1Gi")
	throwaway.Annotations = map[string]string{karpv1.DisruptionCostAnnotationKey: "-134217728"} // -2^27: cost 0
	c.add(stateNode(np, "cheap-pods", m, "on-demand", "test-zone-1", throwaway))
	c.add(stateNode(np, "busy", m, "on-demand", "test-zone-1", pod("1", "1Gi")))
	d := Decide(c.in)
	if d.Command == nil || d.Command.Method != MethodEmptiness || len(d.Command.Candidates) != 1 || d.Command.Candidates[0].Name() != "cheap-pods" {
		t.Fatalf("command %+v, want emptiness of cheap-pods", d.Command)
	}
	for _, tc := range []struct {
		annotations map[string]string
		priority    int32
		want        float64
	}{
		{nil, 0, 1},
		{map[string]string{karpv1.DisruptionCostAnnotationKey: "134217728"}, 0, 2},
		{map[string]string{karpv1.DisruptionCostAnnotationKey: "-134217728", corev1.PodDeletionCost: "134217728"}, 0, 0},
		{map[string]string{corev1.PodDeletionCost: "268435456"}, 0, 3},
		{map[string]string{karpv1.DisruptionCostAnnotationKey: "many"}, 0, 1},
		{nil, 2000000000, 10},
		{nil, -33554432, 0},
	} {
		p := pod("1", "1Gi")
		p.Annotations = tc.annotations
		if tc.priority != 0 {
			p.Spec.Priority = &tc.priority
		}
		if got := EvictionCost(p); got != tc.want {
			t.Errorf("EvictionCost(%v, priority %d) = %v, want %v", tc.annotations, tc.priority, got, tc.want)
		}
	}
}

// TestMultiNodeTakesUpTo101: with more candidates than the bound of 100, multi-node
// consolidation's first command takes 101 of them, as Karpenter v1.15.0's does
// (multinodeconsolidation.go firstNConsolidationOption: max 100, candidates[0:mid+1]).
func TestMultiNodeTakesUpTo101(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	for i := range 130 {
		c.add(stateNode(np, fmt.Sprintf("n%03d", i), m, "on-demand", "test-zone-1", pod("100m", "100Mi")))
	}
	d := Decide(c.in)
	if d.Command == nil || d.Command.Method != MethodMultiNode {
		t.Fatalf("command %+v, want multi-node consolidation", d.Command)
	}
	if n := len(d.Command.Candidates); n != 101 {
		t.Errorf("%s: %d candidates, want 101", d.Command.Message(), n)
	}
}

func TestMultiNodeNeverReplacesWithTheirOwnType(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
		everyBudget("100%")(np)
		np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
		}
	})
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	for i := range 4 {
		c.add(stateNode(np, fmt.Sprintf("n%d", i), m, "on-demand", "test-zone-1", pod("900m", "3Gi")))
	}
	d := Decide(c.in)
	if d.Command == nil {
		t.Fatal("no command")
	}
	for _, r := range d.Command.Replacements {
		for _, it := range r.Claim.InstanceTypes {
			if it.Name == "m.xlarge" {
				t.Errorf("%s replaces m.xlarge nodes with an m.xlarge", d.Command.Message())
			}
		}
	}
	if len(d.Command.Replacements) > 0 || len(d.Command.Candidates) < 2 {
		t.Errorf("%s, want several nodes deleted", d.Command.Message())
	}
	t.Log(d.Command.Message())
}

// TestSameTypeOtherCapacityType: a full on-demand node may become the same instance type on
// spot (a real saving, not churn); a full spot node is never replaced by its own offering.
func TestSameTypeOtherCapacityType(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	c.add(stateNode(np, "full", m, "on-demand", "test-zone-1", pod("3500m", "14Gi")))
	d := Decide(c.in)
	if d.Command == nil || len(d.Command.Replacements) != 1 {
		t.Fatalf("command = %+v, want one replacement", d.Command)
	}
	if o, _ := d.Command.Replacements[0].Claim.InstanceTypes[0].CheapestOffering(d.Command.Replacements[0].Claim.Requirements); o.CapacityType != karpv1.CapacityTypeSpot {
		t.Errorf("replacement %s is %s, want spot", d.Command.Message(), o.CapacityType)
	}
	t.Log(d.Command.Message())

	c = newCluster(catalog(), np)
	c.add(stateNode(np, "full", m, "spot", "test-zone-1", pod("3500m", "14Gi")))
	c.in.Options.SpotToSpotConsolidation = true
	if d := Decide(c.in); d.Command != nil {
		t.Errorf("a full spot node was replaced: %s", d.Command.Message())
	}
}

// A do-not-disrupt duration protects the pod for that long after it started, then no longer;
// an invalid value is ignored and reported.
func TestDoNotDisruptDuration(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	decide := func(value string, age time.Duration) *Decision {
		c := newCluster(catalog(), np)
		m := findType(c.types, "m.xlarge")
		p := pod("1", "1Gi")
		p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: value}
		p.Status.StartTime = &metav1.Time{Time: c.in.Now.Add(-age)}
		c.add(stateNode(np, "protected", m, "on-demand", "test-zone-1", p))
		c.add(stateNode(np, "room", findType(c.types, "m.4xlarge"), "on-demand", "test-zone-1", pod("2", "2Gi")))
		return Decide(c.in)
	}
	touches := func(d *Decision) bool {
		if d.Command == nil {
			return false
		}
		for _, cand := range d.Command.Candidates {
			if cand.Name() == "protected" {
				return true
			}
		}
		return false
	}
	d := decide("2h", 21*time.Minute)
	if touches(d) {
		t.Errorf("a pod protected for 2h, started 21m ago, was disrupted: %s", d.Command.Message())
	}
	if len(d.Blocked) != 1 || d.Blocked[0].Node != "protected" || !strings.HasPrefix(d.Blocked[0].Reason, `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/`) {
		t.Errorf("blocked %+v, want the protected node, naming its pod as Karpenter does", d.Blocked)
	}
	if d := decide("2h", 2*time.Hour+time.Minute); !touches(d) {
		t.Errorf("the protection ended 1m ago, but the node was not consolidated (command %v)", d.Command)
	}
	d = decide("forever", 21*time.Minute)
	if !touches(d) {
		t.Errorf("an invalid value protected the pod (command %v)", d.Command)
	}
	if len(d.PodProblems) != 1 || !strings.Contains(d.PodProblems[0].Err.Error(), `"forever"`) {
		t.Errorf("pod problems %+v, want the invalid value reported", d.PodProblems)
	}
}

func TestDoNotDisruptAndPDBBlock(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	p := pod("1", "1Gi")
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	c.add(stateNode(np, "protected", m, "on-demand", "test-zone-1", p))
	web := pod("1", "1Gi")
	web.Labels = map[string]string{"app": "web"}
	c.add(stateNode(np, "web", m, "on-demand", "test-zone-1", web))
	c.add(stateNode(np, "room", findType(c.types, "m.4xlarge"), "on-demand", "test-zone-1", pod("8", "8Gi")))
	c.in.PDBs = []*policyv1.PodDisruptionBudget{{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MinAvailable: &intstr.IntOrString{IntVal: 1}},
	}}
	d := Decide(c.in)
	if d.Command != nil {
		for _, cand := range d.Command.Candidates {
			if cand.Name() == "protected" || cand.Name() == "web" {
				t.Fatalf("command touches protected node %s: %s", cand.Name(), d.Command.Message())
			}
		}
	}
	reasons := map[string]string{}
	for _, b := range d.Blocked {
		reasons[b.Node] = b.Reason
	}
	if reasons["web"] != "Pdb prevents pod evictions (PodDisruptionBudget=[default/web])" {
		t.Errorf("blocked = %v", reasons)
	}
}

// TestNominatedNodeIsNotDisrupted: as Karpenter's ValidateNodeDisruptable, a node a recent
// provisioning pass or disruption command nominated for pods is no candidate of emptiness,
// consolidation or drift while the nomination lasts (reported "Node is nominated for a pending
// pod", before its own do-not-disrupt annotation); the decision wakes when the nomination
// ends, and then disrupts it.
func TestNominatedNodeIsNotDisrupted(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	busy := c.add(stateNode(np, "busy", m, "on-demand", "test-zone-1", pod("3", "8Gi")))
	empty := c.add(stateNode(np, "empty", m, "on-demand", "test-zone-1"))
	// Spot, so consolidation has nothing cheaper to offer: only drift replaces it.
	drifted := c.add(stateNode(np, "drifted", m, "spot", "test-zone-1", pod("3", "10Gi")))
	drifted.NodeClaim.Annotations[karpv1.NodePoolHashAnnotationKey] = "stale"
	until := epoch.Add(15 * time.Second)
	busy.NominatedUntil, empty.NominatedUntil, drifted.NominatedUntil = until, until, until
	drifted.Node.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	d := Decide(c.in)
	if d.Command != nil {
		t.Fatalf("command = %s, want none while the nodes are nominated", d.Command.Message())
	}
	reasons := map[string]string{}
	for _, b := range d.Blocked {
		reasons[b.Node] = b.Reason
	}
	for _, name := range []string{"busy", "empty", "drifted"} {
		if reasons[name] != "Node is nominated for a pending pod" {
			t.Errorf("blocked %s: %q, want the nomination", name, reasons[name])
		}
	}
	if !d.NextChange.Equal(until) {
		t.Errorf("next change = %v, want the nomination's end %v", d.NextChange, until)
	}
	c.in.Now = until
	if d := Decide(c.in); d.Command == nil || d.Command.Method != MethodEmptiness || d.Command.Candidates[0].Name() != "empty" {
		t.Fatalf("command once the nomination ended = %+v, want emptiness of node empty", d.Command)
	}
}

func TestDriftReplacesWithinBudgetAndIgnoresWeight(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("1"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	for _, name := range []string{"a", "b", "c"} {
		// Spot, so consolidation has nothing cheaper to offer (no spot-to-spot).
		c.add(stateNode(np, name, m, "spot", "test-zone-1", pod("3", "10Gi")))
	}
	weight := int32(50)
	np.Spec.Weight = &weight
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: *resourceQuantity("1000")}
	if d := Decide(c.in); d.Command != nil {
		t.Fatalf("weight/limits change caused %s", d.Command.Message())
	}
	np.Spec.Template.Labels = map[string]string{"team": "b"}
	d := Decide(c.in)
	if d.Command == nil || d.Command.Method != MethodDrift || len(d.Command.Candidates) != 1 || len(d.Command.Replacements) != 1 {
		t.Fatalf("command = %+v, want one drift replacement", d.Command)
	}
	// The one allowed by the budget is disrupting: no more.
	c.in.Nodes[0].MarkedForDeletion = true
	if d := Decide(c.in); d.Command != nil {
		t.Fatalf("budget exceeded: %s", d.Command.Message())
	}
}

func TestBudgetReasons(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonUnderutilized}}, {Nodes: "100%"}}
	})
	c := newCluster(catalog(), np)
	c.add(stateNode(np, "big", findType(c.types, "m.4xlarge"), "on-demand", "test-zone-1", pod("1", "2Gi")))
	if d := Decide(c.in); d.Command != nil {
		t.Fatalf("underutilized budget 0 allowed %s", d.Command.Message())
	}
	np.Spec.Template.Labels = map[string]string{"team": "b"}
	if d := Decide(c.in); d.Command == nil || d.Command.Method != MethodDrift {
		t.Fatalf("drift blocked by an Underutilized budget: %+v", d.Command)
	}
}

// TestExpiryIsNotADisruptionMethod: an expired node is left to package expiration, as
// Karpenter v1.15 leaves it to its nodeclaim.expiration controller (disruption's methods are
// emptiness, drift and consolidation: pkg/controllers/disruption/controller.go NewMethods); with
// nothing else to do about it, disruption does nothing.
func TestExpiryIsNotADisruptionMethod(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("30m")
	})
	c := newCluster(catalog(), np)
	// Spot, busy: nothing cheaper can hold it, so consolidation has nothing to do either.
	sn := c.add(stateNode(np, "old", findType(c.types, "m.xlarge"), "spot", "test-zone-1", pod("3", "10Gi")))
	sn.NodeClaim.Spec.ExpireAfter = karpv1.MustParseNillableDuration("30m")
	c.in.Now = sn.NodeClaim.CreationTimestamp.Add(time.Hour)
	d := Decide(c.in)
	if d.Command != nil {
		t.Fatalf("command %s for an expired node", d.Command.Message())
	}
	if n, ok := d.Eligible[karpv1.DisruptionReasonExpired]; ok {
		t.Errorf("%d nodes eligible for expiry in disruption's counts", n)
	}
}

func TestBalancedSkipsSmallSavings(t *testing.T) {
	mk := func(policy karpv1.ConsolidationPolicy) *Decision {
		np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
			np.Spec.Disruption.ConsolidationPolicy = policy
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
		})
		c := newCluster(catalog(), np)
		// Three busy spot m.4xlarge (nothing cheaper can hold them) and one m.xlarge of many
		// small pods whose replacement saves little.
		for i := 0; i < 3; i++ {
			c.add(stateNode(np, "busy-"+string(rune('a'+i)), findType(c.types, "m.4xlarge"), "spot", "test-zone-1", pod("15", "60Gi")))
		}
		var pods []*corev1.Pod
		for i := 0; i < 30; i++ {
			pods = append(pods, pod("100m", "400Mi"))
		}
		c.add(stateNode(np, "small", findType(c.types, "m.xlarge"), "on-demand", "test-zone-1", pods...))
		return decideAndRecord(c.in)
	}
	approved := metrics.ConsolidationMovesTotal.WithLabelValues(metrics.DecisionApproved, "default", string(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized))
	rejected := metrics.ConsolidationMovesTotal.WithLabelValues(metrics.DecisionRejected, "default", string(karpv1.ConsolidationPolicyBalanced))
	approvedBefore, rejectedBefore := testutil.ToFloat64(approved), testutil.ToFloat64(rejected)
	if d := mk(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized); d.Command == nil {
		t.Fatal("WhenEmptyOrUnderutilized found nothing")
	}
	if d := mk(karpv1.ConsolidationPolicyBalanced); d.Command != nil {
		t.Fatalf("Balanced acted: %s (savings %.3f)", d.Command.Message(), d.Command.Savings)
	}
	if testutil.ToFloat64(approved) <= approvedBefore {
		t.Error("no approved consolidation move counted under WhenEmptyOrUnderutilized")
	}
	if testutil.ToFloat64(rejected) <= rejectedBefore {
		t.Error("no rejected consolidation move counted under Balanced")
	}
	if testutil.CollectAndCount(metrics.ConsolidationScore) == 0 {
		t.Error("no score observed for the Balanced moves")
	}
}

func resourceQuantity(s string) *resourceQ { q := mustQ(s); return &q }

// TestDecideProperties checks the invariants on many random clusters.
func TestDecideProperties(t *testing.T) {
	budgets := []string{"0", "1", "2", "10%", "50%", "100%"}
	policies := []karpv1.ConsolidationPolicy{karpv1.ConsolidationPolicyWhenEmpty, karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, karpv1.ConsolidationPolicyBalanced}
	commands := 0
	for seed := int64(0); seed < 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		var pools []*karpv1.NodePool
		for i := 0; i < 1+r.Intn(3); i++ {
			pools = append(pools, builders.NodePool(builders.NodePoolOptions{Name: "pool-" + string(rune('a'+i)), Ready: true}, func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = policies[r.Intn(len(policies))]
				np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: budgets[r.Intn(len(budgets))]}}
				if r.Intn(5) == 0 {
					np.Spec.Template.Labels = map[string]string{"drift": "yes"} // claims hashed before: drifted
				}
			}))
		}
		c := randomCluster(r, 3+r.Intn(25), pools...)
		for _, sn := range c.in.Nodes {
			if r.Intn(10) == 0 {
				sn.MarkedForDeletion = true
			}
		}
		if r.Intn(2) == 0 {
			c.in.Options.SpotToSpotConsolidation = true
		}
		d := Decide(c.in)
		if d.Command == nil {
			continue
		}
		commands++
		checkCommand(t, seed, c, d.Command)
	}
	if commands < 50 {
		t.Errorf("only %d of 300 clusters gave a command; the generator is too tame", commands)
	}
}

func checkCommand(t *testing.T, seed int64, c *cluster, cmd *Command) {
	t.Helper()
	perPool := map[string]int{}
	for _, cand := range cmd.Candidates {
		perPool[cand.NodePool.Name]++
		for _, p := range cand.Pods {
			if cmd.Reason != karpv1.DisruptionReasonExpired && karpv1.PodDoNotDisrupt(p, c.in.Now).Active {
				t.Errorf("seed %d: %s selects %s with a do-not-disrupt pod", seed, cmd.Method, cand.Name())
			}
			if cmd.Reason != karpv1.DisruptionReasonExpired && p.Labels["app"] == "guarded" {
				t.Errorf("seed %d: %s selects %s with a pod whose PodDisruptionBudget allows no disruption", seed, cmd.Method, cand.Name())
			}
		}
		if cand.MarkedForDeletion {
			t.Errorf("seed %d: candidate %s already deleting", seed, cand.Name())
		}
	}
	if cmd.Reason != karpv1.DisruptionReasonExpired {
		for _, np := range c.in.NodePools {
			total, disrupting := 0, 0
			for _, sn := range c.in.Nodes {
				if sn.NodePool() == np.Name {
					total++
					if sn.MarkedForDeletion {
						disrupting++
					}
				}
			}
			allowed, _ := AllowedDisruptions(np, cmd.Reason, total, disrupting, c.in.Now)
			if perPool[np.Name] > allowed {
				t.Errorf("seed %d: %s disrupts %d nodes of %s, budget allows %d", seed, cmd.Method, perPool[np.Name], np.Name, allowed)
			}
		}
	}
	consolidation := cmd.Reason == karpv1.DisruptionReasonUnderutilized || cmd.Reason == karpv1.DisruptionReasonEmpty
	if consolidation && len(cmd.Replacements) > 0 {
		repl := 0.0
		for _, r := range cmd.Replacements {
			repl += r.Price
			for _, it := range r.Claim.InstanceTypes {
				o, ok := it.CheapestOffering(r.Claim.Requirements)
				if !ok || o.Price >= cmd.Price() {
					t.Errorf("seed %d: replacement type %s ($%.3f) not cheaper than $%.3f", seed, it.Name, o.Price, cmd.Price())
				}
				if cand := cmd.Candidates[0]; len(cmd.Candidates) == 1 && it.Name == cand.InstanceType && o.CapacityType == cand.CapacityType {
					t.Errorf("seed %d: replacement of %s by its own offering %s/%s", seed, cand.Name(), it.Name, o.CapacityType)
				}
			}
			allSpot := true
			for _, cand := range cmd.Candidates {
				allSpot = allSpot && cand.CapacityType == karpv1.CapacityTypeSpot
			}
			if cts, _ := r.Claim.Requirements.Get(karpv1.CapacityTypeLabelKey); allSpot && cts.Has(karpv1.CapacityTypeSpot) && !c.in.Options.SpotToSpotConsolidation {
				t.Errorf("seed %d: spot nodes %v replaced by spot without the SpotToSpotConsolidation gate", seed, cmd.NodeNames())
			}
			if len(cmd.Candidates) > 1 {
				// Several nodes are never replaced by one of their own type at no saving over
				// keeping that node (another capacity type of it, cheaper, is a saving).
				for _, it := range r.Claim.InstanceTypes {
					o, _ := it.CheapestOffering(r.Claim.Requirements)
					for _, cand := range cmd.Candidates {
						if it.Name == cand.InstanceType && o.Price >= cand.Price {
							t.Errorf("seed %d: %s may replace %s with its own type %s at $%.3f, not less than its $%.3f", seed, cmd.Method, cand.Name(), it.Name, o.Price, cand.Price)
						}
					}
				}
			}
		}
		if repl >= cmd.Price() {
			t.Errorf("seed %d: replacements $%.3f not cheaper than $%.3f", seed, repl, cmd.Price())
		}
	}
	// Every pod of a removed node lands somewhere that is not removed, with room for it.
	placed := map[string]string{}
	for _, pl := range cmd.Placements {
		placed[string(pl.Pod.UID)] = pl.Node
	}
	for _, r := range cmd.Replacements {
		for _, p := range r.Claim.Pods {
			placed[string(p.UID)] = "replacement"
		}
	}
	removed := map[string]bool{}
	for _, cand := range cmd.Candidates {
		removed[cand.Name()] = true
	}
	used := map[string]corev1.ResourceList{}
	for _, cand := range cmd.Candidates {
		for _, p := range cand.Pods {
			target, ok := placed[string(p.UID)]
			if !ok || removed[target] {
				t.Errorf("seed %d: pod %s of %s has nowhere to go (target %q)", seed, p.Name, cand.Name(), target)
			}
			used[target] = scheduling.Merge(used[target], scheduling.PodRequests(p))
		}
	}
	for _, sn := range c.in.Nodes {
		if u, ok := used[sn.Name()]; ok {
			if err := scheduling.Fits(u, sn.Available()); err != nil {
				t.Errorf("seed %d: pods moved to %s do not fit: %v", seed, sn.Name(), err)
			}
		}
	}
}

// TestNoChurn: a steady workload consolidates, then sees no further command.
func TestNoChurn(t *testing.T) {
	for seed := int64(0); seed < 10; seed++ {
		r := rand.New(rand.NewSource(seed))
		np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "20%"}}
			np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("1m")
		})
		c := randomCluster(r, 40, np)
		for _, sn := range c.in.Nodes { // no protected pods: everything may move
			for _, p := range sn.Pods {
				p.Annotations = nil
			}
		}
		start := c.cost()
		commands := 0
		for pass := 0; pass < 300; pass++ {
			c.in.Now = c.in.Now.Add(10 * time.Second)
			d := Decide(c.in)
			if d.Command == nil {
				continue
			}
			if pass >= 200 {
				t.Fatalf("seed %d: command after the workload settled (pass %d): %s", seed, pass, d.Command.Message())
			}
			commands++
			c.apply(d.Command)
		}
		if commands == 0 || commands > 40 {
			t.Errorf("seed %d: %d commands", seed, commands)
		}
		t.Logf("seed %d: %d commands, $%.3f/h → $%.3f/h, %d nodes", seed, commands, start, c.cost(), len(c.in.Nodes))
	}
}

func TestReplacementStaysInTheZoneOfThePodsVolumes(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	p := pod("1", "2Gi")
	c.add(stateNode(np, "big", findType(c.types, "m.4xlarge"), "on-demand", "test-zone-2", p))
	zonesAllowed := func(d *Decision) []bool {
		t.Helper()
		if d.Command == nil || len(d.Command.Replacements) != 1 {
			t.Fatalf("command = %+v, want a replacement", d.Command)
		}
		reqs := d.Command.Replacements[0].Claim.Requirements
		zones, ok := reqs.Get(corev1.LabelTopologyZone)
		out := make([]bool, 3)
		for i := range out {
			out[i] = !ok || zones.Has(fmt.Sprintf("test-zone-%d", i+1))
		}
		return out
	}
	if free := zonesAllowed(Decide(c.in)); !free[0] || !free[2] {
		t.Fatalf("zones allowed without a volume %v: the test no longer tells the cases apart", free)
	}
	c.in.VolumeRequirements = map[types.UID]scheduling.Requirements{
		p.UID: scheduling.NewRequirements(scheduling.MustRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-zone-2")),
	}
	if pinned := zonesAllowed(Decide(c.in)); pinned[0] || !pinned[1] || pinned[2] {
		t.Errorf("zones allowed %v (test-zone-1..3): the pod's volume is in test-zone-2 only", pinned)
	}
}

// TestDriftWithGracePeriodIgnoresPodProtection: a drifted node whose NodeClaim has a
// terminationGracePeriod is replaced even though a do-not-disrupt pod or a PodDisruptionBudget
// protects its pods (the drain honours them until the grace period ends); without a grace
// period, or when the node itself is annotated do-not-disrupt, it is not.
func TestDriftWithGracePeriodIgnoresPodProtection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		grace     bool
		annotated bool
		want      bool
	}{
		{"no grace period", false, false, false},
		{"grace period", true, false, true},
		{"grace period, node annotated", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
			c := newCluster(catalog(), np)
			// Spot, so consolidation has nothing cheaper to offer.
			p := pod("3", "10Gi")
			p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
			sn := c.add(stateNode(np, "drifted", findType(c.types, "m.xlarge"), "spot", "test-zone-1", p))
			if tc.grace {
				sn.NodeClaim.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
			}
			if tc.annotated {
				sn.Node.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
			}
			np.Spec.Template.Labels = map[string]string{"team": "b"}
			d := Decide(c.in)
			got := d.Command != nil && d.Command.Method == MethodDrift
			if got != tc.want {
				t.Fatalf("drift command = %v (%+v), want %v", got, d.Command, tc.want)
			}
			if !tc.want && len(d.Blocked) != 1 {
				t.Errorf("blocked = %+v, want the node reported", d.Blocked)
			}
		})
	}
}

// TestBudgetCountsInitializedNodes: as in Karpenter, a budget's percentage is of the NodePool's
// initialized nodes (claims still launching, such as replacements, do not enlarge it), and an
// initialized node that is NotReady counts as disrupting.
func TestBudgetCountsInitializedNodes(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("50%"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	c.add(stateNode(np, "empty-a", m, "on-demand", "test-zone-1"))
	c.add(stateNode(np, "empty-b", m, "on-demand", "test-zone-1"))
	for _, name := range []string{"launching-a", "launching-b"} {
		c.add(&state.StateNode{NodeClaim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: np.Name}, CreationTimestamp: metav1.NewTime(epoch),
		}}})
	}
	d := Decide(c.in)
	if d.Command == nil || d.Command.Method != MethodEmptiness || len(d.Command.Candidates) != 1 {
		t.Fatalf("command = %+v, want emptiness of 1 node: 50%% of 2 initialized nodes", d.Command)
	}

	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}}
	c = newCluster(catalog(), np)
	c.add(stateNode(np, "empty", m, "on-demand", "test-zone-1"))
	sick := c.add(stateNode(np, "sick", m, "on-demand", "test-zone-1", pod("3", "10Gi")))
	sick.Node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	if d := Decide(c.in); d.Command != nil {
		t.Fatalf("command = %s: the NotReady node uses the budget of 1", d.Command.Message())
	}
}

// TestDriftOnExpireAfterAndGracePeriod: as in Karpenter v1, changing a NodePool's expireAfter
// or terminationGracePeriod drifts its NodeClaims (they keep the values they were created
// with); NodeClaims hashed under the earlier hash version, which left those fields out, do
// not drift for them but still drift for a label change.
func TestDriftOnExpireAfterAndGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*karpv1.NodePool)
	}{
		{"expireAfter", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("1000h")
		}},
		{"expireAfter Never", func(np *karpv1.NodePool) { np.Spec.Template.Spec.ExpireAfter = karpv1.NeverDuration() }},
		{"terminationGracePeriod", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 2 * time.Hour}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
				np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
				np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("720h")
				np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
			})
			c := newCluster(catalog(), np)
			// Spot, so consolidation has nothing cheaper to offer.
			sn := c.add(stateNode(np, "node", findType(c.types, "m.xlarge"), "spot", "test-zone-1", pod("3", "10Gi")))
			legacy := c.add(stateNode(np, "legacy", findType(c.types, "m.xlarge"), "spot", "test-zone-1", pod("3", "10Gi")))
			legacy.NodeClaim.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = "v1"
			legacy.NodeClaim.Annotations[karpv1.NodePoolHashAnnotationKey], _ = nodepool.HashFor(np, "v1")
			if d := Decide(c.in); d.Command != nil {
				t.Fatalf("command before the change: %s", d.Command.Message())
			}
			tc.change(np)
			d := Decide(c.in)
			drifted := map[string]string{}
			for _, s := range d.Claims {
				drifted[s.NodeClaim] = s.Drifted
			}
			if drifted[sn.NodeClaim.Name] != ReasonNodePoolDrifted || drifted[legacy.NodeClaim.Name] != "" {
				t.Fatalf("drifted = %v, want only %s", drifted, sn.NodeClaim.Name)
			}
			if d.Command == nil || d.Command.Method != MethodDrift || d.Command.Candidates[0].Name() != "node" {
				t.Fatalf("command = %+v, want drift of node", d.Command)
			}
			np.Spec.Template.Labels = map[string]string{"team": "b"}
			if d := Decide(c.in); len(d.Claims) != 2 || d.Claims[0].Drifted == "" || d.Claims[1].Drifted == "" {
				t.Fatalf("claims = %+v, want both drifted by a label change", d.Claims)
			}
		})
	}
}

// TestWhenEmptyDeletesOnlyEmptyNodes: consolidationPolicy WhenEmpty removes empty nodes (those
// with only daemonset pods count) but never moves pods off an underutilized one;
// WhenEmptyOrUnderutilized does.
func TestWhenEmptyDeletesOnlyEmptyNodes(t *testing.T) {
	build := func(policy karpv1.ConsolidationPolicy, withEmpty bool) *Decision {
		np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
			np.Spec.Disruption.ConsolidationPolicy = policy
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
		})
		c := newCluster(catalog(), np)
		c.add(stateNode(np, "big", findType(c.types, "m.4xlarge"), "on-demand", "test-zone-1", pod("1", "2Gi")))
		if withEmpty {
			agent := pod("100m", "100Mi")
			agent.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds"}}
			c.add(stateNode(np, "empty", findType(c.types, "m.xlarge"), "on-demand", "test-zone-1", agent))
		}
		return Decide(c.in)
	}
	if d := build(karpv1.ConsolidationPolicyWhenEmpty, false); d.Command != nil {
		t.Fatalf("WhenEmpty consolidated an underutilized node: %s", d.Command.Message())
	}
	if d := build(karpv1.ConsolidationPolicyWhenEmpty, true); d.Command == nil || d.Command.Method != MethodEmptiness || d.Command.Candidates[0].Name() != "empty" {
		t.Fatalf("WhenEmpty: command = %+v, want emptiness of the node with only a daemonset pod", d.Command)
	}
	if d := build(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, false); d.Command == nil || d.Command.Method != MethodSingleNode {
		t.Fatalf("WhenEmptyOrUnderutilized: command = %+v, want single-node consolidation", d.Command)
	}
}

// TestReplacementKeepsMinValues: as in Karpenter, a consolidation replacement narrowed to the
// instance types cheaper than the node must still offer minValues of them; otherwise there is
// no replacement.
func TestReplacementKeepsMinValues(t *testing.T) {
	var names []string
	for _, it := range catalog() {
		names = append(names, it.Name)
	}
	for _, tc := range []struct {
		minValues int
		want      bool
	}{{4, true}, {5, false}} {
		np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
			np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{
				Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: names, MinValues: &tc.minValues,
			}}
		})
		c := newCluster(catalog(), np)
		// Cheaper than an on-demand m.xlarge: c.large, m.large, c.xlarge and m.xlarge on spot.
		c.add(stateNode(np, "node", findType(c.types, "m.xlarge"), "on-demand", "test-zone-1", pod("1", "2Gi")))
		d := Decide(c.in)
		if got := d.Command != nil; got != tc.want {
			t.Fatalf("minValues %d: command = %+v, want one: %v", tc.minValues, d.Command, tc.want)
		}
		if d.Command != nil {
			if n := len(d.Command.Replacements[0].Claim.InstanceTypes); n < tc.minValues {
				t.Errorf("minValues %d: replacement offers %d types", tc.minValues, n)
			}
		}
	}
}

// TestWhatIfsPlacePendingPods: as Karpenter's SimulateScheduling, a consolidation what-if
// places the pending pods beside the candidate's: the room a pending pod would take on another
// node is not promised to the candidate's pods, so the node is not deleted onto it; a pending
// pod that fits nowhere blocks nothing.
func TestWhatIfsPlacePendingPods(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	setup := func() *cluster {
		// Spot, without spot-to-spot consolidation: consolidation deletes a or nothing.
		c := newCluster(catalog(), np)
		x := findType(c.types, "c.xlarge")
		c.add(stateNode(np, "a", x, "spot", "test-zone-1", pod("1", "1Gi")))
		c.add(stateNode(np, "b", x, "spot", "test-zone-1", pod("2", "2Gi")))
		return c
	}
	deletesA := func(d *Decision) bool {
		return d.Command != nil && len(d.Command.Candidates) == 1 && d.Command.Candidates[0].Name() == "a" && len(d.Command.Replacements) == 0
	}
	if d := Decide(setup().in); !deletesA(d) {
		t.Fatalf("without pending pods: command = %+v, want a deleted (its pod moves to b)", d.Command)
	}
	c := setup()
	c.in.Pending = []*corev1.Pod{pod("1500m", "1Gi")}
	if d := Decide(c.in); deletesA(d) {
		t.Fatalf("with a pending pod taking b's room: %s, want a kept", d.Command.Message())
	}
	// Pending pods that need new nodes, more than one: no node is removed meanwhile.
	c = setup()
	for range 3 {
		c.in.Pending = append(c.in.Pending, pod("9", "4Gi")) // two do not fit the largest type
	}
	d := Decide(c.in)
	if d.Command != nil {
		t.Fatalf("with pending pods needing three new nodes: %s, want none", d.Command.Message())
	}
	for _, u := range d.Unconsolidatable {
		if !strings.HasPrefix(u.Reason, "Can't remove without creating ") {
			t.Errorf("%s unconsolidatable for %q, want the new nodes the pending pods need", u.Node, u.Reason)
		}
	}
	c = setup()
	nowhere := pod("1", "1Gi")
	nowhere.Spec.NodeSelector = map[string]string{"team": "gone"}
	c.in.Pending = []*corev1.Pod{nowhere}
	if d := Decide(c.in); !deletesA(d) {
		t.Fatalf("with a pending pod that fits nowhere: command = %+v, want a deleted", d.Command)
	}
}

// TestWhatIfsOnLaunchingNodesProveNothing: as Karpenter's UninitializedNodeError, a
// candidate whose pods would go to a node still launching is not consolidated ("would
// schedule against uninitialized nodeclaim/…"); the pods of a node being deleted need a place
// too, and may take a launching node's room.
func TestWhatIfsOnLaunchingNodesProveNothing(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	c.add(stateNode(np, "a", m, "on-demand", "test-zone-1", pod("1", "2Gi")))
	c.add(stateNode(np, "full", m, "on-demand", "test-zone-1", pod("3500m", "12Gi")))
	launching := c.add(stateNode(np, "launching", findType(c.types, "m.2xlarge"), "on-demand", "test-zone-1", pod("4", "4Gi")))
	launching.NodeClaim.Status.Conditions = nil
	d := Decide(c.in)
	if d.Command != nil {
		t.Fatalf("command = %s, want none: a's pod fits only on the launching node", d.Command.Message())
	}
	var why string
	for _, u := range d.Unconsolidatable {
		if u.Node == "a" {
			why = u.Reason
		}
	}
	if !strings.Contains(why, "would schedule against uninitialized nodeclaim/launching-claim, node/launching") {
		t.Errorf("a unconsolidatable for %q, want the launching node named", why)
	}
	// Once it initialized, consolidation acts.
	launching.NodeClaim.Status.Conditions = c.in.Nodes[0].NodeClaim.Status.Conditions
	if d := Decide(c.in); d.Command == nil {
		t.Fatalf("no command once the node initialized (unconsolidatable: %+v)", d.Unconsolidatable)
	}
	// A node being deleted whose pod takes that room: a is not deleted onto it.
	leaving := c.add(stateNode(np, "leaving", m, "on-demand", "test-zone-1", pod("3500m", "8Gi")))
	leaving.MarkedForDeletion = true
	if d := Decide(c.in); d.Command != nil && d.Command.Candidates[0].Name() == "a" && len(d.Command.Replacements) == 0 {
		t.Fatalf("a deleted onto the room a deleting node's pod needs: %s", d.Command.Message())
	}
}

// withReservation gives it a reserved offering in test-zone-1: reservation id with free
// slots, priced as the AWS provider prices one (the on-demand price / ReservedPriceDivisor).
func withReservation(it *cloudprovider.InstanceType, id string, free int) *cloudprovider.InstanceType {
	od, _ := it.Offerings.CheapestWhere(func(o cloudprovider.Offering) bool { return o.CapacityType == karpv1.CapacityTypeOnDemand })
	it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: "test-zone-1", CapacityType: karpv1.CapacityTypeReserved,
		Price: od.Price / cloudprovider.ReservedPriceDivisor, Available: free > 0, ReservationID: id,
		ReservationType: "default", ReservationCapacity: free})
	return it
}

// reservedNode is stateNode for a node launched into reservation id.
func reservedNode(np *karpv1.NodePool, name string, it *cloudprovider.InstanceType, id string, pods ...*corev1.Pod) *state.StateNode {
	sn := stateNode(np, name, it, karpv1.CapacityTypeReserved, "test-zone-1", pods...)
	for _, labels := range []map[string]string{sn.Node.Labels, sn.NodeClaim.Labels} {
		labels[awsv1.LabelCapacityReservationID] = id
		labels[awsv1.LabelCapacityReservationType] = "default"
	}
	return sn
}

// TestReservedCapacityConsolidation: consolidation treats reserved nodes as Karpenter v1.15.0
// (disruption/consolidation_test.go, Context "Reserved Capacity"; a candidate is priced by
// utils/disruption ResolveOfferingPrice at its reserved offering):
//   - an on-demand or spot node is replaced by the same instance type in a reservation with a
//     free slot ("can consolidate into reserved capacity for the same instance pool");
//   - a reserved node moves to a cheaper reservation ("from one reserved offering to another");
//   - a reserved node whose reservation is full is not left for a smaller on-demand or spot
//     type: its slot costs next to nothing, so nothing is cheaper.
func TestReservedCapacityConsolidation(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"),
		func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
				Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn,
				Values: []string{karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot}})
		})
	for _, from := range []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot} {
		types := catalog()
		m := withReservation(findType(types, "m.xlarge"), "cr-m", 1)
		c := newCluster(types, np)
		c.in.Options.SpotToSpotConsolidation = true
		c.add(stateNode(np, "full", m, from, "test-zone-1", pod("3500m", "14Gi")))
		d := Decide(c.in)
		if d.Command == nil || len(d.Command.Replacements) != 1 {
			t.Fatalf("%s: command = %+v, want the node replaced into the reservation", from, d.Command)
		}
		r := d.Command.Replacements[0]
		o, _ := r.Claim.InstanceTypes[0].CheapestOffering(r.Claim.Requirements)
		if r.Claim.InstanceTypes[0].Name != "m.xlarge" || o.CapacityType != karpv1.CapacityTypeReserved || o.ReservationID != "cr-m" {
			t.Errorf("%s: replacement %s on %s %s, want m.xlarge in cr-m", from, d.Command.Message(), o.CapacityType, o.ReservationID)
		}
	}

	types := catalog()
	big := withReservation(findType(types, "m.2xlarge"), "cr-big", 0)
	withReservation(findType(types, "m.xlarge"), "cr-small", 2)
	c := newCluster(types, np)
	c.add(reservedNode(np, "reserved", big, "cr-big", pod("1", "2Gi")))
	d := Decide(c.in)
	if d.Command == nil || len(d.Command.Replacements) != 1 {
		t.Fatalf("command = %+v, want the reserved node moved to the cheaper reservation", d.Command)
	}
	r := d.Command.Replacements[0]
	if o, _ := r.Claim.InstanceTypes[0].CheapestOffering(r.Claim.Requirements); o.ReservationID != "cr-small" {
		t.Errorf("replacement %s, want m.xlarge in cr-small", d.Command.Message())
	}

	types = catalog()
	big = withReservation(findType(types, "m.2xlarge"), "cr-big", 0)
	c = newCluster(types, np)
	c.in.Options.SpotToSpotConsolidation = true
	c.add(reservedNode(np, "reserved", big, "cr-big", pod("1", "2Gi")))
	if d := Decide(c.in); d.Command != nil {
		t.Errorf("a node in a full reservation was left for on-demand or spot: %s", d.Command.Message())
	}
}

// TestInstanceTypeNotFoundDrift: a claim over an hour old whose instance type its NodePool no
// longer offers, or offers with no offering in its zone and capacity type, is drifted
// InstanceTypeNotFound; a reserved claim whose reservation has gone is not, while the type is
// still sold on-demand in its zone; a younger claim is not looked at. As Karpenter v1.15.0's
// nodeclaim/disruption/drift.go (isDrifted, instanceTypeNotFound).
func TestInstanceTypeNotFoundDrift(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	types := catalog()
	onlyZone2 := findType(types, "c.xlarge")
	onlyZone2.Offerings = slices.DeleteFunc(slices.Clone(onlyZone2.Offerings), func(o cloudprovider.Offering) bool { return o.Zone != "test-zone-2" })
	withoutRetired := slices.DeleteFunc(slices.Clone(types), func(it *cloudprovider.InstanceType) bool { return it.Name == "m.2xlarge" })
	c := newCluster(withoutRetired, np)
	old := func(sn *state.StateNode) *state.StateNode {
		sn.NodeClaim.CreationTimestamp = metav1.NewTime(epoch.Add(-2 * time.Hour))
		return c.add(sn)
	}
	old(stateNode(np, "retired", findType(types, "m.2xlarge"), "on-demand", "test-zone-1", pod("6", "20Gi")))
	old(stateNode(np, "zone-gone", onlyZone2, "on-demand", "test-zone-1", pod("3", "6Gi")))
	old(reservedNode(np, "reservation-gone", findType(types, "m.xlarge"), "cr-gone", pod("3", "12Gi")))
	c.add(stateNode(np, "young", findType(types, "m.2xlarge"), "on-demand", "test-zone-1", pod("6", "20Gi")))
	d := Decide(c.in)
	got := map[string]string{}
	for _, s := range d.Claims {
		got[strings.TrimSuffix(s.NodeClaim, "-claim")] = s.Drifted
	}
	want := map[string]string{"retired": ReasonInstanceTypeNotFound, "zone-gone": ReasonInstanceTypeNotFound, "reservation-gone": "", "young": ""}
	if !maps.Equal(got, want) {
		t.Errorf("drifted %v, want %v", got, want)
	}
	if d.Command == nil || d.Command.Reason != karpv1.DisruptionReasonDrifted {
		t.Errorf("command %v, want a drift replacement", d.Command)
	}
}

// TestDriftGivesBackItsLimit: a NodePool at its cpu limit still replaces a drifted node, because
// the node leaving gives back what it counted against the limit; one more node's worth is not
// given.
func TestDriftGivesBackItsLimit(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("1"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	for _, name := range []string{"a", "b"} {
		c.add(stateNode(np, name, m, "spot", "test-zone-1", pod("3", "10Gi")))
	}
	cpu := m.Capacity[corev1.ResourceCPU]
	limit := cpu.DeepCopy()
	limit.Add(cpu) // exactly the two nodes
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: limit}
	np.Spec.Template.Labels = map[string]string{"team": "b"}
	d := Decide(c.in)
	if d.Command == nil || d.Command.Method != MethodDrift || len(d.Command.Replacements) != 1 {
		t.Fatalf("command = %+v, want one drift replacement within the limit", d.Command)
	}
	limit.Sub(*resourceQuantity("1"))
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: limit}
	if d := Decide(c.in); d.Command != nil && len(d.Command.Replacements) > 0 {
		t.Fatalf("command = %s, want no replacement one cpu short of the limit", d.Command.Message())
	}
}
