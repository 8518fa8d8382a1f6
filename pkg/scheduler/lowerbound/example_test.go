package lowerbound_test

import (
	"fmt"

	"github.com/openkarpenter/karpenter/pkg/scheduler/lowerbound"
)

// A CPU-heavy and a memory-heavy shape are cheapest together on a balanced
// type: two pairs fill an m.xlarge exactly. The per-pod bound, each pod alone
// on its own best type, misses that and overestimates.
func ExampleSolve() {
	const gib = 1 << 30
	shapes := []lowerbound.Shape{
		{Name: "api", Requests: []float64{1500, 2 * gib, 1}, Count: 6},
		{Name: "cache", Requests: []float64{500, 6 * gib, 1}, Count: 6},
	}
	types := []lowerbound.InstanceType{
		{Name: "c.xlarge", Capacity: []float64{4000, 8 * gib, 58}, Price: 0.17},
		{Name: "m.xlarge", Capacity: []float64{4000, 16 * gib, 58}, Price: 0.192},
		{Name: "r.xlarge", Capacity: []float64{4000, 32 * gib, 58}, Price: 0.252},
		{Name: "m-old.xlarge", Capacity: []float64{4000, 16 * gib, 58}, Price: 0.2}, // dominated by m.xlarge
	}
	sol, err := lowerbound.Solve(shapes, types)
	if err != nil {
		panic(err)
	}
	fmt.Printf("LP optimum $%.4f/h (dual bound $%.4f/h)\n", sol.Cost, sol.Bound)
	fmt.Printf("aggregate  $%.4f/h\n", sol.Aggregate)
	fmt.Printf("per-pod    $%.4f/h\n", sol.PerPod)
	for _, n := range sol.Nodes {
		fmt.Printf("%s × %.3f\n", n.Type, n.Nodes)
	}
	for _, p := range sol.Assign {
		fmt.Printf("%s on %s: %.3f pods\n", p.Shape, p.Type, p.Pods)
	}
	fmt.Println("pruned types:", sol.PrunedTypes)
	// Output:
	// LP optimum $0.5760/h (dual bound $0.5760/h)
	// aggregate  $0.5760/h
	// per-pod    $0.6660/h
	// m.xlarge × 3.000
	// api on m.xlarge: 6.000 pods
	// cache on m.xlarge: 6.000 pods
	// pruned types: 1
}
