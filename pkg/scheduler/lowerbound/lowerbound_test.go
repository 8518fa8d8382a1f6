package lowerbound

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

const gib = 1 << 30

func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*max(1, math.Abs(a), math.Abs(b))
}

func TestOneShapeOneType(t *testing.T) {
	shapes := []Shape{{Name: "web", Requests: []float64{1000, 1 * gib, 1}, Count: 3}}
	types := []InstanceType{{Name: "m.xlarge", Capacity: []float64{4000, 8 * gib, 110}, Price: 1}}
	sol, err := Solve(shapes, types)
	if err != nil {
		t.Fatal(err)
	}
	checkSolution(t, shapes, types, sol)
	if !near(sol.Cost, 0.75, 1e-12) {
		t.Errorf("Cost = %v, want 0.75 (3 pods × 1/4 of a node)", sol.Cost)
	}
	wantNodes := []NodeCount{{Type: "m.xlarge", Nodes: 0.75}}
	wantAssign := []Placement{{Shape: "web", Type: "m.xlarge", Pods: 3}}
	if !reflect.DeepEqual(sol.Nodes, wantNodes) || !reflect.DeepEqual(sol.Assign, wantAssign) {
		t.Errorf("Nodes = %v, Assign = %v; want %v, %v", sol.Nodes, sol.Assign, wantNodes, wantAssign)
	}
	if !near(sol.ShapeValues[0], 0.25, 1e-12) {
		t.Errorf("ShapeValues = %v, want [0.25]", sol.ShapeValues)
	}
	if !near(sol.Aggregate, 0.75, 1e-12) || !near(sol.PerPod, 0.75, 1e-12) {
		t.Errorf("Aggregate = %v, PerPod = %v, want both 0.75", sol.Aggregate, sol.PerPod)
	}
}

// complementary is a CPU-heavy and a memory-heavy shape with a CPU-rich,
// a memory-rich and a cheaper-per-pair balanced type, in (cpu, memory).
func complementary() ([]Shape, []InstanceType) {
	shapes := []Shape{
		{Name: "cpu-heavy", Requests: []float64{2, 1}, Count: 2},
		{Name: "mem-heavy", Requests: []float64{1, 2}, Count: 2},
	}
	types := []InstanceType{
		{Name: "c", Capacity: []float64{4, 2}, Price: 1},
		{Name: "m", Capacity: []float64{3, 3}, Price: 0.8},
		{Name: "r", Capacity: []float64{2, 4}, Price: 1},
	}
	return shapes, types
}

func TestComplementaryShapesShareBalancedType(t *testing.T) {
	shapes, types := complementary()
	sol, err := Solve(shapes, types)
	if err != nil {
		t.Fatal(err)
	}
	checkSolution(t, shapes, types, sol)
	// Alone, each pod's cheapest share is half a c or half an r node: 0.5 each,
	// 2.0 in all. A cpu-heavy and a mem-heavy pod fill one m node (3, 3) for
	// 0.8, so two pairs cost 1.6, and the dual u = (0.4, 0.4) with resource
	// prices (2/15, 2/15) on every type proves nothing is cheaper. The dual is
	// not unique (u = (0.3, 0.5) works too), but a pair is always worth 0.8.
	if !near(sol.Cost, 1.6, 1e-9) {
		t.Errorf("Cost = %v, want 1.6", sol.Cost)
	}
	if !near(sol.PerPod, 2.0, 1e-12) {
		t.Errorf("PerPod = %v, want 2.0", sol.PerPod)
	}
	if sol.Cost >= sol.PerPod {
		t.Errorf("mixing should beat the per-pod bound: Cost %v, PerPod %v", sol.Cost, sol.PerPod)
	}
	if len(sol.Nodes) != 1 || sol.Nodes[0].Type != "m" || !near(sol.Nodes[0].Nodes, 2, 1e-9) {
		t.Errorf("Nodes = %v, want [{m 2}]", sol.Nodes)
	}
	if u := sol.ShapeValues; !near(u[0]+u[1], 0.8, 1e-9) {
		t.Errorf("ShapeValues = %v, want a pair worth 0.8", u)
	}
	agg, err := AggregateBound(shapes, types)
	if err != nil || !near(agg, 1.6, 1e-9) {
		t.Errorf("AggregateBound = %v, %v; want 1.6", agg, err)
	}
	pp, err := PerPodBound(shapes, types)
	if err != nil || !near(pp, 2.0, 1e-12) {
		t.Errorf("PerPodBound = %v, %v; want 2.0", pp, err)
	}
}

func TestFitMakesLPExceedAggregate(t *testing.T) {
	// The big pod only fits the dear type; the aggregate bound counts the
	// cheap small type's capacity anyway.
	shapes := []Shape{{Name: "big", Requests: []float64{4, 4}, Count: 1}}
	types := []InstanceType{
		{Name: "small", Capacity: []float64{2, 2}, Price: 0.5},
		{Name: "large", Capacity: []float64{4, 4}, Price: 2},
	}
	sol, err := Solve(shapes, types)
	if err != nil {
		t.Fatal(err)
	}
	checkSolution(t, shapes, types, sol)
	if !near(sol.Cost, 2, 1e-12) || !near(sol.Aggregate, 1, 1e-12) {
		t.Errorf("Cost = %v, Aggregate = %v; want 2 and 1", sol.Cost, sol.Aggregate)
	}
}

func TestShapeFitsNothing(t *testing.T) {
	shapes := []Shape{
		{Name: "ok", Requests: []float64{1000, gib, 1}, Count: 1},
		{Name: "huge", Requests: []float64{64000, gib, 1}, Count: 2},
	}
	types := []InstanceType{{Name: "m.xlarge", Capacity: []float64{4000, 16 * gib, 58}, Price: 0.2}}
	for name, f := range map[string]func() error{
		"Solve":          func() error { _, err := Solve(shapes, types); return err },
		"PerPodBound":    func() error { _, err := PerPodBound(shapes, types); return err },
		"AggregateBound": func() error { _, err := AggregateBound(shapes, types); return err },
	} {
		err := f()
		if !errors.Is(err, ErrInfeasible) || !strings.Contains(err.Error(), `"huge"`) {
			t.Errorf("%s: err = %v, want ErrInfeasible naming \"huge\"", name, err)
		}
	}
	// A GPU pod and no GPU type: the missing capacity entry counts as 0.
	gpu := []Shape{{Name: "trainer", Requests: []float64{1000, gib, 1, 1}, Count: 1}}
	if _, err := Solve(gpu, types); !errors.Is(err, ErrInfeasible) || !strings.Contains(err.Error(), "trainer") {
		t.Errorf("GPU shape: err = %v, want ErrInfeasible naming trainer", err)
	}
	if _, err := Solve(shapes[:1], nil); !errors.Is(err, ErrInfeasible) {
		t.Errorf("no types: err = %v, want ErrInfeasible", err)
	}
}

func TestInvalidInput(t *testing.T) {
	okType := InstanceType{Name: "t", Capacity: []float64{4, 4}, Price: 1}
	okShape := Shape{Name: "s", Requests: []float64{1, 1}, Count: 1}
	cases := map[string]struct {
		shapes []Shape
		types  []InstanceType
	}{
		"negative count":    {[]Shape{{Name: "s", Requests: []float64{1}, Count: -1}}, []InstanceType{okType}},
		"NaN request":       {[]Shape{{Name: "s", Requests: []float64{math.NaN()}, Count: 1}}, []InstanceType{okType}},
		"negative request":  {[]Shape{{Name: "s", Requests: []float64{-1}, Count: 1}}, []InstanceType{okType}},
		"infinite capacity": {[]Shape{okShape}, []InstanceType{{Name: "t", Capacity: []float64{math.Inf(1)}, Price: 1}}},
		"negative price":    {[]Shape{okShape}, []InstanceType{{Name: "t", Capacity: []float64{4, 4}, Price: -1}}},
		"NaN price":         {[]Shape{okShape}, []InstanceType{{Name: "t", Capacity: []float64{4, 4}, Price: math.NaN()}}},
		"duplicate shape":   {[]Shape{okShape, okShape}, []InstanceType{okType}},
		"duplicate type":    {[]Shape{okShape}, []InstanceType{okType, okType}},
	}
	for name, c := range cases {
		if _, err := Solve(c.shapes, c.types); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: Solve err = %v, want ErrInvalidInput", name, err)
		}
		if _, err := PerPodBound(c.shapes, c.types); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: PerPodBound err = %v, want ErrInvalidInput", name, err)
		}
		if _, err := AggregateBound(c.shapes, c.types); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: AggregateBound err = %v, want ErrInvalidInput", name, err)
		}
	}
}

func TestEmptyAndFreeBatches(t *testing.T) {
	types := []InstanceType{
		{Name: "b", Capacity: []float64{4, 4}, Price: 1},
		{Name: "a", Capacity: []float64{2, 2}, Price: 0.6},
	}
	for name, shapes := range map[string][]Shape{
		"nil":         nil,
		"zero counts": {{Name: "s", Requests: []float64{1, 1}, Count: 0}},
	} {
		sol, err := Solve(shapes, types)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if sol.Cost != 0 || sol.Bound != 0 || len(sol.Nodes) != 0 || len(sol.Assign) != 0 {
			t.Errorf("%s: got %+v, want an empty zero-cost solution", name, sol)
		}
	}
	// Pods requesting nothing cost nothing; they ride on the first type used.
	shapes := []Shape{
		{Name: "noop", Requests: []float64{0, 0}, Count: 5},
		{Name: "s", Requests: []float64{1, 1}, Count: 2},
	}
	sol, err := Solve(shapes, types)
	if err != nil {
		t.Fatal(err)
	}
	checkSolution(t, shapes, types, sol)
	if !near(sol.Cost, 0.5, 1e-12) {
		t.Errorf("Cost = %v, want 0.5 (two pods on half of b, or one a node at 0.6: b wins)", sol.Cost)
	}
	if sol.Assign[0] != (Placement{Shape: "noop", Type: "b", Pods: 5}) {
		t.Errorf("Assign = %v, want noop's 5 pods on b first", sol.Assign)
	}
	// Only free pods: they go to the cheapest type, at no cost.
	sol, err = Solve(shapes[:1], types)
	if err != nil {
		t.Fatal(err)
	}
	if sol.Cost != 0 || len(sol.Assign) != 1 || sol.Assign[0].Type != "a" {
		t.Errorf("free pods only: Cost %v, Assign %v; want 0 on a", sol.Cost, sol.Assign)
	}
}

func TestZeroPriceType(t *testing.T) {
	shapes := []Shape{
		{Name: "small", Requests: []float64{1, 1}, Count: 10},
		{Name: "big", Requests: []float64{8, 8}, Count: 1},
	}
	types := []InstanceType{
		{Name: "free", Capacity: []float64{2, 2}, Price: 0},
		{Name: "paid", Capacity: []float64{8, 8}, Price: 1},
	}
	sol, err := Solve(shapes, types)
	if err != nil {
		t.Fatal(err)
	}
	checkSolution(t, shapes, types, sol)
	if !near(sol.Cost, 1, 1e-12) {
		t.Errorf("Cost = %v, want 1 (small pods free, big pod one paid node)", sol.Cost)
	}
}

func TestPrune(t *testing.T) {
	types := []InstanceType{
		{Name: "m5.large", Capacity: []float64{2, 8}, Price: 0.096},
		{Name: "m5a.large", Capacity: []float64{2, 8}, Price: 0.086}, // dominates m5.large: cheaper
		{Name: "dup-b", Capacity: []float64{2, 8}, Price: 0.086},     // identical to m5a.large and dup-a
		{Name: "dup-a", Capacity: []float64{2, 8}, Price: 0.086},     // survives the tie by name
		{Name: "c5.large", Capacity: []float64{2, 4}, Price: 0.085},  // smaller but cheaper: kept
		{Name: "bigger", Capacity: []float64{2, 16}, Price: 0.086},   // dominates all 2×8 at 0.086
		{Name: "gpu", Capacity: []float64{2, 8, 1}, Price: 0.5},      // has a GPU: kept by Prune
	}
	got := names(Prune(types))
	want := []string{"c5.large", "bigger", "gpu"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Prune = %v, want %v", got, want)
	}
	ident := []InstanceType{{Name: "y", Capacity: []float64{1}, Price: 1}, {Name: "x", Capacity: []float64{1}, Price: 1}}
	if got := names(Prune(ident)); !reflect.DeepEqual(got, []string{"x"}) {
		t.Errorf("Prune(identical) = %v, want [x]", got)
	}

	// Solve prunes on the requested dimensions only: with no GPU pods, the
	// GPU type is dominated by bigger.
	shapes := []Shape{{Name: "s", Requests: []float64{1, 3}, Count: 4}}
	sol, err := Solve(shapes, types)
	if err != nil {
		t.Fatal(err)
	}
	checkSolution(t, shapes, types, sol)
	if sol.CandidateTypes != 2 || sol.PrunedTypes != 5 {
		t.Errorf("CandidateTypes = %d, PrunedTypes = %d; want 2 and 5", sol.CandidateTypes, sol.PrunedTypes)
	}
}

func names(types []InstanceType) []string {
	var out []string
	for _, t := range types {
		out = append(out, t.Name)
	}
	return out
}

func TestDeterministic(t *testing.T) {
	shapes, types := randomInstance(newRand(7), 40, 120, 4)
	a, err := Solve(shapes, types)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Solve(shapes, types)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("two solves of the same batch differ")
	}
}

// TestProportionalTypes is the benchmark's synthetic catalog: every type has
// the same price per resource, so the LP is massively degenerate, and its
// optimum is the aggregate bound (everything mixes on the largest type).
func TestProportionalTypes(t *testing.T) {
	shapes, types := syntheticInstance(400)
	sol, err := Solve(shapes, types)
	if err != nil {
		t.Fatal(err)
	}
	checkSolution(t, shapes, types, sol)
	if !near(sol.Cost, sol.Aggregate, 1e-9) {
		t.Errorf("Cost = %v, want the aggregate bound %v", sol.Cost, sol.Aggregate)
	}
	t.Logf("cost %.6f aggregate %.6f per-pod %.6f candidates %d rounds %d columns %d pivots %d",
		sol.Cost, sol.Aggregate, sol.PerPod, sol.CandidateTypes, sol.Rounds, sol.Columns, sol.Pivots)
}
