package lowerbound

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Solution is the optimum of the LP relaxation for one batch.
type Solution struct {
	// Cost is the LP optimum in $/hour: the cost of the fractional packing
	// in Nodes and Assign. No integral packing of the batch onto these
	// instance types costs less (up to the solver tolerance, see Bound).
	Cost float64
	// Bound is the objective of the dual solution in ShapeValues and
	// ResourcePrices, which is dual feasible by construction, so by weak
	// duality a lower bound on the LP optimum and on any packing. It agrees
	// with Cost to about 1e-9 relative; Cost − Bound is the solver's
	// optimality gap.
	Bound float64
	// Aggregate is AggregateBound of the batch: the cheapest fleet whose
	// total capacity covers the batch's total requests, ignoring that each
	// pod must fit on one node type. Aggregate ≤ Cost (up to rounding).
	Aggregate float64
	// PerPod is PerPodBound of the batch: every pod alone on the cheapest
	// fractional share of a node it fits. Cost ≤ PerPod.
	PerPod float64

	// Nodes is the fractional number of nodes of each instance type used,
	// sorted by type name; types with no nodes are left out.
	Nodes []NodeCount
	// Assign is the fractional number of pods of each shape on each type
	// (the y variables), sorted by shape (in input order), then type name;
	// zero entries are left out. For every shape the pods sum to its Count.
	Assign []Placement
	// Patterns are the LP's columns in its optimal basis: node load patterns,
	// each one node of an instance type holding a fractional number of pods
	// of each shape, run on a fractional number of nodes. They are the plan a
	// packer can round into whole nodes: Σ Nodes·Pods covers every shape's
	// Count (it may exceed it a little; Assign is the exact cover) at a cost
	// of Σ Nodes·price ≥ Cost. Sorted by type name, then by Nodes, most
	// first. Shapes that request nothing appear in no pattern.
	Patterns []Pattern

	// ShapeValues holds, per input shape, the dual value of its demand row:
	// the marginal cost in $/hour of one more pod of that shape (0 for
	// shapes with Count 0 or no requests).
	ShapeValues []float64
	// ResourcePrices holds, per input instance type and dimension, the dual
	// price in $/hour of one unit of that resource on that type. Together
	// with ShapeValues it certifies Bound: for every type t,
	// Σ_d Capacity[d]·ResourcePrices[t][d] ≤ Price, and for every shape s
	// that fits t, ShapeValues[s] ≤ Σ_d Requests[d]·ResourcePrices[t][d].
	ResourcePrices [][]float64

	// CandidateTypes is the number of instance types left after pruning
	// dominated types on the dimensions the batch requests.
	CandidateTypes int
	// PrunedTypes is the number of instance types pruning removed.
	PrunedTypes int
	// Rounds is the number of column-generation rounds.
	Rounds int
	// Columns is the number of load patterns generated, including the
	// initial one per shape.
	Columns int
	// Pivots is the number of simplex pivots on the master problem.
	Pivots int
}

// NodeCount is a fractional node count of one instance type.
type NodeCount struct {
	// Type is the instance type name.
	Type string
	// Nodes is the fractional number of nodes.
	Nodes float64
}

// Pattern is one column of the LP: a node of one instance type holding
// Pods[s] pods of input shape s (fractional), run on Nodes nodes.
type Pattern struct {
	// Type is the instance type name.
	Type string
	// TypeIndex is the instance type's position in the types passed to Solve.
	TypeIndex int
	// Nodes is the fractional number of nodes running the pattern (> 0).
	Nodes float64
	// Pods holds, per input shape (indexed like the shapes passed to Solve),
	// the fractional number of its pods on one node of the pattern.
	Pods []float64
}

// Placement is a fractional number of pods of one shape on one type.
type Placement struct {
	// Shape is the shape name.
	Shape string
	// Type is the instance type name.
	Type string
	// Pods is the fractional number of pods.
	Pods float64
}

// instance is a batch reduced to what the LP needs: the dimensions some pod
// requests, the shapes with pods and requests, and the undominated instance
// types that fit at least one of them.
type instance struct {
	dims []int // active dimensions, as input positions

	shape []int       // LP shape → input shape index
	req   [][]float64 // LP shape → requests on active dimensions
	count []float64   // LP shape → pod count
	free  []int       // input indices of shapes with pods but no requests

	kept      []int       // undominated input types, in input order
	dominator []int       // input type → undominated input type dominating it
	caps      [][]float64 // input type → capacity on active dimensions
	prices    []float64   // input type → price

	typ   []int       // candidate → input type index
	capa  [][]float64 // candidate → capacity on active dimensions
	price []float64   // candidate → price
	fit   [][]int32   // candidate → LP shapes that fit
	rows  [][]int     // candidate → active-dimension positions with capacity
	rho   [][]float64 // candidate → len(rows)×len(fit), row-major: req/capa
}

func newInstance(shapes []Shape, types []InstanceType, dims int) (*instance, error) {
	in := &instance{}
	for d := range dims {
		for _, s := range shapes {
			if s.Count > 0 && at(s.Requests, d) > 0 {
				in.dims = append(in.dims, d)
				break
			}
		}
	}
	for i, s := range shapes {
		if s.Count == 0 {
			continue
		}
		if !slices.ContainsFunc(types, func(t InstanceType) bool { return fits(s.Requests, t.Capacity, dims) }) {
			return nil, fmt.Errorf("shape %q fits no instance type: %w", s.Name, ErrInfeasible)
		}
		r := project(s.Requests, in.dims)
		if !slices.ContainsFunc(r, func(v float64) bool { return v > 0 }) {
			in.free = append(in.free, i)
			continue
		}
		in.shape = append(in.shape, i)
		in.req = append(in.req, r)
		in.count = append(in.count, float64(s.Count))
	}

	caps := make([][]float64, len(types))
	prices := make([]float64, len(types))
	names := make([]string, len(types))
	for i, t := range types {
		caps[i] = project(t.Capacity, in.dims)
		prices[i], names[i] = t.Price, t.Name
	}
	in.kept, in.dominator = undominated(caps, prices, names)
	in.caps, in.prices = caps, prices

	k := len(in.dims)
	for _, ti := range in.kept {
		var fit []int32
		for s, r := range in.req {
			if fits(r, caps[ti], k) {
				fit = append(fit, int32(s))
			}
		}
		if len(fit) == 0 {
			continue
		}
		var rows []int
		for d, c := range caps[ti] {
			if c > 0 {
				rows = append(rows, d)
			}
		}
		rho := make([]float64, len(rows)*len(fit))
		for i, d := range rows {
			for j, s := range fit {
				rho[i*len(fit)+j] = in.req[s][d] / caps[ti][d]
			}
		}
		in.typ = append(in.typ, ti)
		in.capa = append(in.capa, caps[ti])
		in.price = append(in.price, prices[ti])
		in.fit = append(in.fit, fit)
		in.rows = append(in.rows, rows)
		in.rho = append(in.rho, rho)
	}
	return in, nil
}

func project(v []float64, dims []int) []float64 {
	out := make([]float64, len(dims))
	for i, d := range dims {
		out[i] = at(v, d)
	}
	return out
}

// Solve computes the LP relaxation of packing shapes onto types at least
// cost (see the package documentation for the LP). It returns ErrInfeasible,
// naming the shape, when a shape with pods fits no instance type, and
// ErrInvalidInput for malformed arguments. The result is deterministic: the
// same arguments give bit-for-bit the same Solution.
func Solve(shapes []Shape, types []InstanceType) (*Solution, error) {
	dims, err := validate(shapes, types)
	if err != nil {
		return nil, err
	}
	in, err := newInstance(shapes, types, dims)
	if err != nil {
		return nil, err
	}
	sol := &Solution{
		ShapeValues:    make([]float64, len(shapes)),
		ResourcePrices: make([][]float64, len(types)),
		CandidateTypes: len(in.kept),
		PrunedTypes:    len(types) - len(in.kept),
	}
	for i := range types {
		sol.ResourcePrices[i] = make([]float64, dims)
	}
	if sol.Aggregate, err = in.aggregate(); err != nil {
		return nil, err
	}
	cg := newColgen(in)
	if len(in.shape) > 0 {
		if err := cg.run(); err != nil {
			return nil, err
		}
		sol.Rounds, sol.Columns, sol.Pivots = cg.rounds, cg.lp.columns()-len(in.shape), cg.lp.pivots
		sol.PerPod = cg.perPod
	}
	if err := in.primal(cg, sol, shapes, types); err != nil {
		return nil, err
	}
	in.certificate(cg, sol, types)
	return sol, nil
}

// colgen is the column-generation (Dantzig-Wolfe) form of the LP. A column
// is a load pattern: one node of candidate type t holding x_s pods of each
// shape s, with Σ_s x_s·r_s ≤ a_t; it costs p_t. The master covering LP
// chooses how many nodes λ run each pattern so that every shape's pods are
// covered. Since nodes are fractional, the master over all patterns is
// exactly the LP of the package documentation, and it suffices to generate
// the vertices of each type's pattern polytope: given master duals u, the
// best pattern of type t maximizes u·x over that polytope (a packing LP with
// one row per dimension), and it improves the master iff u·x > p_t.
type colgen struct {
	in        *instance
	lp        *coverLP
	pack      packLP
	costScale float64
	perPod    float64
	rounds    int

	// Results of the last pricing round, per candidate.
	z []float64   // best pattern value u·x
	w [][]float64 // optimal pricing duals, per row of in.rows
	// Scratch.
	a, c []float64
	sel  []int32
}

const (
	// gapTol is the relative gap between the master objective and the
	// Lagrangian (Farley) bound at which column generation stops.
	gapTol = 1e-10
	// maxRounds caps column generation; it is not reached in practice.
	maxRounds = 100000
)

func newColgen(in *instance) *colgen {
	cg := &colgen{in: in, z: make([]float64, len(in.typ)), w: make([][]float64, len(in.typ))}
	for t := range in.typ {
		cg.w[t] = make([]float64, len(in.rows[t]))
		cg.costScale = max(cg.costScale, in.price[t])
	}
	if cg.costScale == 0 {
		cg.costScale = 1
	}
	return cg
}

func (cg *colgen) run() error {
	in := cg.in
	// Start from each shape alone on its cheapest fractional share of a
	// node: a feasible basis whose cost is the per-pod bound.
	initial := make([]column, len(in.shape))
	for s := range in.shape {
		best, bestCost, bestShare := -1, math.Inf(1), 0.0
		for t := range in.typ {
			if !fits(in.req[s], in.capa[t], len(in.dims)) {
				continue
			}
			f := share(in.req[s], in.capa[t], len(in.dims))
			if c := in.price[t] * f; c < bestCost {
				best, bestCost, bestShare = t, c, f
			}
		}
		initial[s] = column{
			cost:  in.price[best],
			rows:  []int32{int32(s)},
			vals:  []float64{1 / bestShare},
			owner: best,
		}
		cg.perPod += in.count[s] * bestCost
	}
	lp, err := newCoverLP(in.count, initial, cg.costScale)
	if err != nil {
		return err
	}
	cg.lp = lp
	u := make([]float64, len(in.shape))
	type candidate struct {
		col   column
		score float64
	}
	var improving []candidate
	for cg.rounds = 1; cg.rounds <= maxRounds; cg.rounds++ {
		if err := lp.solve(); err != nil {
			return err
		}
		obj := lp.objective()
		dual, umax := 0.0, 0.0
		for s, v := range lp.u {
			u[s] = max(v, 0)
			dual += in.count[s] * u[s]
			umax = max(umax, u[s])
		}
		kappa := 1.0
		improving = improving[:0]
		for t := range in.typ {
			col, err := cg.price(t, u, 1e-12*umax)
			if err != nil {
				return err
			}
			p, z := in.price[t], cg.z[t]
			if z > p {
				kappa = max(kappa, z/p) // +Inf when p == 0
			}
			if z > p*(1+1e-10)+1e-13*cg.costScale && len(col.rows) > 0 {
				improving = append(improving, candidate{col, (p - z) / z})
			}
		}
		// Farley's bound: u/κ is dual feasible, so Σ c·u/κ ≤ optimum.
		if obj-dual/kappa <= gapTol*obj || len(improving) == 0 {
			return nil
		}
		slices.SortStableFunc(improving, func(a, b candidate) int { return cmp.Compare(a.score, b.score) })
		for _, c := range improving {
			lp.add(c.col)
		}
	}
	return fmt.Errorf("column generation did not converge in %d rounds: %w", maxRounds, ErrNumerical)
}

// price solves the pricing problem of candidate t at shape values u, with
// reduced-cost tolerance tol, stores its value and duals in cg.z[t] and
// cg.w[t], and returns the best pattern as a master column (with no rows
// when no shape has value).
func (cg *colgen) price(t int, u []float64, tol float64) (column, error) {
	in := cg.in
	fit, rows, rho := in.fit[t], in.rows[t], in.rho[t]
	cg.sel = cg.sel[:0]
	cg.c = cg.c[:0]
	for j, s := range fit {
		if u[s] > 0 {
			cg.sel = append(cg.sel, int32(j))
			cg.c = append(cg.c, u[s])
		}
	}
	n, m := len(cg.sel), len(rows)
	clear(cg.w[t])
	cg.z[t] = 0
	if n == 0 {
		return column{owner: t}, nil
	}
	cg.a = slices.Grow(cg.a[:0], m*n)[:m*n]
	for i := range m {
		for k, j := range cg.sel {
			cg.a[i*n+k] = rho[i*len(fit)+int(j)]
		}
	}
	cg.pack.reset(m, n, cg.a, cg.c)
	if err := cg.pack.solve(tol); err != nil {
		return column{}, err
	}
	cg.z[t] = cg.pack.value()
	for i := range m {
		cg.w[t][i] = cg.pack.dual(i)
	}
	col := column{cost: in.price[t], owner: t}
	cg.pack.primal(func(k int, x float64) {
		col.rows = append(col.rows, fit[cg.sel[k]])
		col.vals = append(col.vals, x)
	})
	return col, nil
}

// primal turns the master solution into node counts and pod assignments,
// with the demand rows met exactly and every node count recomputed as the
// load of its type, which can only lower the cost.
func (in *instance) primal(cg *colgen, sol *Solution, shapes []Shape, types []InstanceType) error {
	nt, ns := len(in.typ), len(in.shape)
	y := make([]float64, ns*nt) // y[s*nt+t]
	if cg.lp != nil {
		for i, j := range cg.lp.basis {
			t, lam := cg.lp.owner[j], cg.lp.xb[i]
			if t < 0 || lam <= 0 {
				continue
			}
			rows, vals := cg.lp.entries(j)
			pat := Pattern{Type: types[in.typ[t]].Name, TypeIndex: in.typ[t], Nodes: lam, Pods: make([]float64, len(shapes))}
			for k, s := range rows {
				y[int(s)*nt+t] += lam * vals[k]
				pat.Pods[in.shape[s]] += vals[k]
			}
			sol.Patterns = append(sol.Patterns, pat)
		}
		slices.SortStableFunc(sol.Patterns, func(a, b Pattern) int {
			if c := cmp.Compare(a.Type, b.Type); c != 0 {
				return c
			}
			return cmp.Compare(b.Nodes, a.Nodes)
		})
	}
	k := len(in.dims)
	order := make([]int, 0, nt)
	for s := range ns {
		ys := y[s*nt : (s+1)*nt]
		// Remove over-coverage from the dearest placements first, then drop
		// dust and rescale so the pods sum to the count exactly.
		total := 0.0
		order = order[:0]
		for t, v := range ys {
			if v > 0 {
				total += v
				order = append(order, t)
			}
		}
		perPod := func(t int) float64 { return in.price[t] * share(in.req[s], in.capa[t], k) }
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(perPod(b), perPod(a)) })
		excess := total - in.count[s]
		for _, t := range order {
			if excess <= 0 {
				break
			}
			cut := min(excess, ys[t])
			ys[t] -= cut
			excess -= cut
		}
		total = 0
		for t, v := range ys {
			if v < 1e-9*in.count[s] {
				ys[t] = 0
			}
			total += ys[t]
		}
		if !(total > 0) {
			return fmt.Errorf("shape %q lost its pods in the master solution: %w", shapes[in.shape[s]].Name, ErrNumerical)
		}
		f := in.count[s] / total
		for t := range ys {
			ys[t] *= f
		}
	}
	cost := 0.0
	nodes := make([]float64, nt)
	for t := range nt {
		for d, c := range in.capa[t] {
			if c == 0 {
				continue
			}
			load := 0.0
			for s := range ns {
				load += y[s*nt+t] * in.req[s][d]
			}
			nodes[t] = max(nodes[t], load/c)
		}
		cost += in.price[t] * nodes[t]
	}

	// Pods that request nothing ride along on the first node type used, or
	// on the cheapest candidate when there is none.
	host := ""
	if len(in.free) > 0 {
		best := -1
		for t := range nt {
			if nodes[t] > 0 && (best < 0 || types[in.typ[t]].Name < types[in.typ[best]].Name) {
				best = t
			}
		}
		if best >= 0 {
			host = types[in.typ[best]].Name
		} else {
			for _, ti := range in.kept {
				if best < 0 || types[ti].Price < types[best].Price {
					best = ti
				}
			}
			if best >= 0 {
				host = types[best].Name
			}
		}
	}

	sol.Cost = cost
	for t := range nt {
		if nodes[t] > 0 {
			sol.Nodes = append(sol.Nodes, NodeCount{Type: types[in.typ[t]].Name, Nodes: nodes[t]})
		}
	}
	slices.SortFunc(sol.Nodes, func(a, b NodeCount) int { return cmp.Compare(a.Type, b.Type) })
	ls := 0
	for i, sh := range shapes {
		start := len(sol.Assign)
		switch {
		case ls < ns && in.shape[ls] == i:
			for t := range nt {
				if v := y[ls*nt+t]; v > 0 {
					sol.Assign = append(sol.Assign, Placement{Shape: sh.Name, Type: types[in.typ[t]].Name, Pods: v})
				}
			}
			ls++
		case sh.Count > 0 && host != "":
			sol.Assign = append(sol.Assign, Placement{Shape: sh.Name, Type: host, Pods: float64(sh.Count)})
		}
		slices.SortFunc(sol.Assign[start:], func(a, b Placement) int { return cmp.Compare(a.Type, b.Type) })
	}
	return nil
}

// certificate builds a dual feasible solution from the last pricing round:
// each candidate's pricing duals, turned into $/unit resource prices and
// scaled down where the type's prices would exceed its node price; each
// shape value cut to what every type it fits can pay; dominated types
// priced like their dominator.
func (in *instance) certificate(cg *colgen, sol *Solution, types []InstanceType) {
	if cg.lp == nil {
		return
	}
	for t, ti := range in.typ {
		w := sol.ResourcePrices[ti]
		total := 0.0
		for i, d := range in.rows[t] {
			w[in.dims[d]] = cg.w[t][i] / in.capa[t][d]
			total += cg.w[t][i]
		}
		if p := in.price[t]; total > p {
			f := p / total
			for d := range w {
				w[d] *= f
			}
		}
	}
	bound := 0.0
	for s, si := range in.shape {
		v := max(cg.lp.u[s], 0)
		for t, ti := range in.typ {
			if !fits(in.req[s], in.capa[t], len(in.dims)) {
				continue
			}
			pay := 0.0
			for d, dim := range in.dims {
				pay += in.req[s][d] * sol.ResourcePrices[ti][dim]
			}
			v = min(v, pay)
		}
		sol.ShapeValues[si] = v
		bound += in.count[s] * v
	}
	sol.Bound = bound
	for ti := range types {
		if dom := in.dominator[ti]; dom != ti {
			copy(sol.ResourcePrices[ti], sol.ResourcePrices[dom])
		}
	}
}
