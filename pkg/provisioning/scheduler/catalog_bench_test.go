package scheduler

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/provisioning/lowerbound"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// webMix is the documented "web service" workload of the catalog benchmark: the requests a
// fleet of microservices typically asks for, by share of pods.
var webMix = []struct {
	share       float64
	cpu, memory string
	what        string
}{
	{0.35, "250m", "512Mi", "small web frontends and sidecar-heavy services"},
	{0.20, "500m", "1Gi", "API services"},
	{0.15, "1", "2Gi", "background workers"},
	{0.10, "500m", "4Gi", "caches and memory-heavy services"},
	{0.10, "2", "2Gi", "CPU-bound services (encoding, TLS termination)"},
	{0.05, "2", "8Gi", "JVM services"},
	{0.05, "4", "16Gi", "large JVM and analytics services"},
}

// webPods draws n pods from webMix with a fixed seed.
func webPods(n int, seed int64) []*corev1.Pod {
	r := rand.New(rand.NewSource(seed))
	pods := make([]*corev1.Pod, 0, n)
	for i := range n {
		x, acc := r.Float64(), 0.0
		for _, m := range webMix {
			if acc += m.share; x < acc || m == webMix[len(webMix)-1] {
				pods = append(pods, builders.Pod(builders.PodOptions{Name: "web-" + strconv.Itoa(i), CPU: m.cpu, Memory: m.memory}))
				break
			}
		}
	}
	return pods
}

// catalogPool is a typical NodePool on the real EC2 catalog: c, m and r families of generation
// 5 or newer, no metal, amd64, on-demand, in three zones.
func catalogPool(tb testing.TB) *NodePool {
	types, err := cloudprovider.DefaultInstanceTypes(cloudprovider.InstanceTypeOptions{
		Zones:         []string{"us-east-1a", "us-east-1b", "us-east-1c"},
		CapacityTypes: []string{karpv1.CapacityTypeOnDemand},
	})
	if err != nil {
		tb.Fatal(err)
	}
	for _, it := range types {
		it.AllocatableResources()
	}
	return &NodePool{
		Name: "default",
		Requirements: scheduling.NewRequirements(
			scheduling.MustRequirement(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r"),
			scheduling.MustRequirement(awsv1.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "4"),
			scheduling.MustRequirement(awsv1.LabelInstanceSize, corev1.NodeSelectorOpNotIn, "metal", "metal-24xl", "metal-48xl"),
			scheduling.MustRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
			scheduling.MustRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
		),
		InstanceTypes: types,
	}
}

// perPodBound is the sum over pods of their standalone fractional cost on the NodePool's
// instance types (the value the scheduler packs by).
func perPodBound(pool *NodePool, pods []*corev1.Pod) float64 {
	ps := newPoolState(pool, nil)
	total := 0.0
	for _, p := range pods {
		total += ps.value(cloudprovider.ResourcesOf(scheduling.PodRequests(p)))
	}
	return total
}

// lpBound is the LP lower bound of packing the pods on the NodePool's compatible instance types
// (each at its cheapest allowed offering): no packing can cost less.
func lpBound(tb testing.TB, pool *NodePool, pods []*corev1.Pod) float64 {
	tb.Helper()
	ps := newPoolState(pool, nil)
	counts := map[cloudprovider.Resources]int{}
	for _, p := range pods {
		counts[cloudprovider.ResourcesOf(scheduling.PodRequests(p))]++
	}
	var shapes []lowerbound.Shape
	for r, n := range counts {
		shapes = append(shapes, lowerbound.Shape{Name: fmt.Sprint(r), Requests: []float64{float64(r.MilliCPU), float64(r.Memory), float64(r.Pods)}, Count: n})
	}
	sort.Slice(shapes, func(i, j int) bool { return shapes[i].Name < shapes[j].Name })
	var types []lowerbound.InstanceType
	for _, c := range ps.candidatesFor(pool.Requirements) {
		types = append(types, lowerbound.InstanceType{Name: c.it.Name, Capacity: []float64{float64(c.room.MilliCPU), float64(c.room.Memory), float64(c.room.Pods)}, Price: c.price})
	}
	sol, err := lowerbound.Solve(shapes, types)
	if err != nil {
		tb.Fatal(err)
	}
	return sol.Cost
}

// BenchmarkCatalogWebService packs 10,000 web-service pods onto the real EC2 catalog and
// reports $/hour against the per-pod bound (and, for comparison, Karpenter's packing).
func BenchmarkCatalogWebService(b *testing.B) {
	pool := catalogPool(b)
	pods := webPods(10000, 7)
	perPod := perPodBound(pool, pods)
	bound := lpBound(b, pool, pods)
	for _, mode := range []struct {
		name string
		opts Options
	}{{"cost-aware", Options{}}, {"grow-claims", Options{GrowClaims: true}}} {
		b.Run(mode.name, func(b *testing.B) {
			var last *Results
			for b.Loop() {
				last = Solve(Input{Pods: pods, NodePools: []*NodePool{pool}, Options: mode.opts})
			}
			if len(last.PodErrors) > 0 {
				b.Fatalf("%d pods unplaced: %v", len(last.PodErrors), last.PodErrors[0].Err)
			}
			b.ReportMetric(float64(len(last.NewClaims)), "nodes")
			b.ReportMetric(cost(last), "$/hour")
			b.ReportMetric(bound, "LPbound$/hour")
			b.ReportMetric(cost(last)/bound, "x-LPbound")
			b.ReportMetric(perPod, "perpod$/hour")
		})
	}
}
