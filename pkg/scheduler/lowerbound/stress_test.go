package lowerbound

import (
	"os"
	"testing"
	"time"
)

// TestStress is the long randomized check, skipped unless
// LOWERBOUND_STRESS=1 (about a minute on 2 cores): 3,000 tiny instances
// against the reference simplex, and 150 instances of up to ~1,300 types ×
// 300 shapes, some with huge counts or tiny prices, against the certificate.
func TestStress(t *testing.T) {
	if os.Getenv("LOWERBOUND_STRESS") != "1" {
		t.Skip("set LOWERBOUND_STRESS=1 to run")
	}
	for seed := range uint64(3000) {
		rng := newRand(50000 + seed)
		shapes, types := randomInstance(rng, 1+rng.IntN(7), 1+rng.IntN(6), 2+rng.IntN(3))
		sol, err := Solve(shapes, types)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkSolution(t, shapes, types, sol)
		if want := refSolve(t, shapes, types); !near(sol.Cost, want, 1e-7) {
			t.Errorf("seed %d: Cost = %.12g, reference simplex says %.12g", seed, sol.Cost, want)
		}
	}
	var worst time.Duration
	for seed := range uint64(150) {
		rng := newRand(90000 + seed)
		nT, nS := 50+rng.IntN(1300), 1+rng.IntN(300)
		shapes, types := randomInstance(rng, nT, nS, 3+rng.IntN(2))
		if seed%3 == 0 {
			for i := range shapes {
				shapes[i].Count *= 1 + rng.IntN(5000)
			}
		}
		if seed%5 == 0 {
			for i := range types {
				types[i].Price *= 1e-4
			}
		}
		start := time.Now()
		sol, err := Solve(shapes, types)
		worst = max(worst, time.Since(start))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkSolution(t, shapes, types, sol)
	}
	t.Logf("slowest large solve: %v", worst)
}
