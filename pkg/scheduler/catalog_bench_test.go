package scheduler

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduler/lowerbound"
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

// mixPods draws n pods with a fixed seed from shapes given as {share, cpu, memory}; options,
// when set, adjust the pod built for shape index i (a node selector, a GPU).
func mixPods(prefix string, n int, seed int64, mix [][3]string, options func(i int, o *builders.PodOptions)) []*corev1.Pod {
	r := rand.New(rand.NewSource(seed))
	total := 0.0
	shares := make([]float64, len(mix))
	for i, m := range mix {
		shares[i], _ = strconv.ParseFloat(m[0], 64)
		total += shares[i]
	}
	pods := make([]*corev1.Pod, 0, n)
	for k := range n {
		x, acc := r.Float64()*total, 0.0
		for i, m := range mix {
			if acc += shares[i]; x < acc || i == len(mix)-1 {
				o := builders.PodOptions{Name: prefix + "-" + strconv.Itoa(k), CPU: m[1], Memory: m[2]}
				if options != nil {
					options(i, &o)
				}
				pods = append(pods, builders.Pod(o))
				break
			}
		}
	}
	return pods
}

// skewedMix is the cpu-heavy-with-memory-heavy batch: five shapes from 100m/256Mi
// through 3 cpu/1Gi to 500m/12Gi, which each fill their own family when packed apart.
var skewedMix = [][3]string{{"1", "100m", "256Mi"}, {"1", "1500m", "512Mi"}, {"1", "3", "1Gi"}, {"1", "250m", "6Gi"}, {"1", "500m", "12Gi"}}

// smallLargeMix is many small pods beside a few very large ones.
var smallLargeMix = [][3]string{{"60", "100m", "128Mi"}, {"30", "250m", "512Mi"}, {"0.6", "30", "120Gi"}, {"0.4", "60", "200Gi"}}

// catalogTypes builds the real EC2 catalog in three zones, with offerings of the given
// capacity types (nil: spot and on-demand).
func catalogTypes(tb testing.TB, capacityTypes []string) []*cloudprovider.InstanceType {
	types, err := cloudprovider.DefaultInstanceTypes(cloudprovider.InstanceTypeOptions{
		Zones:         []string{"us-east-1a", "us-east-1b", "us-east-1c"},
		CapacityTypes: capacityTypes,
	})
	if err != nil {
		tb.Fatal(err)
	}
	for _, it := range types {
		it.AllocatableResources()
	}
	return types
}

// catalogNodePool is a NodePool on the real EC2 catalog: the given categories of generation 5
// or newer, no metal, one architecture, the given capacity types, in three zones.
func catalogNodePool(tb testing.TB, arch string, categories, capacityTypes []string) *NodePool {
	return &NodePool{
		Name: "default",
		Requirements: scheduling.NewRequirements(
			scheduling.MustRequirement(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, categories...),
			scheduling.MustRequirement(awsv1.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "4"),
			scheduling.MustRequirement(awsv1.LabelInstanceSize, corev1.NodeSelectorOpNotIn, "metal", "metal-24xl", "metal-48xl"),
			scheduling.MustRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, arch),
			scheduling.MustRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityTypes...),
		),
		InstanceTypes: catalogTypes(tb, capacityTypes),
	}
}

// catalogPool is a typical NodePool on the real EC2 catalog: c, m and r families of generation
// 5 or newer, no metal, amd64, on-demand, in three zones.
func catalogPool(tb testing.TB) *NodePool {
	return catalogNodePool(tb, "amd64", []string{"c", "m", "r"}, []string{karpv1.CapacityTypeOnDemand})
}

// perPodBound is the sum over pods of their standalone fractional cost on the NodePool's
// instance types (the value the scheduler packs by).
func perPodBound(pool *NodePool, pods []*corev1.Pod) float64 {
	ps := newPoolState(pool, nil)
	total := 0.0
	for _, p := range pods {
		total += ps.value(scheduling.ResourcesOf(scheduling.PodRequests(p)))
	}
	return total
}

// lpBound is the LP lower bound of packing the pods on the NodePool's compatible instance types
// (each at its cheapest allowed offering): no packing can cost less, built as the plan builds
// it (lowerbound.Model: ephemeral storage counted, GPUs an extended resource). Pods with a node selector form a class: their instance types are the NodePool's
// under the selector too, at the prices it allows, as types of their own that only they and
// pods without a selector may use (one more dimension per class, which only the class's pods
// request and only its types have). That is a lower bound as long as no two classes could
// share a node, as in these batches (one class at most).
func lpBound(tb testing.TB, pool *NodePool, pods []*corev1.Pod) float64 {
	tb.Helper()
	ps := newPoolState(pool, nil)
	type key struct {
		res   scheduling.Resources
		gpu   int64
		class string
	}
	var classes []string
	classReqs := map[string]scheduling.Requirements{"": pool.Requirements}
	counts := map[key]int{}
	for _, p := range pods {
		requests := scheduling.PodRequests(p)
		gpu := requests[gpuResource]
		k := key{scheduling.ResourcesOf(requests), gpu.Value(), ""}
		if len(p.Spec.NodeSelector) > 0 {
			k.class = fmt.Sprint(p.Spec.NodeSelector)
			if _, ok := classReqs[k.class]; !ok {
				classes = append(classes, k.class)
				classReqs[k.class] = pool.Requirements.Intersect(scheduling.FromLabels(p.Spec.NodeSelector))
			}
		}
		counts[k]++
	}
	sort.Strings(classes)
	classes = append([]string{""}, classes...)
	// The model's dimensions: cpu, memory, pods, ephemeral storage, a class each past the first,
	// then the GPUs.
	model := lowerbound.NewModel(len(classes), 1)
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	for _, k := range keys {
		model.AddShape(fmt.Sprint(k), slices.Index(classes, k.class), k.res, []float64{float64(k.gpu)}, counts[k])
	}
	for i, class := range classes {
		for _, c := range ps.candidatesFor(classReqs[class]) {
			gpu := c.it.Allocatable()[gpuResource]
			model.AddType(c.it.Name+"/"+class, i, c.room, []float64{float64(gpu.Value())}, c.price)
		}
	}
	sol, err := model.Solve()
	if err != nil {
		tb.Fatal(err)
	}
	return sol.Cost
}

const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// catalogBatch is one batch of the catalog benchmark: pods and the NodePool they go to.
type catalogBatch struct {
	name string
	pool func(testing.TB) *NodePool
	pods func() []*corev1.Pod
}

// catalogBatches are the catalog benchmark's batches: the web mix, and mixes that defeat
// packing each shape on its own family.
var catalogBatches = []catalogBatch{
	{"web-10000", catalogPool, func() []*corev1.Pod { return webPods(10000, 7) }},
	// cpu-heavy with memory-heavy pods, as the issue reports them.
	{"skewed-3000", catalogPool, func() []*corev1.Pod { return mixPods("skew", 3000, 11, skewedMix, nil) }},
	// The same mix on an arm64 (Graviton) spot NodePool.
	{"skewed-arm64-spot-3000", func(tb testing.TB) *NodePool {
		return catalogNodePool(tb, "arm64", []string{"c", "m", "r"}, []string{karpv1.CapacityTypeSpot})
	}, func() []*corev1.Pod { return mixPods("skew", 3000, 12, skewedMix, nil) }},
	// Many small pods with a few very large ones.
	{"small-large-5000", catalogPool, func() []*corev1.Pod { return mixPods("sl", 5000, 13, smallLargeMix, nil) }},
	// GPU pods (one GPU, 3 cpu, 12Gi) among web pods, on one NodePool with g families.
	{"gpu-web-2000", func(tb testing.TB) *NodePool {
		return catalogNodePool(tb, "amd64", []string{"c", "m", "r", "g"}, []string{karpv1.CapacityTypeOnDemand})
	}, func() []*corev1.Pod {
		mix := [][3]string{{"0.1", "3", "12Gi"}}
		for _, m := range webMix {
			mix = append(mix, [3]string{strconv.FormatFloat(m.share*0.9, 'f', -1, 64), m.cpu, m.memory})
		}
		return mixPods("gpu", 2000, 14, mix, func(i int, o *builders.PodOptions) {
			if i == 0 {
				o.Extended = map[corev1.ResourceName]string{gpuResource: "1"}
			}
		})
	}},
	// The skewed mix on a NodePool allowing spot and on-demand, two fifths of its pods (the
	// cpu-heavy and the largest memory-heavy ones) selecting on-demand capacity.
	{"spot-ondemand-3000", func(tb testing.TB) *NodePool {
		return catalogNodePool(tb, "amd64", []string{"c", "m", "r"}, []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand})
	}, func() []*corev1.Pod {
		return mixPods("spod", 3000, 15, skewedMix, func(i int, o *builders.PodOptions) {
			if i == 2 || i == 4 {
				o.NodeSelector = map[string]string{karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand}
			}
		})
	}},
}

// BenchmarkCatalog packs each catalog batch onto the real EC2 catalog, with this scheduler's
// packing and Karpenter's (GrowClaims), and reports $/hour against the batch's LP lower bound.
func BenchmarkCatalog(b *testing.B) {
	for _, batch := range catalogBatches {
		pool := batch.pool(b)
		pods := batch.pods()
		bound := lpBound(b, pool, pods)
		for _, mode := range []struct {
			name string
			opts Options
		}{{"cost-aware", Options{}}, {"grow-claims", Options{GrowClaims: true}}} {
			b.Run(batch.name+"/"+mode.name, func(b *testing.B) {
				var (
					last *Results
					cpu  time.Duration
				)
				for b.Loop() {
					start := cpuTime()
					last = Solve(Input{Pods: pods, NodePools: []*NodePool{pool}, Options: mode.opts})
					cpu += cpuTime() - start
				}
				if len(last.PodErrors) > 0 {
					b.Fatalf("%d pods unplaced: %v", len(last.PodErrors), last.PodErrors[0].Err)
				}
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(len(last.NewClaims)), "nodes")
				b.ReportMetric(cost(last), "$/hour")
				b.ReportMetric(bound, "LPbound$/hour")
				b.ReportMetric(cost(last)/bound, "x-LPbound")
			})
		}
	}
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
