package disruption

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// timeouts reads karpenter_voluntary_disruption_consolidation_timeouts_total: multi, single.
func timeouts() (multi, single float64) {
	return testutil.ToFloat64(metrics.VoluntaryDisruptionConsolidationTimeoutsTotal.WithLabelValues(metrics.ConsolidationTypeMulti)),
		testutil.ToFloat64(metrics.VoluntaryDisruptionConsolidationTimeoutsTotal.WithLabelValues(metrics.ConsolidationTypeSingle))
}

// decideAndRecord decides, then records the decision's evaluation metrics, as the controller.
func decideAndRecord(in Input) *Decision {
	d := Decide(in)
	recordEvaluation(d)
	return d
}

// expectTimeouts fails unless the counters moved by multi and single since before.
func expectTimeouts(t *testing.T, beforeMulti, beforeSingle, multi, single float64) {
	t.Helper()
	gotMulti, gotSingle := timeouts()
	if gotMulti-beforeMulti != multi || gotSingle-beforeSingle != single {
		t.Errorf("timeouts counted: multi %v, single %v; want %v, %v", gotMulti-beforeMulti, gotSingle-beforeSingle, multi, single)
	}
}

// stepOnSchedule makes every scheduling simulation of method take d on clk.
func stepOnSchedule(clk *clocktesting.FakeClock, method string, d time.Duration) func(string) {
	return func(m string) {
		if m == method {
			clk.Step(d)
		}
	}
}

// eightLightNodes is a cluster where multi-node consolidation, given time, removes all 8
// nodes at once (their pods on one cheaper node).
func eightLightNodes() *cluster {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	c := newCluster(catalog(), np)
	m := findType(c.types, "m.xlarge")
	for i := range 8 {
		c.add(stateNode(np, fmt.Sprintf("n%d", i), m, "on-demand", "test-zone-1", pod("100m", "128Mi")))
	}
	return c
}

// TestMultiNodeConsolidationTimeoutReturnsBestSoFar: as Karpenter's, multi-node consolidation
// stops once its simulations have taken a minute, discards the simulation that ran out of time
// and returns the largest command found before, counting one timeout.
func TestMultiNodeConsolidationTimeoutReturnsBestSoFar(t *testing.T) {
	c := eightLightNodes()
	clk := clocktesting.NewFakeClock(epoch)
	c.in.Clock = clk
	multi, single := timeouts()
	full := decideAndRecord(c.in)
	if full.Command == nil || full.Command.Method != MethodMultiNode || len(full.Command.Candidates) != 8 || len(full.Timeouts) != 0 {
		t.Fatalf("without a timeout: command %+v, timeouts %+v; want all 8 nodes by multi-node consolidation", full.Command, full.Timeouts)
	}
	expectTimeouts(t, multi, single, 0, 0)

	// The binary search tries 5 nodes (at 40s), then 7 (at 80s: past the minute).
	c.in.onSchedule = stepOnSchedule(clk, MethodMultiNode, 40*time.Second)
	d := decideAndRecord(c.in)
	if d.Command == nil || d.Command.Method != MethodMultiNode || len(d.Command.Candidates) != 5 {
		t.Fatalf("command = %+v, want the 5 nodes found before the timeout", d.Command)
	}
	if want := []SearchTimeout{{Method: MethodMultiNode, Evaluated: 7}}; !slices.Equal(d.Timeouts, want) {
		t.Errorf("timeouts = %+v, want %+v", d.Timeouts, want)
	}
	expectTimeouts(t, multi, single, 1, 0)
}

// TestMultiNodeConsolidationTimeoutWithoutCommand: when the first simulation already runs out
// of time, multi-node consolidation returns nothing and single-node consolidation goes on.
func TestMultiNodeConsolidationTimeoutWithoutCommand(t *testing.T) {
	c := eightLightNodes()
	clk := clocktesting.NewFakeClock(epoch)
	c.in.Clock = clk
	c.in.onSchedule = stepOnSchedule(clk, MethodMultiNode, time.Minute)
	multi, single := timeouts()
	d := decideAndRecord(c.in)
	if d.Command == nil || d.Command.Method != MethodSingleNode {
		t.Fatalf("command = %+v, want single-node consolidation after multi-node's timeout", d.Command)
	}
	if want := []SearchTimeout{{Method: MethodMultiNode, Evaluated: 5}}; !slices.Equal(d.Timeouts, want) {
		t.Errorf("timeouts = %+v, want %+v", d.Timeouts, want)
	}
	expectTimeouts(t, multi, single, 1, 0)
}

// unmovableNodes is a cluster of three NodePools a, b and c, each with three spot nodes full
// of one pod: no consolidation can act on any of them.
func unmovableNodes() *cluster {
	var pools []*karpv1.NodePool
	for _, name := range []string{"a", "b", "c"} {
		pools = append(pools, builders.NodePool(builders.NodePoolOptions{Name: name, Ready: true}, everyBudget("100%")))
	}
	c := newCluster(catalog(), pools...)
	large := findType(c.types, "c.large")
	for _, np := range pools {
		for i := range 3 {
			c.add(stateNode(np, fmt.Sprintf("%s%d", np.Name, i), large, karpv1.CapacityTypeSpot, "test-zone-1", pod("1500m", "2Gi")))
		}
	}
	return c
}

func unconsolidatableNodes(d *Decision) []string {
	var out []string
	for _, u := range d.Unconsolidatable {
		out = append(out, u.Node)
	}
	return out
}

// TestSingleNodeConsolidationTimeout: as Karpenter's, single-node consolidation tries one
// node of each NodePool in turn; past three minutes it gives up before its next candidate,
// counts one timeout, and the next pass tries first the NodePools it had not reached.
func TestSingleNodeConsolidationTimeout(t *testing.T) {
	c := unmovableNodes()
	clk := clocktesting.NewFakeClock(epoch)
	c.in.Clock = clk
	multi, single := timeouts()
	full := decideAndRecord(c.in)
	if full.Command != nil || len(full.Timeouts) != 0 || full.UnseenNodePools != nil {
		t.Fatalf("without a timeout: command %+v, timeouts %+v, unseen %v; want none", full.Command, full.Timeouts, full.UnseenNodePools)
	}
	if got, want := unconsolidatableNodes(full), []string{"a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"}; !slices.Equal(got, want) {
		t.Fatalf("tried %v, want %v", got, want)
	}
	expectTimeouts(t, multi, single, 0, 0)

	// Two simulations take 4 minutes: a0 and b0 are tried, then the search stops.
	c.in.onSchedule = stepOnSchedule(clk, MethodSingleNode, 2*time.Minute)
	d := decideAndRecord(c.in)
	if d.Command != nil {
		t.Fatalf("command = %s, want none", d.Command.Message())
	}
	if got, want := unconsolidatableNodes(d), []string{"a0", "b0"}; !slices.Equal(got, want) {
		t.Errorf("tried %v, want %v", got, want)
	}
	if want := []SearchTimeout{{Method: MethodSingleNode, Evaluated: 2}}; !slices.Equal(d.Timeouts, want) {
		t.Errorf("timeouts = %+v, want %+v", d.Timeouts, want)
	}
	if want := []string{"c"}; !slices.Equal(d.UnseenNodePools, want) {
		t.Errorf("unseen nodepools = %v, want %v", d.UnseenNodePools, want)
	}
	expectTimeouts(t, multi, single, 0, 1)

	// The next pass starts with NodePool c, and once it has tried every node, none is unseen.
	c.in.onSchedule, c.in.UnseenNodePools = nil, d.UnseenNodePools
	next := decideAndRecord(c.in)
	if got, want := unconsolidatableNodes(next), []string{"c0", "a0", "b0", "c1", "a1", "b1", "c2", "a2", "b2"}; !slices.Equal(got, want) {
		t.Errorf("next pass tried %v, want %v", got, want)
	}
	if next.UnseenNodePools != nil || len(next.Timeouts) != 0 {
		t.Errorf("next pass: unseen %v, timeouts %+v; want none", next.UnseenNodePools, next.Timeouts)
	}
	expectTimeouts(t, multi, single, 0, 1)
}

// TestUnseenNodePoolsKeptWhenSingleNodeDoesNotFinish: a pass that finds a command before
// single-node consolidation has tried every NodePool leaves the NodePools to try first as they
// were, as Karpenter's.
func TestUnseenNodePoolsKeptWhenSingleNodeDoesNotFinish(t *testing.T) {
	c := eightLightNodes()
	c.in.UnseenNodePools = []string{"other"}
	d := Decide(c.in)
	if d.Command == nil || !slices.Equal(d.UnseenNodePools, []string{"other"}) {
		t.Errorf("command %+v, unseen %v; want a command and the input's unseen nodepools", d.Command, d.UnseenNodePools)
	}
}

// TestSingleNodeTriesEveryCandidateWithinBudget: as Karpenter's, single-node consolidation
// tries every node of a NodePool whose budget allows one disruption, not only the first.
func TestSingleNodeTriesEveryCandidateWithinBudget(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("1"))
	c := newCluster(catalog(), np)
	// Full spot nodes (nothing cheaper may replace them without spot-to-spot consolidation),
	// tried first: they save the most per unit of reschedule cost.
	m4 := findType(c.types, "m.4xlarge")
	for _, name := range []string{"x", "y"} {
		c.add(stateNode(np, name, m4, karpv1.CapacityTypeSpot, "test-zone-1", pod("15", "2Gi")))
	}
	// Tried last (two pods to move), and replaceable by a cheaper c.4xlarge.
	c.add(stateNode(np, "big", findType(c.types, "m.4xlarge"), karpv1.CapacityTypeOnDemand, "test-zone-1", pod("7500m", "2Gi"), pod("7500m", "2Gi")))
	d := Decide(c.in)
	if d.Command == nil || d.Command.Method != MethodSingleNode || d.Command.Candidates[0].Name() != "big" {
		t.Fatalf("command = %+v (tried %v), want single-node consolidation of big", d.Command, unconsolidatableNodes(d))
	}
	if got, want := unconsolidatableNodes(d), []string{"x", "y"}; !slices.Equal(got, want) {
		t.Errorf("tried %v before big, want %v", got, want)
	}
}

func TestSingleNodeOrder(t *testing.T) {
	pools := map[string]*karpv1.NodePool{}
	var cands []*Candidate
	for _, name := range []string{"b1", "a1", "b2", "c1", "a2", "b3"} {
		np := pools[name[:1]]
		if np == nil {
			np = builders.NodePool(builders.NodePoolOptions{Name: name[:1], Ready: true})
			pools[name[:1]] = np
		}
		cands = append(cands, &Candidate{StateNode: stateNode(np, name, findType(catalog(), "m.large"), "on-demand", "test-zone-1"), NodePool: np})
	}
	names := func(cands []*Candidate) []string {
		var out []string
		for _, c := range cands {
			out = append(out, c.Name())
		}
		return out
	}
	for _, tc := range []struct {
		unseen []string
		want   []string
	}{
		{nil, []string{"b1", "a1", "c1", "b2", "a2", "b3"}},
		{[]string{"c"}, []string{"c1", "b1", "a1", "b2", "a2", "b3"}},
		{[]string{"a", "gone"}, []string{"a1", "b1", "c1", "a2", "b2", "b3"}},
	} {
		order, _ := singleNodeOrder(cands, tc.unseen)
		if got := names(order); !slices.Equal(got, tc.want) {
			t.Errorf("unseen %v: order %v, want %v", tc.unseen, got, tc.want)
		}
	}
}

// TestSingleNodeTakesWhatIfsInOrder: single-node consolidation runs its what-ifs two at a time,
// and takes them in order: when both succeed the first wins and the second is not reported;
// when the first fails and the second succeeds, the first is reported unconsolidatable and the
// second is the command.
func TestSingleNodeTakesWhatIfsInOrder(t *testing.T) {
	np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, everyBudget("100%"))
	big := func(c *cluster, name string) {
		c.add(stateNode(np, name, findType(c.types, "m.4xlarge"), karpv1.CapacityTypeOnDemand, "test-zone-1", pod("7500m", "2Gi"), pod("7500m", "2Gi")))
	}
	for _, tc := range []struct {
		name      string
		build     func(c *cluster)
		want      string
		unmovable []string
	}{
		{"both replaceable", func(c *cluster) { big(c, "big1"); big(c, "big2") }, "big1", nil},
		{"first unmovable", func(c *cluster) {
			c.add(stateNode(np, "x", findType(c.types, "m.4xlarge"), karpv1.CapacityTypeSpot, "test-zone-1", pod("15", "2Gi")))
			big(c, "big")
		}, "big", []string{"x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(catalog(), np)
			tc.build(c)
			tried := 0
			c.in.onSchedule = func(method string) {
				if method == MethodSingleNode {
					tried++
				}
			}
			d := Decide(c.in)
			if d.Command == nil || d.Command.Method != MethodSingleNode || d.Command.Candidates[0].Name() != tc.want {
				t.Fatalf("command = %+v (tried %v), want single-node consolidation of %s", d.Command, unconsolidatableNodes(d), tc.want)
			}
			if got := unconsolidatableNodes(d); !slices.Equal(got, tc.unmovable) {
				t.Errorf("reported unconsolidatable %v, want %v", got, tc.unmovable)
			}
			if want := len(tc.unmovable) + 1; tried != want {
				t.Errorf("%d single-node simulations counted, want %d (those a search one at a time makes)", tried, want)
			}
		})
	}
}
