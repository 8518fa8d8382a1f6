package disruption

import (
	"fmt"
	"math/rand"
	"testing"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// BenchmarkDecide times one decision on large clusters and reports the $/hour the command
// found saves.
func BenchmarkDecide(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			np := builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true}, func(np *karpv1.NodePool) {
				np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "10%"}}
			})
			c := randomCluster(rand.New(rand.NewSource(1)), nodes, np)
			var d *Decision
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d = Decide(c.in)
			}
			b.StopTimer()
			saved, moved := 0.0, 0
			if d.Command != nil {
				saved, moved = d.Command.Savings, len(d.Command.Candidates)
			}
			b.ReportMetric(saved, "$/h-saved")
			b.ReportMetric(float64(moved), "nodes")
			b.ReportMetric(c.cost(), "$/h-cluster")
		})
	}
}
