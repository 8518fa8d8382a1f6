package packing

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// BenchmarkCompute measures what the disruption controller's minute-by-minute measure costs:
// the pods of a fleet (a mix of web-service shapes) re-packed from scratch on a typical
// NodePool of the real EC2 catalog (c, m, r of generation 5 or newer, on demand, 3 zones).
func BenchmarkCompute(b *testing.B) {
	types, err := cloudprovider.DefaultInstanceTypes(cloudprovider.InstanceTypeOptions{
		Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}, CapacityTypes: []string{karpv1.CapacityTypeOnDemand},
	})
	if err != nil {
		b.Fatal(err)
	}
	np := &scheduler.NodePool{Name: "default", InstanceTypes: types, Requirements: scheduling.NewRequirements(
		scheduling.MustRequirement(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r"),
		scheduling.MustRequirement(awsv1.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "4"),
		scheduling.MustRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
	)}
	shapes := []struct{ cpu, memory string }{{"250m", "512Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"2", "4Gi"}, {"500m", "4Gi"}, {"1500m", "1Gi"}}
	for _, n := range []int{100, 1000, 5000} {
		r := rand.New(rand.NewSource(1))
		ps := make([]*corev1.Pod, n)
		for i := range ps {
			s := shapes[r.Intn(len(shapes))]
			ps[i] = builders.Pod(builders.PodOptions{Name: fmt.Sprintf("p%d", i), CPU: s.cpu, Memory: s.memory})
		}
		in := Input{Pools: []Pool{{NodePool: np, Pods: ps, Current: 1, Nodes: 1}}}
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var last *Result
			for b.Loop() {
				last = Compute(in)
			}
			b.ReportMetric(last.Repacked/last.Bound, "repacked/bound")
		})
	}
}
