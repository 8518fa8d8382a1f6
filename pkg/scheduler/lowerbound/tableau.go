package lowerbound

import "fmt"

// packLP solves the small packing LP
//
//	maximize   Σ_j c_j·x_j
//	subject to Σ_j A_{ij}·x_j ≤ 1   (rows i = 1..m)
//	           x ≥ 0
//
// with A ≥ 0 and c > 0, by a dense tableau simplex started from the slack
// basis. m is tiny (the number of resource dimensions), n is up to the number
// of shapes. Pricing is Dantzig's rule with a switch to Bland's rule after
// blandAfter consecutive degenerate pivots, as in coverLP.
//
// It is the column-generation pricing problem: the best single-node load of
// one instance type at given pod values c, in units where each dimension's
// capacity is 1.
type packLP struct {
	m, n  int
	w     int       // tableau width: n structural + m slack + 1 right-hand side
	tab   []float64 // (m+1)×w; row m is the objective row
	basis []int     // basic variable of each row
}

// reset sizes the tableau for m rows and n columns and loads it from A
// (row-major, m×n) and c, with the slack basis.
func (p *packLP) reset(m, n int, a, c []float64) {
	p.m, p.n, p.w = m, n, n+m+1
	size := (m + 1) * p.w
	if cap(p.tab) < size {
		p.tab = make([]float64, size)
	}
	p.tab = p.tab[:size]
	clear(p.tab)
	if cap(p.basis) < m {
		p.basis = make([]int, m)
	}
	p.basis = p.basis[:m]
	for i := range m {
		row := p.tab[i*p.w : (i+1)*p.w]
		copy(row[:n], a[i*n:(i+1)*n])
		row[n+i] = 1
		row[p.w-1] = 1
		p.basis[i] = n + i
	}
	obj := p.tab[m*p.w : (m+1)*p.w]
	for j := range n {
		obj[j] = -c[j]
	}
}

// solve pivots to optimality; tol is the reduced-cost tolerance.
func (p *packLP) solve(tol float64) error {
	m, w := p.m, p.w
	obj := p.tab[m*w : (m+1)*w]
	degenerate := 0
	for iter := 0; ; iter++ {
		if iter > 1000+100*(p.n+m) {
			return fmt.Errorf("pricing pivot limit reached: %w", ErrNumerical)
		}
		bland := degenerate >= blandAfter
		enter, best := -1, -tol
		for j := range w - 1 {
			if obj[j] < best {
				enter, best = j, obj[j]
				if bland {
					break
				}
			}
		}
		if enter < 0 {
			return nil
		}
		leave, minRatio := -1, 0.0
		for i := range m {
			a := p.tab[i*w+enter]
			if a <= pivotTol {
				continue
			}
			r := p.tab[i*w+w-1] / a
			switch {
			case leave < 0 || r < minRatio-ratioTieTol*(1+minRatio):
				leave, minRatio = i, r
			case r <= minRatio+ratioTieTol*(1+minRatio):
				if (bland && p.basis[i] < p.basis[leave]) || (!bland && a > p.tab[leave*w+enter]) {
					leave, minRatio = i, min(r, minRatio)
				}
			}
		}
		if leave < 0 {
			return fmt.Errorf("pricing problem is unbounded: %w", ErrNumerical)
		}
		if minRatio <= ratioTieTol {
			degenerate++
		} else {
			degenerate = 0
		}
		p.pivot(leave, enter)
	}
}

func (p *packLP) pivot(r, e int) {
	w := p.w
	pr := p.tab[r*w : (r+1)*w]
	inv := 1 / pr[e]
	for k := range pr {
		pr[k] *= inv
	}
	pr[e] = 1
	for i := 0; i <= p.m; i++ {
		if i == r {
			continue
		}
		row := p.tab[i*w : (i+1)*w]
		f := row[e]
		if f == 0 {
			continue
		}
		for k, v := range pr {
			row[k] -= f * v
		}
		row[e] = 0
	}
	p.basis[r] = e
}

// value returns the optimal objective.
func (p *packLP) value() float64 { return p.tab[p.m*p.w+p.w-1] }

// dual returns the optimal dual value of row i (≥ 0 up to rounding).
func (p *packLP) dual(i int) float64 { return max(p.tab[p.m*p.w+p.n+i], 0) }

// primal calls f for every structural variable with a positive value.
func (p *packLP) primal(f func(j int, x float64)) {
	for i, j := range p.basis {
		if x := p.tab[i*p.w+p.w-1]; j < p.n && x > 0 {
			f(j, x)
		}
	}
}
