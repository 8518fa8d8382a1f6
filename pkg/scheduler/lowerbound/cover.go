package lowerbound

import (
	"fmt"
	"math"
)

// column is one column of a covering LP: its cost and its sparse entries.
type column struct {
	cost  float64
	rows  []int32
	vals  []float64
	owner int // candidate instance type the column belongs to; -1 for none
}

// coverLP is a revised primal simplex for covering LPs
//
//	minimize   Σ_j cost_j·λ_j
//	subject to Σ_j A_{ij}·λ_j ≥ b_i   (every row i)
//	           λ ≥ 0
//
// with b > 0 and cost ≥ 0, kept in the equality form A·λ − σ = b with one
// surplus column −e_i per row. It keeps an explicit dense basis inverse,
// updated by a rank-one pivot and recomputed from scratch every
// refactorEvery pivots. Columns may be appended between calls to solve
// (column generation); the basis is kept, so each solve starts warm.
//
// Pricing is partial Dantzig: columns are scanned cyclically in chunks and
// the most negative reduced cost of the first chunk holding an improving
// column enters; optimality is only declared after a full scan. After
// blandAfter consecutive degenerate pivots it switches to Bland's rule
// (lowest-index entering column, lowest-index leaving column among ratio
// ties) until a pivot makes progress. A run of degenerate pivots therefore
// ends (Bland's rule cannot cycle), and every non-degenerate pivot lowers the
// objective, so solve terminates.
type coverLP struct {
	m int
	b []float64

	// Columns, stored flat: column j has cost[j], owner[j] and entries
	// rows/vals[start[j]:start[j+1]].
	cost  []float64
	owner []int
	start []int
	rows  []int32
	vals  []float64

	basis []int     // basis[i]: column basic in row position i
	pos   []int     // pos[j]: row position of column j, or -1
	binv  []float64 // m×m basis inverse, row-major
	xb    []float64 // values of the basic columns
	u     []float64 // duals (simplex multipliers) of the rows
	alpha []float64 // scratch: B⁻¹·A_j of the entering column
	work  []float64 // scratch for refactor: m×m basis matrix

	tolRC     float64 // reduced costs below −tolRC are improving
	next      int     // where partial pricing resumes
	pivots    int     // total pivots so far
	maxPivots int
	since     int // pivots since the last refactor
}

const (
	refactorEvery = 64
	blandAfter    = 25
	pivotTol      = 1e-9  // smallest usable pivot element
	ratioTieTol   = 1e-12 // relative slack for treating ratios as tied
)

// newCoverLP builds the LP with rows b, the given structural columns and a
// surplus column per row, with the first m structural columns as the
// starting basis. That basis must be nonsingular and primal feasible
// (B⁻¹·b ≥ 0); callers use one positive singleton column per row.
func newCoverLP(b []float64, initial []column, costScale float64) (*coverLP, error) {
	m := len(b)
	lp := &coverLP{
		m:         m,
		b:         b,
		basis:     make([]int, m),
		binv:      make([]float64, m*m),
		xb:        make([]float64, m),
		u:         make([]float64, m),
		alpha:     make([]float64, m),
		work:      make([]float64, m*m),
		start:     []int{0},
		tolRC:     1e-11 * costScale,
		maxPivots: 200000 + 200*m,
	}
	for _, c := range initial {
		lp.add(c)
	}
	for i := range m {
		lp.add(column{rows: []int32{int32(i)}, vals: []float64{-1}, owner: -1})
	}
	for i := range m {
		lp.basis[i] = i
		lp.pos[i] = i
	}
	if err := lp.refactor(); err != nil {
		return nil, err
	}
	return lp, nil
}

// add appends a nonbasic column.
func (lp *coverLP) add(c column) {
	lp.cost = append(lp.cost, c.cost)
	lp.owner = append(lp.owner, c.owner)
	lp.rows = append(lp.rows, c.rows...)
	lp.vals = append(lp.vals, c.vals...)
	lp.start = append(lp.start, len(lp.rows))
	lp.pos = append(lp.pos, -1)
}

// columns returns the number of columns.
func (lp *coverLP) columns() int { return len(lp.cost) }

// entries returns the rows and values of column j.
func (lp *coverLP) entries(j int) ([]int32, []float64) {
	lo, hi := lp.start[j], lp.start[j+1]
	return lp.rows[lo:hi], lp.vals[lo:hi]
}

// objective returns the cost of the current basic solution.
func (lp *coverLP) objective() float64 {
	z := 0.0
	for i, j := range lp.basis {
		z += lp.cost[j] * lp.xb[i]
	}
	return z
}

// solve runs primal simplex pivots until no column prices out.
func (lp *coverLP) solve() error {
	degenerate, fresh := 0, false
	for {
		bland := degenerate >= blandAfter
		enter, d := lp.price(bland)
		if enter < 0 {
			if fresh {
				return nil
			}
			// The duals are updated incrementally; recompute them before
			// trusting that nothing prices out.
			lp.duals()
			fresh = true
			continue
		}
		fresh = false
		if lp.pivots >= lp.maxPivots {
			return fmt.Errorf("simplex pivot limit %d reached: %w", lp.maxPivots, ErrNumerical)
		}
		lp.ftran(enter)
		leave := lp.ratio(bland)
		if leave < 0 {
			// Costs are nonnegative, so the LP is bounded; an unbounded ray
			// can only be numerical noise.
			return fmt.Errorf("simplex found an unbounded ray: %w", ErrNumerical)
		}
		step, err := lp.pivot(enter, leave, d)
		if err != nil {
			return err
		}
		if step <= ratioTieTol {
			degenerate++
		} else {
			degenerate = 0
		}
	}
}

// duals computes u = c_B·B⁻¹ from scratch.
func (lp *coverLP) duals() {
	m := lp.m
	clear(lp.u)
	for i, j := range lp.basis {
		c := lp.cost[j]
		if c == 0 {
			continue
		}
		row := lp.binv[i*m : (i+1)*m]
		for k, v := range row {
			lp.u[k] += c * v
		}
	}
}

// reducedCost returns cost_j − u·A_j.
func (lp *coverLP) reducedCost(j int) float64 {
	d := lp.cost[j]
	lo, hi := lp.start[j], lp.start[j+1]
	rows, vals := lp.rows[lo:hi], lp.vals[lo:hi]
	for k, r := range rows {
		d -= lp.u[r] * vals[k]
	}
	return d
}

// price returns the entering column and its reduced cost, or -1 when the
// basis is optimal.
func (lp *coverLP) price(bland bool) (int, float64) {
	n := len(lp.cost)
	if bland {
		for j := range n {
			if lp.pos[j] < 0 {
				if d := lp.reducedCost(j); d < -lp.tolRC {
					return j, d
				}
			}
		}
		return -1, 0
	}
	chunk := max(256, n/8)
	best, bestD := -1, -lp.tolRC
	j := lp.next
	for scanned := 1; scanned <= n; scanned++ {
		if j >= n {
			j = 0
		}
		if lp.pos[j] < 0 {
			if d := lp.reducedCost(j); d < bestD {
				best, bestD = j, d
			}
		}
		j++
		if best >= 0 && scanned%chunk == 0 {
			break
		}
	}
	lp.next = j
	return best, bestD
}

// ftran computes alpha = B⁻¹·A_j.
func (lp *coverLP) ftran(j int) {
	m := lp.m
	rows, vals := lp.entries(j)
	for i := range m {
		row := lp.binv[i*m : (i+1)*m]
		s := 0.0
		for k, r := range rows {
			s += row[r] * vals[k]
		}
		lp.alpha[i] = s
	}
}

// ratio picks the leaving row position for the entering column in alpha, or
// -1 if no row limits the step. Among (nearly) tied ratios it prefers the
// largest pivot element, or under Bland's rule the lowest column index.
func (lp *coverLP) ratio(bland bool) int {
	minRatio := math.Inf(1)
	for i, a := range lp.alpha {
		if a > pivotTol {
			minRatio = min(minRatio, max(lp.xb[i], 0)/a)
		}
	}
	if math.IsInf(minRatio, 1) {
		return -1
	}
	limit := minRatio + ratioTieTol*(1+minRatio)
	leave := -1
	for i, a := range lp.alpha {
		if a <= pivotTol || max(lp.xb[i], 0)/a > limit {
			continue
		}
		switch {
		case leave < 0:
			leave = i
		case bland && lp.basis[i] < lp.basis[leave]:
			leave = i
		case !bland && a > lp.alpha[leave]:
			leave = i
		}
	}
	return leave
}

// pivot brings column enter, of reduced cost d, into the basis at row
// position r and returns the step length. The duals move along the new row r
// of B⁻¹ so that the entering column's reduced cost becomes 0.
func (lp *coverLP) pivot(enter, r int, d float64) (float64, error) {
	m := lp.m
	a := lp.alpha[r]
	step := max(lp.xb[r], 0) / a
	for i, ai := range lp.alpha {
		if i != r && ai != 0 {
			lp.xb[i] = max(lp.xb[i]-step*ai, 0)
		}
	}
	lp.xb[r] = step
	pr := lp.binv[r*m : (r+1)*m]
	inv := 1 / a
	for k := range pr {
		pr[k] *= inv
	}
	for i, ai := range lp.alpha {
		if i == r || ai == 0 {
			continue
		}
		row := lp.binv[i*m : (i+1)*m]
		for k, v := range pr {
			row[k] -= ai * v
		}
	}
	for k, v := range pr {
		lp.u[k] += d * v
	}
	lp.pos[lp.basis[r]] = -1
	lp.basis[r] = enter
	lp.pos[enter] = r
	lp.pivots++
	lp.since++
	if lp.since >= refactorEvery {
		if err := lp.refactor(); err != nil {
			return 0, err
		}
	}
	return step, nil
}

// refactor recomputes B⁻¹ from the basic columns by Gauss-Jordan elimination
// with partial pivoting, and the basic values and duals from it.
func (lp *coverLP) refactor() error {
	m := lp.m
	bm := lp.work
	clear(bm)
	for i, j := range lp.basis {
		rows, vals := lp.entries(j)
		for k, r := range rows {
			bm[int(r)*m+i] = vals[k]
		}
	}
	inv := lp.binv
	clear(inv)
	for i := range m {
		inv[i*m+i] = 1
	}
	for col := range m {
		p, pv := -1, 0.0
		for i := col; i < m; i++ {
			if v := math.Abs(bm[i*m+col]); v > pv {
				p, pv = i, v
			}
		}
		if pv < 1e-13 {
			return fmt.Errorf("simplex basis is singular: %w", ErrNumerical)
		}
		if p != col {
			swapRows(bm, m, p, col)
			swapRows(inv, m, p, col)
		}
		d := 1 / bm[col*m+col]
		scaleRow(bm, m, col, d)
		scaleRow(inv, m, col, d)
		for i := range m {
			if i == col {
				continue
			}
			f := bm[i*m+col]
			if f == 0 {
				continue
			}
			for k := range m {
				bm[i*m+k] -= f * bm[col*m+k]
				inv[i*m+k] -= f * inv[col*m+k]
			}
		}
	}
	for i := range m {
		s := 0.0
		row := inv[i*m : (i+1)*m]
		for k, v := range row {
			s += v * lp.b[k]
		}
		lp.xb[i] = max(s, 0)
	}
	lp.duals()
	lp.since = 0
	return nil
}

func swapRows(a []float64, m, i, j int) {
	ri, rj := a[i*m:(i+1)*m], a[j*m:(j+1)*m]
	for k := range ri {
		ri[k], rj[k] = rj[k], ri[k]
	}
}

func scaleRow(a []float64, m, i int, f float64) {
	r := a[i*m : (i+1)*m]
	for k := range r {
		r[k] *= f
	}
}
