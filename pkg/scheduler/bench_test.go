package scheduler

import (
	"fmt"
	"math/rand"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// benchmarkTypes mirrors the instance types of Karpenter's scheduling benchmark: type i has i
// vCPU, 2i GiB and 10i pods, priced 0.1/vCPU + 0.1/GiB per hour, offered as spot in test-zone-1
// and -2 and as on-demand in test-zone-1, -2 and -3 (both at that price).
func benchmarkTypes() []*cloudprovider.InstanceType {
	types := make([]*cloudprovider.InstanceType, 0, 400)
	for i := int64(1); i <= 400; i++ {
		price := 0.1*float64(i) + 0.1*float64(2*i)
		var offerings []cloudprovider.Offering
		for _, z := range []string{zone1, zone2} {
			offerings = append(offerings, cloudprovider.Offering{Zone: z, CapacityType: karpv1.CapacityTypeSpot, Price: price, Available: true})
		}
		for _, z := range []string{zone1, zone2, zone3} {
			offerings = append(offerings, cloudprovider.Offering{Zone: z, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true})
		}
		it := builders.InstanceType(builders.InstanceTypeOptions{
			Name: fmt.Sprintf("fake-it-%d", i), CPU: i, MemoryGiB: 2 * i, Pods: 10 * i, Offerings: offerings,
		})
		it.AllocatableResources() // instance types are long-lived: memoize outside the timed solve
		types = append(types, it)
	}
	return types
}

var (
	benchCPU    = []string{"100m", "250m", "500m", "1000m", "1500m"}
	benchMemory = []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	labelValues = []string{"a", "b", "c", "d", "e", "f", "g"}
)

// benchmarkPods makes n pods in five equal groups, as Karpenter's benchmark does: plain; zonal
// spread; hostname spread; zonal pod affinity to their own label value; hostname anti-affinity
// on a label they all share (one node each).
func benchmarkPods(n int, seed int64) []*corev1.Pod {
	r := rand.New(rand.NewSource(seed))
	pick := func(values []string) string { return values[r.Intn(len(values))] }
	pods := make([]*corev1.Pod, 0, n)
	for i := range n {
		o := builders.PodOptions{Name: "pod-" + strconv.Itoa(i), CPU: pick(benchCPU), Memory: pick(benchMemory)}
		switch i % 5 {
		case 1, 2:
			key := corev1.LabelTopologyZone
			if i%5 == 2 {
				key = corev1.LabelHostname
			}
			o.Labels = map[string]string{"my-label": pick(labelValues)}
			o.Spread = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": pick(labelValues)}}}}
		case 3:
			value := pick(labelValues)
			o.Labels = map[string]string{"my-affinity": value}
			o.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-affinity": value}}, TopologyKey: corev1.LabelTopologyZone}}}}
		case 4:
			o.Labels = map[string]string{"app": "nginx"}
			o.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}, TopologyKey: corev1.LabelHostname}}}}
		}
		pods = append(pods, builders.Pod(o))
	}
	return pods
}

func benchmarkInput(n int, options Options) Input {
	return benchmarkInputWith(n, options, benchmarkTypes())
}

func benchmarkInputWith(n int, options Options, types []*cloudprovider.InstanceType) Input {
	return Input{
		Pods:      benchmarkPods(n, 42),
		NodePools: []*NodePool{{Name: "default", Requirements: scheduling.NewRequirements(), InstanceTypes: types}},
		Options:   options,
	}
}

// cost is the $/hour of a solve's new claims.
func cost(r *Results) float64 { return r.NewClaimsPrice() }

// cpuTime is the process's CPU time so far (user and system, every thread: the garbage
// collector's work included). On a shared machine it is steadier than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runSchedulingBenchmark(b *testing.B, pods int, options Options) {
	var elapsed, cpu time.Duration
	var last *Results
	// Instance types are long-lived (built once per NodeClass); each solve is fresh.
	types := benchmarkTypes()
	for b.Loop() {
		b.StopTimer()
		in := benchmarkInputWith(pods, options, types)
		if options.CountEffectiveZones {
			in.Progress = &Progress{}
		}
		b.StartTimer()
		start, startCPU := time.Now(), cpuTime()
		last = Solve(in)
		elapsed += time.Since(start)
		cpu += cpuTime() - startCPU
	}
	if len(last.PodErrors) > 0 {
		b.Fatalf("%d pods unplaced, first: %v", len(last.PodErrors), last.PodErrors[0].Err)
	}
	b.ReportMetric(float64(pods)*float64(b.N)/elapsed.Seconds(), "pods/sec")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(len(last.NewClaims)), "nodes")
	b.ReportMetric(cost(last), "$/hour")
}

func BenchmarkScheduling(b *testing.B) {
	for _, n := range []int{1, 50, 100, 500, 1000, 2000, 5000, 10000, 20000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { runSchedulingBenchmark(b, n, Options{}) })
	}
}

// BenchmarkSchedulingReported is the same run as the provisioner makes it: its progress read
// and its pending pods counted by effective zone, for the scheduler metrics.
func BenchmarkSchedulingReported(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { runSchedulingBenchmark(b, n, Options{CountEffectiveZones: true}) })
	}
}

// BenchmarkSchedulingGrowClaims is the same run with Karpenter's packing, for comparison.
func BenchmarkSchedulingGrowClaims(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { runSchedulingBenchmark(b, n, Options{GrowClaims: true}) })
	}
}

// preferencePods are pods with three preferences: a satisfiable preferred zone, an
// unsatisfiable preferred zonal anti-affinity (weight 10: they all share the label, and there
// are only three zones) and a satisfiable preferred hostname anti-affinity (weight 1).
func preferencePods(n int, seed int64) []*corev1.Pod {
	r := rand.New(rand.NewSource(seed))
	label := map[string]string{"app": "preferring"}
	affinity := &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone1}}}},
		}}},
		PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: label}, TopologyKey: corev1.LabelTopologyZone}},
			{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: label}, TopologyKey: corev1.LabelHostname}},
		}},
	}
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = builders.Pod(builders.PodOptions{Name: "pref-" + strconv.Itoa(i), Labels: label, Affinity: affinity,
			CPU: benchCPU[r.Intn(len(benchCPU))], Memory: benchMemory[r.Intn(len(benchMemory))]})
	}
	return pods
}

// BenchmarkPreferences schedules 4,000 pods with preferences, respecting them (each pod ends
// on its own node in the preferred zone, the zonal anti-affinity relaxed) and ignoring them.
func BenchmarkPreferences(b *testing.B) {
	for _, mode := range []struct {
		name   string
		ignore bool
	}{{"respect", false}, {"ignore", true}} {
		b.Run(mode.name, func(b *testing.B) {
			var elapsed time.Duration
			var last *Results
			types := benchmarkTypes()
			for b.Loop() {
				b.StopTimer()
				in := Input{Pods: preferencePods(4000, 42), NodePools: []*NodePool{{Name: "default", InstanceTypes: types}}, Options: Options{IgnorePreferences: mode.ignore}}
				b.StartTimer()
				start := time.Now()
				last = Solve(in)
				elapsed += time.Since(start)
			}
			if len(last.PodErrors) > 0 {
				b.Fatalf("%d pods unplaced: %v", len(last.PodErrors), last.PodErrors[0].Err)
			}
			b.ReportMetric(4000*float64(b.N)/elapsed.Seconds(), "pods/sec")
			b.ReportMetric(float64(len(last.NewClaims)), "nodes")
			b.ReportMetric(cost(last), "$/hour")
		})
	}
}

// existingNodes makes n registered nodes across three zones with a little room each; every
// fourth is tainted for a dedicated workload, every tenth almost full.
func existingNodes(n int) []*Node {
	nodes := make([]*Node, n)
	zones := []string{zone1, zone2, zone3}
	for i := range nodes {
		name := "node-" + strconv.Itoa(i)
		node := &Node{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zones[i%3], corev1.LabelArchStable: "amd64"},
			Available: builders.Resources("cpu", "2", "memory", "4Gi", "pods", "20")}
		if i%4 == 0 {
			node.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
		}
		if i%10 == 0 {
			node.Available = builders.Resources("cpu", "100m", "memory", "128Mi", "pods", "1")
		}
		nodes[i] = node
	}
	return nodes
}

// BenchmarkSchedulingOnExistingNodes schedules the benchmark's pods onto 2,000 existing nodes
// first (most fill up, a quarter are tainted), the rest on new claims: the pipeline's path for
// existing nodes, which disruption's simulations also take.
func BenchmarkSchedulingOnExistingNodes(b *testing.B) {
	for _, pods := range []int{1000, 5000} {
		b.Run(strconv.Itoa(pods), func(b *testing.B) {
			var (
				last *Results
				cpu  time.Duration
			)
			types := benchmarkTypes()
			for b.Loop() {
				b.StopTimer()
				in := benchmarkInputWith(pods, Options{}, types)
				in.Nodes = existingNodes(2000)
				b.StartTimer()
				startCPU := cpuTime()
				last = Solve(in)
				cpu += cpuTime() - startCPU
			}
			if len(last.PodErrors) > 0 {
				b.Fatalf("%d pods unplaced, first: %v", len(last.PodErrors), last.PodErrors[0].Err)
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(len(last.ExistingPlacements)), "on-existing")
			b.ReportMetric(float64(len(last.NewClaims)), "nodes")
			b.ReportMetric(cost(last), "$/hour")
		})
	}
}
