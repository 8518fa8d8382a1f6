package lowerbound

import (
	"fmt"
	"math"
)

// PerPodBound returns Σ_s Count_s · min_t Price_t·max_d(Requests_{s,d}/Capacity_{t,d}):
// the cost of running every pod alone on the cheapest fractional share of a
// node it fits, where a pod's share is its largest fraction of the node over
// the dimensions.
//
// It is NOT a lower bound on the cost of packing the batch: pods with
// complementary requests (one CPU-heavy, one memory-heavy) can share a
// balanced node for less than the sum of their shares. It is the cost of one
// feasible LP solution, so it bounds the LP optimum from above
// (Solve(...).Cost ≤ PerPodBound). It returns ErrInfeasible naming the first
// shape with pods that fits no instance type.
func PerPodBound(shapes []Shape, types []InstanceType) (float64, error) {
	dims, err := validate(shapes, types)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, s := range shapes {
		if s.Count == 0 {
			continue
		}
		best := math.Inf(1)
		for _, t := range types {
			if fits(s.Requests, t.Capacity, dims) {
				best = min(best, t.Price*share(s.Requests, t.Capacity, dims))
			}
		}
		if math.IsInf(best, 1) {
			return 0, fmt.Errorf("shape %q fits no instance type: %w", s.Name, ErrInfeasible)
		}
		total += float64(s.Count) * best
	}
	return total, nil
}

// AggregateBound returns the optimum of the aggregate relaxation
//
//	minimize Σ_t Price_t·n_t  subject to  Σ_t Capacity_{t,d}·n_t ≥ Σ_s Count_s·Requests_{s,d}  (every d),  n ≥ 0:
//
// the cheapest fractional fleet whose total capacity covers the batch's
// total requests, ignoring that each pod must land whole on one node type
// (so pods too big for a cheap type still count against its capacity). It
// relaxes the LP of Solve, so it is a lower bound on the LP optimum and on
// any packing, but usually a loose one. It returns ErrInfeasible naming the
// first shape with pods that fits no instance type.
func AggregateBound(shapes []Shape, types []InstanceType) (float64, error) {
	dims, err := validate(shapes, types)
	if err != nil {
		return 0, err
	}
	in, err := newInstance(shapes, types, dims)
	if err != nil {
		return 0, err
	}
	return in.aggregate()
}

// aggregate solves the aggregate relaxation over the undominated types (a
// dominated type is never needed: its dominator covers as much for no more).
//
// Rows are scaled so each demand is 1. The starting basis is one artificial
// column per dimension d, "one unit of d alone", priced at the cheapest rate
// any type offers for d. Any solution using artificials can be rewritten
// without them at no higher cost (replace a unit of d by the matching
// fraction of that cheapest type, which covers d and maybe more), so adding
// them does not change the optimum.
func (in *instance) aggregate() (float64, error) {
	k := len(in.dims)
	if k == 0 || len(in.kept) == 0 {
		return 0, nil
	}
	demand := make([]float64, k)
	for s, r := range in.req {
		for d, v := range r {
			demand[d] += in.count[s] * v
		}
	}
	costScale := 0.0
	artificial := make([]column, k)
	for d := range k {
		rate := math.Inf(1)
		for _, t := range in.kept {
			if c := in.caps[t][d]; c > 0 {
				rate = min(rate, in.prices[t]/c)
			}
		}
		if math.IsInf(rate, 1) {
			return 0, fmt.Errorf("no instance type provides dimension %d: %w", in.dims[d], ErrInfeasible)
		}
		artificial[d] = column{cost: rate * demand[d], rows: []int32{int32(d)}, vals: []float64{1}, owner: -1}
		costScale = max(costScale, artificial[d].cost)
	}
	for _, t := range in.kept {
		costScale = max(costScale, in.prices[t])
	}
	if costScale == 0 {
		return 0, nil
	}
	ones := make([]float64, k)
	for d := range ones {
		ones[d] = 1
	}
	lp, err := newCoverLP(ones, artificial, costScale)
	if err != nil {
		return 0, err
	}
	for _, t := range in.kept {
		col := column{cost: in.prices[t], owner: t}
		for d, c := range in.caps[t] {
			if c > 0 {
				col.rows = append(col.rows, int32(d))
				col.vals = append(col.vals, c/demand[d])
			}
		}
		if len(col.rows) > 0 {
			lp.add(col)
		}
	}
	if err := lp.solve(); err != nil {
		return 0, err
	}
	return lp.objective(), nil
}
