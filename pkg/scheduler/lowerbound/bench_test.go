package lowerbound

import (
	"fmt"
	"math"
	"testing"
)

// syntheticInstance is n proportional types (type i: i vCPU, 2i GiB, 10i
// pods, $0.1 per vCPU plus $0.1 per GiB) and 30 shapes, CPU in
// {100, 250, 500, 1000, 1500}m by memory in {100, 256, 512, 1024, 2048, 4096}Mi.
func syntheticInstance(n int) ([]Shape, []InstanceType) {
	types := make([]InstanceType, n)
	for i := range types {
		v := float64(i + 1)
		types[i] = InstanceType{
			Name:     fmt.Sprintf("syn-%03d", i+1),
			Capacity: []float64{1000 * v, 2 * v * gib, 10 * v},
			Price:    0.1*v + 0.1*2*v,
		}
	}
	var shapes []Shape
	for _, cpu := range []float64{100, 250, 500, 1000, 1500} {
		for _, mib := range []float64{100, 256, 512, 1024, 2048, 4096} {
			k := len(shapes)
			shapes = append(shapes, Shape{
				Name:     fmt.Sprintf("cpu%v-mem%v", cpu, mib),
				Requests: []float64{cpu, mib * (1 << 20), 1},
				Count:    5 + (7*k)%23,
			})
		}
	}
	return shapes, types
}

// randomCatalog draws random undominated types (CPU, memory, pods, and GPUs
// when dims is 4) until n survive pruning, and returns the survivors: the
// solver's worst case, as no type can be dropped.
func randomCatalog(seed uint64, n, dims int) []InstanceType {
	rng := newRand(seed)
	var types []InstanceType
	serial := 0
	for len(types) < n {
		for range 2 * (n - len(types)) {
			v := math.Round(math.Exp(rng.Float64() * math.Log(192)))
			memGiB := v * math.Exp(rng.Float64()*math.Log(8)) * (0.9 + 0.2*rng.Float64())
			capacity := []float64{1000*v - 100, memGiB * 0.93 * gib, math.Min(110, 8+6*v)}
			price := (0.03*v + 0.004*memGiB) * (0.8 + 0.4*rng.Float64())
			if dims >= 4 {
				gpus := 0.0
				if rng.IntN(8) == 0 {
					gpus = float64(int(1) << rng.IntN(4))
					price += 0.8 * gpus
				}
				capacity = append(capacity, gpus)
			}
			serial++
			types = append(types, InstanceType{Name: fmt.Sprintf("r%05d", serial), Capacity: capacity, Price: price})
		}
		types = Prune(types)
	}
	return types[:n]
}

// randomShapes draws n shapes: CPU 50m–4 vCPU, memory 64Mi–16Gi
// log-uniform, one pod slot, 1–50 pods, and with dims 4 a GPU for one in 10.
func randomShapes(seed uint64, n, dims int) []Shape {
	rng := newRand(seed)
	shapes := make([]Shape, n)
	for i := range shapes {
		req := []float64{
			float64(10 * (5 + rng.IntN(396))),
			math.Round(math.Exp(math.Log(64<<20) + rng.Float64()*math.Log(256))),
			1,
		}
		if dims >= 4 {
			gpu := 0.0
			if rng.IntN(10) == 0 {
				gpu = 1
			}
			req = append(req, gpu)
		}
		shapes[i] = Shape{Name: fmt.Sprintf("shape-%03d", i), Requests: req, Count: 1 + rng.IntN(50)}
	}
	return shapes
}

func BenchmarkSolve(b *testing.B) {
	synShapes, synTypes := syntheticInstance(400)
	cases := []struct {
		name   string
		shapes []Shape
		types  []InstanceType
	}{
		{"synthetic-400x30", synShapes, synTypes},
		{"random-200x100", randomShapes(2, 100, 3), randomCatalog(1, 200, 3)},
		{"random-200x100-gpu", randomShapes(4, 100, 4), randomCatalog(3, 200, 4)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var sol *Solution
			for b.Loop() {
				var err error
				if sol, err = Solve(c.shapes, c.types); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sol.CandidateTypes), "types")
			b.ReportMetric(float64(sol.Rounds), "rounds")
			b.ReportMetric(float64(sol.Columns), "columns")
			b.ReportMetric(float64(sol.Pivots), "pivots")
		})
	}
}

func BenchmarkAggregateBound(b *testing.B) {
	shapes, types := randomShapes(2, 100, 3), randomCatalog(1, 200, 3)
	for b.Loop() {
		if _, err := AggregateBound(shapes, types); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPrune1300(b *testing.B) {
	_, types := randomInstance(newRand(9), 1300, 1, 4)
	for b.Loop() {
		Prune(types)
	}
}
