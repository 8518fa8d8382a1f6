package lowerbound

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// checkSolution verifies a Solution against the LP from scratch, without
// trusting the solver: the primal (n, y) is feasible and costs Cost; the dual
// (ShapeValues, ResourcePrices) is feasible for the LP dual
//
//	maximize Σ_s c_s·u_s  subject to  Σ_d a_{t,d}·w_{t,d} ≤ p_t (every t),
//	         u_s ≤ Σ_d r_{s,d}·w_{t,d} (every s fitting t),  w ≥ 0,
//
// and is worth Bound; and Cost − Bound is tiny. Weak duality then proves
// Cost optimal (to that gap) over every type, including the pruned ones.
func checkSolution(t *testing.T, shapes []Shape, types []InstanceType, sol *Solution) {
	t.Helper()
	const tol = 1e-9
	dims := 0
	for _, s := range shapes {
		dims = max(dims, len(s.Requests))
	}
	for _, it := range types {
		dims = max(dims, len(it.Capacity))
	}
	shapeIdx := map[string]int{}
	for i, s := range shapes {
		shapeIdx[s.Name] = i
	}
	typeIdx := map[string]int{}
	for i, it := range types {
		typeIdx[it.Name] = i
	}

	// Primal feasibility.
	nodes := make([]float64, len(types))
	cost := 0.0
	for _, nc := range sol.Nodes {
		ti, ok := typeIdx[nc.Type]
		if !ok || nc.Nodes <= 0 {
			t.Fatalf("bad node count %+v", nc)
		}
		nodes[ti] = nc.Nodes
		cost += types[ti].Price * nc.Nodes
	}
	if !near(cost, sol.Cost, tol) {
		t.Errorf("Cost = %v, but the nodes cost %v", sol.Cost, cost)
	}
	placed := make([]float64, len(shapes))
	load := make([][]float64, len(types))
	for i := range load {
		load[i] = make([]float64, dims)
	}
	for _, p := range sol.Assign {
		si, ok1 := shapeIdx[p.Shape]
		ti, ok2 := typeIdx[p.Type]
		if !ok1 || !ok2 || !(p.Pods > 0) {
			t.Fatalf("bad placement %+v", p)
		}
		if !fits(shapes[si].Requests, types[ti].Capacity, dims) {
			t.Errorf("shape %s placed on %s, which it does not fit", p.Shape, p.Type)
		}
		placed[si] += p.Pods
		for d := range dims {
			load[ti][d] += p.Pods * at(shapes[si].Requests, d)
		}
	}
	for i, s := range shapes {
		if !near(placed[i], float64(s.Count), tol) {
			t.Errorf("shape %s: %v pods placed, want %d", s.Name, placed[i], s.Count)
		}
	}
	for ti, it := range types {
		for d := range dims {
			if c := nodes[ti] * at(it.Capacity, d); load[ti][d] > c*(1+tol)+1e-12 {
				t.Errorf("type %s dimension %d: load %v exceeds %v nodes' capacity %v", it.Name, d, load[ti][d], nodes[ti], c)
			}
		}
	}

	// The patterns: each fits one node of its type, together they cover
	// every shape that requests something, at the LP optimum's cost.
	covered := make([]float64, len(shapes))
	patternCost := 0.0
	for _, pat := range sol.Patterns {
		if pat.TypeIndex < 0 || pat.TypeIndex >= len(types) || types[pat.TypeIndex].Name != pat.Type || !(pat.Nodes > 0) || len(pat.Pods) != len(shapes) {
			t.Fatalf("bad pattern %+v", pat)
		}
		patternCost += pat.Nodes * types[pat.TypeIndex].Price
		for d := range dims {
			load := 0.0
			for si, x := range pat.Pods {
				if x < 0 {
					t.Fatalf("pattern %+v has negative pods", pat)
				}
				if x > 0 && !fits(shapes[si].Requests, types[pat.TypeIndex].Capacity, dims) {
					t.Errorf("pattern on %s holds shape %s, which does not fit it", pat.Type, shapes[si].Name)
				}
				load += x * at(shapes[si].Requests, d)
			}
			if c := at(types[pat.TypeIndex].Capacity, d); load > c*(1+tol)+1e-9 {
				t.Errorf("pattern on %s: load %v exceeds capacity %v in dimension %d", pat.Type, load, c, d)
			}
		}
		for si, x := range pat.Pods {
			covered[si] += pat.Nodes * x
		}
	}
	for si, s := range shapes {
		requests := slices.ContainsFunc(s.Requests, func(v float64) bool { return v > 0 })
		if requests && s.Count > 0 && covered[si] < float64(s.Count)*(1-1e-7) {
			t.Errorf("shape %s: patterns cover %v pods, want %d", s.Name, covered[si], s.Count)
		}
	}
	if !near(patternCost, sol.Cost, 1e-7) && patternCost < sol.Cost {
		t.Errorf("patterns cost %v, below Cost %v", patternCost, sol.Cost)
	}
	if len(sol.Patterns) > 0 && patternCost > sol.Cost*(1+1e-7)+1e-12 {
		t.Errorf("patterns cost %v, above Cost %v", patternCost, sol.Cost)
	}

	// Dual feasibility.
	if len(sol.ShapeValues) != len(shapes) || len(sol.ResourcePrices) != len(types) {
		t.Fatalf("dual has %d shape values and %d price vectors, want %d and %d",
			len(sol.ShapeValues), len(sol.ResourcePrices), len(shapes), len(types))
	}
	for ti, it := range types {
		w := sol.ResourcePrices[ti]
		worth := 0.0
		for d, v := range w {
			if !(v >= 0) {
				t.Errorf("type %s: negative resource price %v", it.Name, v)
			}
			worth += at(it.Capacity, d) * v
		}
		if worth > it.Price*(1+tol)+1e-15 {
			t.Errorf("type %s: resources priced at %v exceed the node price %v", it.Name, worth, it.Price)
		}
	}
	dual := 0.0
	for si, s := range shapes {
		u := sol.ShapeValues[si]
		if !(u >= 0) {
			t.Errorf("shape %s: negative value %v", s.Name, u)
		}
		dual += float64(s.Count) * u
		for ti, it := range types {
			if !fits(s.Requests, it.Capacity, dims) {
				continue
			}
			pay := 0.0
			for d, v := range sol.ResourcePrices[ti] {
				pay += at(s.Requests, d) * v
			}
			if u > pay*(1+tol)+1e-15 {
				t.Errorf("shape %s worth %v but costs only %v on %s", s.Name, u, pay, it.Name)
			}
		}
	}
	if !near(dual, sol.Bound, tol) {
		t.Errorf("Bound = %v, but the dual is worth %v", sol.Bound, dual)
	}
	if sol.Bound > sol.Cost*(1+tol)+1e-12 || sol.Cost-sol.Bound > 1e-8*sol.Cost+1e-12 {
		t.Errorf("gap: Cost %v, Bound %v", sol.Cost, sol.Bound)
	}
	if sol.Aggregate > sol.Cost*(1+tol)+1e-12 {
		t.Errorf("Aggregate %v exceeds Cost %v", sol.Aggregate, sol.Cost)
	}
	if sol.Cost > sol.PerPod*(1+tol)+1e-12 {
		t.Errorf("Cost %v exceeds PerPod %v", sol.Cost, sol.PerPod)
	}
}

// randomInstance draws a batch and a catalog in real units (millicores,
// bytes, pod slots, and GPUs when dims is 4), with some identical and
// dominated types, and every shape fitting at least one type.
func randomInstance(rng *rand.Rand, nTypes, nShapes, dims int) ([]Shape, []InstanceType) {
	vcpus := []float64{1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192}
	ratios := []float64{1, 2, 4, 8}
	types := make([]InstanceType, 0, nTypes)
	for i := range nTypes {
		name := fmt.Sprintf("t%03d", i)
		if i > 0 && rng.IntN(8) == 0 {
			// A copy, identical or dearer.
			src := types[rng.IntN(len(types))]
			price := src.Price
			if rng.IntN(2) == 0 {
				price *= 1 + rng.Float64()/4
			}
			types = append(types, InstanceType{Name: name, Capacity: src.Capacity, Price: price})
			continue
		}
		v := vcpus[rng.IntN(len(vcpus))]
		memGiB := v * ratios[rng.IntN(len(ratios))] * (0.9 + 0.2*rng.Float64())
		pods := math.Min(110, math.Floor(8+v*6))
		capacity := []float64{v*1000 - 70 - 10*v, (memGiB - 0.3 - 0.02*memGiB) * gib, pods}
		price := (0.031*v + 0.0045*memGiB) * (0.85 + 0.3*rng.Float64())
		if dims >= 4 {
			gpus := 0.0
			if rng.IntN(6) == 0 {
				gpus = float64(int(1) << rng.IntN(4))
				price += 0.9 * gpus
			}
			capacity = append(capacity, gpus)
		}
		types = append(types, InstanceType{Name: name, Capacity: capacity[:min(dims, len(capacity))], Price: price})
	}
	shapes := make([]Shape, nShapes)
	for i := range shapes {
		req := []float64{
			float64(50 * (1 + rng.IntN(80))),
			math.Round(math.Exp(math.Log(32<<20) + rng.Float64()*math.Log(512))),
			1,
		}
		if dims >= 4 {
			gpu := 0.0
			if rng.IntN(10) == 0 {
				gpu = float64(1 + rng.IntN(2))
			}
			req = append(req, gpu)
		}
		req = req[:dims]
		if !fitsSome(req, types, dims) {
			host := types[rng.IntN(len(types))].Capacity
			for d := range req {
				req[d] = math.Floor(at(host, d) * (0.2 + 0.8*rng.Float64()))
			}
			req[min(2, dims-1)] = min(1, at(host, min(2, dims-1)))
		}
		shapes[i] = Shape{Name: fmt.Sprintf("s%03d", i), Requests: req, Count: 1 + rng.IntN(30)}
	}
	return shapes, types
}

func fitsSome(req []float64, types []InstanceType, dims int) bool {
	for _, t := range types {
		if fits(req, t.Capacity, dims) {
			return true
		}
	}
	return false
}

// refSolve solves the LP in its original form (n and y variables, one row
// per shape and per type and dimension, capacity rows scaled to fractions of
// a node) with a dense two-phase tableau simplex under Bland's rule: slow,
// simple and independent of Solve. For tiny instances only.
func refSolve(t *testing.T, shapes []Shape, types []InstanceType) float64 {
	t.Helper()
	dims := 0
	for _, s := range shapes {
		dims = max(dims, len(s.Requests))
	}
	for _, it := range types {
		dims = max(dims, len(it.Capacity))
	}
	type pair struct{ s, t int }
	var ys []pair
	var demand []int
	for si, s := range shapes {
		if s.Count == 0 {
			continue
		}
		demand = append(demand, si)
		for ti, it := range types {
			if fits(s.Requests, it.Capacity, dims) {
				ys = append(ys, pair{si, ti})
			}
		}
	}
	type capRow struct{ t, d int }
	var caps []capRow
	for ti, it := range types {
		for d := range dims {
			if at(it.Capacity, d) > 0 {
				caps = append(caps, capRow{ti, d})
			}
		}
	}
	nT, nY, nS, nA := len(types), len(ys), len(caps), len(demand)
	nv := nT + nY + nS + nA // n, y, slacks, artificials
	m := nA + nS
	tab := make([][]float64, m)
	for i := range tab {
		tab[i] = make([]float64, nv+1)
	}
	basis := make([]int, m)
	for i, si := range demand {
		for k, p := range ys {
			if p.s == si {
				tab[i][nT+k] = 1
			}
		}
		tab[i][nT+nY+nS+i] = 1
		tab[i][nv] = float64(shapes[si].Count)
		basis[i] = nT + nY + nS + i
	}
	for r, c := range caps {
		i := nA + r
		a := at(types[c.t].Capacity, c.d)
		for k, p := range ys {
			if p.t == c.t {
				tab[i][nT+k] = at(shapes[p.s].Requests, c.d) / a
			}
		}
		tab[i][c.t] = -1
		tab[i][nT+nY+r] = 1
		basis[i] = nT + nY + r
	}
	artificial := func(j int) bool { return j >= nT+nY+nS && j < nv }
	pivot := func(r, e int) {
		p := tab[r][e]
		for k := range tab[r] {
			tab[r][k] /= p
		}
		for i := range tab {
			if f := tab[i][e]; i != r && f != 0 {
				for k := range tab[i] {
					tab[i][k] -= f * tab[r][k]
				}
			}
		}
		basis[r] = e
	}
	run := func(cost []float64, allowed func(int) bool) float64 {
		for range 100000 {
			enter := -1
			for j := range nv {
				if !allowed(j) {
					continue
				}
				d := cost[j]
				for i := range m {
					d -= cost[basis[i]] * tab[i][j]
				}
				if d < -1e-10 {
					enter = j // Bland: lowest index
					break
				}
			}
			if enter < 0 {
				break
			}
			leave := -1
			for i := range m {
				if a := tab[i][enter]; a > 1e-10 {
					r := tab[i][nv] / a
					if leave < 0 {
						leave = i
						continue
					}
					lr := tab[leave][nv] / tab[leave][enter]
					if r < lr-1e-12 || (r <= lr+1e-12 && basis[i] < basis[leave]) {
						leave = i
					}
				}
			}
			if leave < 0 {
				t.Fatal("reference LP unbounded")
			}
			pivot(leave, enter)
		}
		z := 0.0
		for i := range m {
			z += cost[basis[i]] * tab[i][nv]
		}
		return z
	}
	phase1 := make([]float64, nv)
	for j := nT + nY + nS; j < nv; j++ {
		phase1[j] = 1
	}
	if inf := run(phase1, func(int) bool { return true }); inf > 1e-9 {
		t.Fatalf("reference LP infeasible (%v)", inf)
	}
	// Drive artificials out of the basis (the rows are independent, so a
	// non-artificial pivot always exists).
	for i := range m {
		if !artificial(basis[i]) {
			continue
		}
		for j := range nT + nY + nS {
			if math.Abs(tab[i][j]) > 1e-9 {
				pivot(i, j)
				break
			}
		}
	}
	phase2 := make([]float64, nv)
	for ti, it := range types {
		phase2[ti] = it.Price
	}
	return run(phase2, func(j int) bool { return !artificial(j) })
}

// TestAgainstReferenceSimplex cross-checks tiny random instances against an
// independent solver of the original LP, and checks every certificate.
func TestAgainstReferenceSimplex(t *testing.T) {
	for seed := range uint64(300) {
		rng := newRand(seed)
		shapes, types := randomInstance(rng, 1+rng.IntN(6), 1+rng.IntN(5), 2+rng.IntN(3))
		sol, err := Solve(shapes, types)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkSolution(t, shapes, types, sol)
		if want := refSolve(t, shapes, types); !near(sol.Cost, want, 1e-7) {
			t.Errorf("seed %d: Cost = %.12g, reference simplex says %.12g", seed, sol.Cost, want)
		}
	}
}

// TestComplementaryAgainstReference pins the hand-solved instances to the
// reference solver too.
func TestComplementaryAgainstReference(t *testing.T) {
	shapes, types := complementary()
	if got := refSolve(t, shapes, types); !near(got, 1.6, 1e-9) {
		t.Errorf("reference = %v, want 1.6", got)
	}
}

// TestProperties checks seeded random batches of realistic size: the
// certificate (primal feasible, dual feasible, no gap), aggregate ≤ LP ≤
// per-pod, the standalone bound functions, and that pruning the catalog
// first or shuffling the inputs does not change the optimum.
func TestProperties(t *testing.T) {
	seeds := uint64(60)
	if testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		rng := newRand(1000 + seed)
		shapes, types := randomInstance(rng, 5+rng.IntN(120), 1+rng.IntN(40), 3+rng.IntN(2))
		sol, err := Solve(shapes, types)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkSolution(t, shapes, types, sol)

		agg, err := AggregateBound(shapes, types)
		if err != nil || !near(agg, sol.Aggregate, 1e-12) {
			t.Errorf("seed %d: AggregateBound = %v, %v; Solution.Aggregate = %v", seed, agg, err, sol.Aggregate)
		}
		pp, err := PerPodBound(shapes, types)
		if err != nil || !near(pp, sol.PerPod, 1e-12) {
			t.Errorf("seed %d: PerPodBound = %v, %v; Solution.PerPod = %v", seed, pp, err, sol.PerPod)
		}
		if sol.Cost < agg-1e-9*agg || sol.Cost > pp+1e-9*pp {
			t.Errorf("seed %d: want aggregate %v ≤ LP %v ≤ per-pod %v", seed, agg, sol.Cost, pp)
		}

		pruned := Prune(types)
		psol, err := Solve(shapes, pruned)
		if err != nil {
			t.Fatalf("seed %d pruned: %v", seed, err)
		}
		checkSolution(t, shapes, pruned, psol)
		if !near(psol.Cost, sol.Cost, 1e-8) {
			t.Errorf("seed %d: pruning changed the optimum from %v to %v", seed, sol.Cost, psol.Cost)
		}
		if pagg, _ := AggregateBound(shapes, pruned); !near(pagg, agg, 1e-9) {
			t.Errorf("seed %d: pruning changed the aggregate bound from %v to %v", seed, agg, pagg)
		}

		rng.Shuffle(len(shapes), func(i, j int) { shapes[i], shapes[j] = shapes[j], shapes[i] })
		rng.Shuffle(len(types), func(i, j int) { types[i], types[j] = types[j], types[i] })
		ssol, err := Solve(shapes, types)
		if err != nil {
			t.Fatalf("seed %d shuffled: %v", seed, err)
		}
		checkSolution(t, shapes, types, ssol)
		if !near(ssol.Cost, sol.Cost, 1e-8) {
			t.Errorf("seed %d: shuffling changed the optimum from %v to %v", seed, sol.Cost, ssol.Cost)
		}
	}
}

// TestDegenerateInstances feeds highly degenerate batches: identical shapes
// under different names, identical types, and shapes that exactly fill a
// type.
func TestDegenerateInstances(t *testing.T) {
	types := []InstanceType{
		{Name: "a", Capacity: []float64{4000, 16 * gib, 30}, Price: 0.2},
		{Name: "b", Capacity: []float64{4000, 16 * gib, 30}, Price: 0.2},
		{Name: "c", Capacity: []float64{8000, 32 * gib, 60}, Price: 0.4},
		{Name: "d", Capacity: []float64{2000, 4 * gib, 15}, Price: 0.09},
	}
	var shapes []Shape
	for i := range 12 {
		req := []float64{1000, 4 * gib, 1}
		if i%3 == 1 {
			req = []float64{4000, 16 * gib, 1}
		}
		if i%3 == 2 {
			req = []float64{2000, 4 * gib, 1}
		}
		shapes = append(shapes, Shape{Name: fmt.Sprintf("s%d", i), Requests: req, Count: 1 + i%4})
	}
	sol, err := Solve(shapes, types)
	if err != nil {
		t.Fatal(err)
	}
	checkSolution(t, shapes, types, sol)
	if want := refSolve(t, shapes, types); !near(sol.Cost, want, 1e-7) {
		t.Errorf("Cost = %v, reference simplex says %v", sol.Cost, want)
	}
}
