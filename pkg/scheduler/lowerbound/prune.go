package lowerbound

// Prune returns the instance types that no other type dominates, in their
// input order. Type u dominates type v when u is no dearer than v and no
// smaller in any dimension, and either strictly better somewhere or identical
// with a name that sorts first (so exactly one of a set of identical types
// survives; identical names fall back to input order). Dropping dominated
// types never changes the LP optimum, the aggregate bound or the per-pod
// bound: whatever fits on a dominated type fits on its dominator, at no
// greater price.
//
// Prune compares every dimension present; Solve prunes on the dimensions the
// batch actually requests, which can drop more. The returned InstanceType
// values share their Capacity slices with the input.
func Prune(types []InstanceType) []InstanceType {
	dims := 0
	for _, t := range types {
		dims = max(dims, len(t.Capacity))
	}
	caps := make([][]float64, len(types))
	prices := make([]float64, len(types))
	names := make([]string, len(types))
	for i, t := range types {
		caps[i] = make([]float64, dims)
		for d := range dims {
			caps[i][d] = at(t.Capacity, d)
		}
		prices[i] = t.Price
		names[i] = t.Name
	}
	keep, _ := undominated(caps, prices, names)
	out := make([]InstanceType, len(keep))
	for i, k := range keep {
		out[i] = types[k]
	}
	return out
}

// undominated returns the indices of the types no other type dominates, in
// increasing order, and for every type the index of a surviving type that
// dominates it (itself when it survives). All capacity vectors have the same
// length.
//
// Dominance is a strict partial order (irreflexive and transitive, thanks to
// the name and index tie-breaks), so every dominated type has an undominated
// dominator.
func undominated(caps [][]float64, prices []float64, names []string) (keep, dominator []int) {
	n := len(caps)
	dominator = make([]int, n)
	for v := range n {
		dominator[v] = v
		for u := range n {
			if u != v && dominates(u, v, caps, prices, names) {
				dominator[v] = -1
				break
			}
		}
		if dominator[v] == v {
			keep = append(keep, v)
		}
	}
	for v := range n {
		if dominator[v] >= 0 {
			continue
		}
		for _, u := range keep {
			if dominates(u, v, caps, prices, names) {
				dominator[v] = u
				break
			}
		}
	}
	return keep, dominator
}

// dominates reports whether type u dominates type v (see Prune).
func dominates(u, v int, caps [][]float64, prices []float64, names []string) bool {
	if prices[u] > prices[v] {
		return false
	}
	strict := prices[u] < prices[v]
	cu, cv := caps[u], caps[v]
	for d := range cu {
		switch {
		case cu[d] < cv[d]:
			return false
		case cu[d] > cv[d]:
			strict = true
		}
	}
	if strict {
		return true
	}
	if names[u] != names[v] {
		return names[u] < names[v]
	}
	return u < v
}
