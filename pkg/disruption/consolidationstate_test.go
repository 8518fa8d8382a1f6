package disruption

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestConsolidationState: as Karpenter's consolidation state, a method that found nothing is
// skipped while nothing it counts changed: a pod bound or deleted, a node added, marked for
// deletion; and again after the 5-minute refresh. Ours also counts the decision's next change
// with time as a change.
func TestConsolidationState(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true})
	it := findType(catalog(), "m.xlarge")
	running := pod("1", "1Gi")
	running.UID = types.UID("running")
	pending := pod("1", "1Gi")
	pending.UID = types.UID("pending")
	a := stateNode(np, "a", it, "on-demand", "test-zone-1", running)
	snap := &state.Snapshot{Nodes: []*state.StateNode{a}, Pods: []*corev1.Pod{running, pending}, NodePools: nil}
	s := newConsolidationState()
	skipped := func(at time.Time, snap *state.Snapshot) bool {
		t.Helper()
		_, ok := s.observe(snap, at)[MethodSingleNode]
		return ok
	}
	if skipped(epoch, snap) {
		t.Fatal("skipped before any pass settled")
	}
	s.settle(&Decision{Consolidated: []string{MethodSingleNode}, NextChange: time.Time{}})
	if !skipped(epoch.Add(10*time.Second), snap) {
		t.Fatal("not skipped with nothing changed")
	}
	s.settle(&Decision{NextChange: time.Time{}})

	for _, tc := range []struct {
		name   string
		change func() *state.Snapshot
	}{
		{"pod bound", func() *state.Snapshot {
			bound := pending.DeepCopy()
			bound.Spec.NodeName = "a"
			return &state.Snapshot{Nodes: snap.Nodes, Pods: []*corev1.Pod{running, bound}}
		}},
		{"pending pod deleted", func() *state.Snapshot {
			return &state.Snapshot{Nodes: snap.Nodes, Pods: []*corev1.Pod{running}}
		}},
		{"node added", func() *state.Snapshot {
			return &state.Snapshot{Nodes: []*state.StateNode{a, stateNode(np, "b", it, "on-demand", "test-zone-1")}, Pods: snap.Pods}
		}},
		{"node marked for deletion", func() *state.Snapshot {
			marked := *a
			marked.MarkedForDeletion = true
			return &state.Snapshot{Nodes: []*state.StateNode{&marked}, Pods: snap.Pods}
		}},
		{"NodePool changed", func() *state.Snapshot {
			changed := np.DeepCopy()
			changed.ObjectMeta = metav1.ObjectMeta{Name: np.Name, ResourceVersion: "2"}
			return &state.Snapshot{Nodes: snap.Nodes, Pods: snap.Pods, NodePools: []*karpv1.NodePool{changed}}
		}},
	} {
		at := epoch.Add(time.Minute)
		s = newConsolidationState()
		s.observe(snap, at)
		s.settle(&Decision{Consolidated: []string{MethodSingleNode}, NextChange: time.Time{}})
		if skipped(at.Add(10*time.Second), tc.change()) {
			t.Errorf("%s: skipped", tc.name)
		}
	}

	s = newConsolidationState()
	s.observe(snap, epoch)
	s.settle(&Decision{Consolidated: []string{MethodSingleNode}, NextChange: epoch.Add(time.Minute)}) // e.g. consolidateAfter ends then
	if !skipped(epoch.Add(50*time.Second), snap) {
		t.Error("not skipped before the next change with time")
	}
	s.settle(&Decision{NextChange: epoch.Add(time.Minute)})
	if skipped(epoch.Add(time.Minute), snap) {
		t.Error("skipped once the next change with time came")
	}
	s.settle(&Decision{Consolidated: []string{MethodSingleNode}, NextChange: time.Time{}})
	if !skipped(epoch.Add(5*time.Minute), snap) {
		t.Error("not skipped within the refresh")
	}
	s.settle(&Decision{NextChange: time.Time{}})
	if skipped(epoch.Add(6*time.Minute), snap) {
		t.Error("skipped after the 5-minute refresh")
	}
}

// TestDecideSkipsConsolidatedMethods: a method in Input.Consolidated with the decision's
// eligibility is not tried; with another, it is; one that tried, had candidates and found
// nothing is in Decision.Consolidated, unless a budget held a candidate back.
func TestDecideSkipsConsolidatedMethods(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	c.add(stateNode(np, "busy", m, "spot", "test-zone-1", pod("3", "10Gi")))
	d := Decide(c.in)
	if d.Command != nil {
		t.Fatalf("command = %s, want none", d.Command.Message())
	}
	if got := d.Consolidated; len(got) != 3 || got[0] != MethodEmptiness || got[1] != MethodMultiNode || got[2] != MethodSingleNode {
		t.Errorf("consolidated = %v, want emptiness, multi-node and single-node", got)
	}
	settled := d.Eligibility
	// Settled with the same eligibility: skipped; a new candidate changes it.
	c.in.Consolidated = map[string]uint64{MethodMultiNode: settled, MethodSingleNode: settled}
	if d := Decide(c.in); d.Command != nil || d.Eligibility != settled || len(d.Consolidated) != 1 {
		t.Fatalf("decision while settled = %+v, want no command, the same eligibility, emptiness alone consolidated", d)
	}
	c.add(stateNode(np, "empty", m, "on-demand", "test-zone-1"))
	if d := Decide(c.in); d.Eligibility == settled {
		t.Errorf("a new candidate left the eligibility as it was")
	}
	c.in.Consolidated = map[string]uint64{MethodEmptiness: Decide(c.in).Eligibility}
	d = Decide(c.in)
	if d.Command != nil && d.Command.Method == MethodEmptiness {
		t.Fatalf("emptiness ran while consolidated: %s", d.Command.Message())
	}
	c.in.Consolidated = nil
	if d := Decide(c.in); d.Command == nil || d.Command.Method != MethodEmptiness {
		t.Fatalf("command = %+v, want emptiness", d.Command)
	}
	// A budget allowing nothing holds the empty node back: not consolidated.
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	if d := Decide(c.in); len(d.Consolidated) != 0 {
		t.Errorf("consolidated = %v with a budget holding nodes back, want none", d.Consolidated)
	}
}
