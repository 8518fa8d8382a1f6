package scheduler

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

const (
	zone1 = "test-zone-1"
	zone2 = "test-zone-2"
	zone3 = "test-zone-3"
)

// testTypes: four amd64 sizes priced 0.05/cpu-hour, two arm64 ones a little cheaper, a GPU one.
func testTypes() []*cloudprovider.InstanceType {
	return []*cloudprovider.InstanceType{
		builders.InstanceType(builders.InstanceTypeOptions{Name: "small", CPU: 2, MemoryGiB: 4, PricePerHour: 0.10}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "medium", CPU: 4, MemoryGiB: 8, PricePerHour: 0.20}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "large", CPU: 8, MemoryGiB: 16, PricePerHour: 0.40}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "xlarge", CPU: 16, MemoryGiB: 32, PricePerHour: 0.80}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "arm-medium", CPU: 4, MemoryGiB: 8, Arch: "arm64", PricePerHour: 0.16}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "arm-large", CPU: 8, MemoryGiB: 16, Arch: "arm64", PricePerHour: 0.32}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "gpu", CPU: 8, MemoryGiB: 32, PricePerHour: 3.0, Extended: map[corev1.ResourceName]int64{"nvidia.com/gpu": 1}}),
	}
}

func onDemandPool(name string, reqs ...scheduling.Requirement) *NodePool {
	base := []scheduling.Requirement{scheduling.MustRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)}
	return &NodePool{Name: name, Requirements: scheduling.NewRequirements(append(base, reqs...)...), InstanceTypes: testTypes()}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) scheduling.Requirement {
	return scheduling.MustRequirement(key, op, values...)
}

func claimTypes(c *Claim) []string {
	names := make([]string, len(c.InstanceTypes))
	for i, it := range c.InstanceTypes {
		names[i] = it.Name
	}
	return names
}

func mustPlaceAll(t *testing.T, r *Results) {
	t.Helper()
	for _, e := range r.PodErrors {
		t.Errorf("pod %s not placed: %v", e.Pod.Name, e.Err)
	}
}

func TestPacksIntoCheapestType(t *testing.T) {
	r := Solve(Input{Pods: builders.Pods(3, builders.PodOptions{CPU: "1", Memory: "1Gi"}), NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 1 {
		t.Fatalf("want one claim, got %d", len(r.NewClaims))
	}
	c := r.NewClaims[0]
	if got := claimTypes(c); got[0] != "arm-medium" {
		t.Errorf("types = %v, want the cheapest that fits (arm-medium) first", got)
	}
	if len(c.Pods) != 3 || c.Price != 0.16 {
		t.Errorf("pods %d, price %v", len(c.Pods), c.Price)
	}
}

func TestNodeSelectorAndReasons(t *testing.T) {
	pool := onDemandPool("default", req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
	pod := builders.Pod(builders.PodOptions{CPU: "1", NodeSelector: map[string]string{corev1.LabelArchStable: "amd64"}})
	r := Solve(Input{Pods: []*corev1.Pod{pod}, NodePools: []*NodePool{pool}})
	if len(r.PodErrors) != 1 {
		t.Fatalf("want the pod unschedulable, got %+v", r)
	}
	want := "nodepool default: requirement kubernetes.io/arch In [amd64] not compatible with kubernetes.io/arch In [arm64]"
	if !strings.Contains(r.PodErrors[0].Err.Error(), want) {
		t.Errorf("reason = %v, want it to contain %q", r.PodErrors[0].Err, want)
	}
}

func TestUndefinedCustomLabel(t *testing.T) {
	pod := builders.Pod(builders.PodOptions{CPU: "1", NodeSelector: map[string]string{"team": "a"}})
	r := Solve(Input{Pods: []*corev1.Pod{pod}, NodePools: []*NodePool{onDemandPool("default")}})
	if len(r.PodErrors) != 1 || !strings.Contains(r.PodErrors[0].Err.Error(), "requirement team In [a] cannot be met: the label is not defined") {
		t.Fatalf("got %+v", r.PodErrors)
	}
	pool := onDemandPool("team-a", req("team", corev1.NodeSelectorOpIn, "a"))
	r = Solve(Input{Pods: []*corev1.Pod{pod}, NodePools: []*NodePool{pool}})
	mustPlaceAll(t, r)
}

func TestTaintsAndTolerations(t *testing.T) {
	pool := onDemandPool("gpu-only")
	pool.Taints = []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	plain := builders.Pod(builders.PodOptions{Name: "plain", CPU: "1"})
	tolerant := builders.Pod(builders.PodOptions{Name: "tolerant", CPU: "1", Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}})
	r := Solve(Input{Pods: []*corev1.Pod{plain, tolerant}, NodePools: []*NodePool{pool}})
	if len(r.PodErrors) != 1 || r.PodErrors[0].Pod.Name != "plain" || !strings.Contains(r.PodErrors[0].Err.Error(), "did not tolerate taint gpu=true:NoSchedule") {
		t.Fatalf("errors = %+v", r.PodErrors)
	}
	if len(r.NewClaims) != 1 || r.NewClaims[0].Pods[0].Name != "tolerant" {
		t.Fatalf("claims = %+v", r.NewClaims)
	}
}

func TestExistingNodesFirst(t *testing.T) {
	node := &Node{Name: "existing", Labels: map[string]string{corev1.LabelHostname: "existing", corev1.LabelTopologyZone: zone1, corev1.LabelArchStable: "amd64"},
		Available: builders.Resources("cpu", "2", "memory", "4Gi", "pods", "10")}
	pods := builders.Pods(3, builders.PodOptions{CPU: "1", Memory: "1Gi"})
	r := Solve(Input{Pods: pods, Nodes: []*Node{node}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	if len(r.ExistingPlacements) != 2 || len(r.NewClaims) != 1 || len(r.NewClaims[0].Pods) != 1 {
		t.Fatalf("want 2 on the existing node and 1 on a new claim, got %d and %d claims", len(r.ExistingPlacements), len(r.NewClaims))
	}
}

func TestAntiAffinityAgainstBoundPods(t *testing.T) {
	web := map[string]string{"app": "web"}
	bound := builders.Pod(builders.PodOptions{Name: "web-0", CPU: "100m", Labels: web})
	node := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1},
		Available: builders.Resources("cpu", "8", "memory", "16Gi", "pods", "100"), Pods: []*corev1.Pod{bound}}
	anti := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: web}, TopologyKey: corev1.LabelHostname,
	}}}}
	pods := builders.Pods(3, builders.PodOptions{Name: "web", CPU: "100m", Labels: web, Affinity: anti})
	r := Solve(Input{Pods: pods, Nodes: []*Node{node}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	if len(r.ExistingPlacements) != 0 {
		t.Errorf("a web pod landed beside the bound web pod: %+v", r.ExistingPlacements)
	}
	if len(r.NewClaims) != 3 {
		t.Errorf("want one claim per web pod, got %d", len(r.NewClaims))
	}
	// The symmetric case: the bound pod's anti-affinity keeps matching pods away.
	boundAnti := builders.Pod(builders.PodOptions{Name: "guard", CPU: "100m", Affinity: anti})
	node2 := &Node{Name: "n2", Labels: map[string]string{corev1.LabelHostname: "n2"}, Available: builders.Resources("cpu", "8", "memory", "16Gi", "pods", "100"), Pods: []*corev1.Pod{boundAnti}}
	r = Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "100m", Labels: web})}, Nodes: []*Node{node2}, NodePools: []*NodePool{onDemandPool("default")}})
	if len(r.ExistingPlacements) != 0 || len(r.NewClaims) != 1 {
		t.Errorf("a pod matching a bound pod's anti-affinity was placed beside it")
	}
}

func zonalSpread(labels map[string]string) []corev1.TopologySpreadConstraint {
	return []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}}
}

func TestTopologySpreadCountsExistingNodes(t *testing.T) {
	app := map[string]string{"app": "api"}
	node := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1},
		Available: builders.Resources("cpu", "0", "memory", "0", "pods", "0"),
		Pods:      builders.Pods(2, builders.PodOptions{Labels: app, CPU: "100m"})}
	pods := builders.Pods(4, builders.PodOptions{Labels: app, CPU: "1", Spread: zonalSpread(app)})
	r := Solve(Input{Pods: pods, Nodes: []*Node{node}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	perZone := podsPerZone(t, r)
	perZone[zone1] += 2
	// Zone 1 already has 2: the four new pods go 2 to zone 2 and 2 to zone 3.
	if !reflect.DeepEqual(perZone, map[string]int{zone1: 2, zone2: 2, zone3: 2}) {
		t.Errorf("per zone = %v", perZone)
	}
}

// podsPerZone counts the new claims' pods by the zone each claim pins (failing the test for a
// claim whose zone is not pinned).
func podsPerZone(t *testing.T, r *Results) map[string]int {
	t.Helper()
	perZone := map[string]int{}
	for _, c := range r.NewClaims {
		z, ok := c.Requirements.Get(corev1.LabelTopologyZone)
		if !ok || len(z.Values()) != 1 {
			t.Fatalf("claim zone not pinned: %s", c.Requirements)
		}
		perZone[z.Values()[0]] += len(c.Pods)
	}
	return perZone
}

func TestHostnameSpreadOnePerNode(t *testing.T) {
	app := map[string]string{"app": "cache"}
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: app}}}
	r := Solve(Input{Pods: builders.Pods(5, builders.PodOptions{Labels: app, CPU: "100m", Spread: spread}), NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 5 {
		t.Errorf("want 5 nodes, got %d", len(r.NewClaims))
	}
}

func TestPodAffinityFollowsBoundPods(t *testing.T) {
	db := map[string]string{"app": "db"}
	node := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone2},
		Available: builders.Resources("cpu", "0", "memory", "0", "pods", "0"), Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{Labels: db})}}
	affinity := &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: db}, TopologyKey: corev1.LabelTopologyZone,
	}}}}
	r := Solve(Input{Pods: builders.Pods(3, builders.PodOptions{CPU: "1", Affinity: affinity}), Nodes: []*Node{node}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	for _, c := range r.NewClaims {
		if z, _ := c.Requirements.Get(corev1.LabelTopologyZone); strings.Join(z.Values(), ",") != zone2 {
			t.Errorf("claim in %v, want %s beside the db", z.Values(), zone2)
		}
	}
}

func TestMinValues(t *testing.T) {
	three := 3
	r := req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "small", "medium", "large", "xlarge")
	r.MinValues = &three
	pool := onDemandPool("flexible", r)
	ok := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1"})}, NodePools: []*NodePool{pool}})
	mustPlaceAll(t, ok)
	if n := len(ok.NewClaims[0].InstanceTypes); n < 3 {
		t.Errorf("claim keeps %d types, minValues wants 3", n)
	}
	// 7 cpu fits only large and xlarge: 2 < 3.
	tooBig := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "7"})}, NodePools: []*NodePool{pool}})
	if len(tooBig.PodErrors) != 1 || !strings.Contains(tooBig.PodErrors[0].Err.Error(), "minValues") {
		t.Fatalf("want a minValues error, got %+v", tooBig.PodErrors)
	}
	// BestEffort (MIN_VALUES_POLICY) launches it, with minValues lowered to the 2 types that
	// fit and the claim marked relaxed, as Karpenter's scheduler does; a claim whose types meet
	// minValues is not marked.
	relaxed := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "7"})}, NodePools: []*NodePool{pool}, Options: Options{MinValuesBestEffort: true}})
	mustPlaceAll(t, relaxed)
	c := relaxed.NewClaims[0]
	if got, _ := c.Requirements.Get(corev1.LabelInstanceTypeStable); !c.MinValuesRelaxed || got.MinValues == nil || *got.MinValues != 2 {
		t.Errorf("relaxed claim: MinValuesRelaxed %t, minValues %v; want true and 2", c.MinValuesRelaxed, ptrValue(got.MinValues))
	}
	met := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1"})}, NodePools: []*NodePool{pool}, Options: Options{MinValuesBestEffort: true}})
	if c := met.NewClaims[0]; c.MinValuesRelaxed {
		t.Error("a claim whose types meet minValues marked relaxed")
	}
}

func TestLimitsHitMidBatchSpillToLowerWeight(t *testing.T) {
	capped := onDemandPool("capped", req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "medium"))
	capped.Weight = 10
	capped.Remaining = builders.Resources("cpu", "10")
	other := onDemandPool("other")
	r := Solve(Input{Pods: builders.Pods(5, builders.PodOptions{CPU: "3"}), NodePools: []*NodePool{other, capped}})
	mustPlaceAll(t, r)
	perPool := map[string]int{}
	for _, c := range r.NewClaims {
		perPool[c.NodePool] += len(c.Pods)
	}
	if perPool["capped"] != 2 || perPool["other"] != 3 {
		t.Errorf("per pool = %v: capped (cpu 10, 4-cpu nodes) fits 2 nodes of one 3-cpu pod", perPool)
	}
	alone := Solve(Input{Pods: builders.Pods(3, builders.PodOptions{CPU: "3"}), NodePools: []*NodePool{capped}})
	const want = "nodepool capped: all available instance types exceed limits for nodepool (NodePool=capped): cpu 4 of a medium, 2 left under spec.limits"
	if len(alone.PodErrors) != 1 || !strings.HasSuffix(alone.PodErrors[0].Err.Error(), want) {
		t.Fatalf("want an error ending %q, got %+v", want, alone.PodErrors)
	}
}

func TestPreferencesRelaxed(t *testing.T) {
	prefer := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
		{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"nowhere"}}}}},
		{Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone3}}}}},
	}}}
	r := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1", Affinity: prefer})}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	if z, _ := r.NewClaims[0].Requirements.Get(corev1.LabelTopologyZone); strings.Join(z.Values(), ",") != zone3 {
		t.Errorf("zone = %v: the satisfiable heavier preference should stay", z.Values())
	}
	ignored := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1", Affinity: prefer})}, NodePools: []*NodePool{onDemandPool("default")}, Options: Options{IgnorePreferences: true}})
	mustPlaceAll(t, ignored)
	if ignored.NewClaims[0].Requirements.Has(corev1.LabelTopologyZone) {
		t.Errorf("preferences ignored but zone narrowed: %s", ignored.NewClaims[0].Requirements)
	}
}

func TestRequiredNodeAffinityTermsAreORed(t *testing.T) {
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"s390x"}}}},
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}},
	}}}}
	r := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1", Affinity: affinity})}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	if got := claimTypes(r.NewClaims[0]); got[0] != "arm-medium" {
		t.Errorf("types = %v, want arm64 ones", got)
	}
}

func TestHostPorts(t *testing.T) {
	r := Solve(Input{Pods: builders.Pods(2, builders.PodOptions{CPU: "100m", HostPorts: []int32{8080}}), NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 2 {
		t.Errorf("two pods binding host port 8080 share a node")
	}
}

func TestExtendedResourcesAndInitContainers(t *testing.T) {
	gpu := builders.Pod(builders.PodOptions{CPU: "1", Extended: map[corev1.ResourceName]string{"nvidia.com/gpu": "1"}})
	withInit := builders.Pod(builders.PodOptions{CPU: "500m", InitCPU: "6"}) // the init container's peak decides: 6 cpu
	r := Solve(Input{Pods: []*corev1.Pod{gpu, withInit}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	for _, c := range r.NewClaims {
		for _, p := range c.Pods {
			if p == gpu && claimTypes(c)[0] != "gpu" {
				t.Errorf("gpu pod on %v", claimTypes(c))
			}
			if p == withInit && c.InstanceTypes[0].Capacity.Cpu().Value() < 6 {
				t.Errorf("init container's 6 cpu ignored: %v", claimTypes(c))
			}
		}
	}
}

func TestDaemonOverheadSizesClaims(t *testing.T) {
	pool := onDemandPool("default", req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
	daemon := builders.Pod(builders.PodOptions{Name: "daemon", CPU: "1"})
	r := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1500m"})}, NodePools: []*NodePool{pool}, DaemonPods: []*corev1.Pod{daemon}})
	mustPlaceAll(t, r)
	if got := claimTypes(r.NewClaims[0])[0]; got != "medium" {
		t.Errorf("first type %s: 1.5 cpu + 1 cpu of daemonsets does not fit small (2 cpu)", got)
	}
}

func TestWeightOrdersNodePools(t *testing.T) {
	low := onDemandPool("low")
	high := onDemandPool("high")
	high.Weight = 50
	r := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1"})}, NodePools: []*NodePool{low, high}})
	mustPlaceAll(t, r)
	if r.NewClaims[0].NodePool != "high" {
		t.Errorf("nodepool %s, want the heavier", r.NewClaims[0].NodePool)
	}
}

// TestNoPodLeftPendingThatKarpenterPlaces: a 300m pod that keeps out of the zone of a 3-cpu
// pod (required zone anti-affinity) must not take the only zone the 3-cpu pod may use. Our
// order of pods (node-level constraints first) places the small pod first, in the first zone,
// and shuts the large one out; Karpenter's (cpu, then memory, descending: scheduling/queue.go,
// v1.15.0) places both, and the answer that leaves no pod pending Karpenter places wins.
func TestNoPodLeftPendingThatKarpenterPlaces(t *testing.T) {
	big := builders.Pod(builders.PodOptions{Name: "big", CPU: "3", Labels: map[string]string{"app": "big"},
		NodeSelector: map[string]string{corev1.LabelTopologyZone: zone1}})
	small := builders.Pod(builders.PodOptions{Name: "small", CPU: "300m", Affinity: &corev1.Affinity{
		PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "big"}},
		}}},
	}})
	r := Solve(Input{Pods: []*corev1.Pod{small, big}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	for _, c := range r.NewClaims {
		zone, _ := c.Requirements.Get(corev1.LabelTopologyZone)
		for _, pod := range c.Pods {
			if pod.Name == "small" && zone.Has(zone1) {
				t.Errorf("the small pod's claim may be in %s, the big pod's zone: %v", zone1, c.Requirements)
			}
		}
	}
}

// TestKarpenterOrderQueue: in Karpenter's order, pods are tried by cpu, then memory,
// descending, whatever their priority or constraints.
func TestKarpenterOrderQueue(t *testing.T) {
	high := int32(1000)
	pods := []*corev1.Pod{
		builders.Pod(builders.PodOptions{Name: "anti", CPU: "300m", Priority: &high, Affinity: &corev1.Affinity{
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			}}},
		}}),
		builders.Pod(builders.PodOptions{Name: "small-mem", CPU: "1", Memory: "2Gi"}),
		builders.Pod(builders.PodOptions{Name: "three", CPU: "3"}),
		builders.Pod(builders.PodOptions{Name: "big-mem", CPU: "1", Memory: "8Gi"}),
	}
	s := newSolver(Input{Pods: pods, NodePools: []*NodePool{onDemandPool("default")}, Options: Options{GrowClaims: true, karpenterOrder: true}})
	queue := slices.Clone(s.pods)
	s.sortQueue(queue)
	var got []string
	for _, p := range queue {
		got = append(got, p.pod.Name)
	}
	if want := []string{"three", "big-mem", "small-mem", "anti"}; !slices.Equal(got, want) {
		t.Errorf("queue %v, want %v", got, want)
	}
}

// TestEqualWeightNodePoolsByNameDescending: NodePools of equal weight are tried by name,
// the one that sorts last first, as Karpenter's OrderByWeight (utils/nodepool, v1.15.0),
// whatever order they are given in.
func TestEqualWeightNodePoolsByNameDescending(t *testing.T) {
	for _, tc := range []struct {
		weights map[string]int32
		want    string
	}{
		{map[string]int32{"a": 0, "b": 0}, "b"},
		{map[string]int32{"a": 10, "c": 10, "z": 0}, "c"},
	} {
		for _, reversed := range []bool{false, true} {
			var pools []*NodePool
			for _, name := range slices.Sorted(maps.Keys(tc.weights)) {
				np := onDemandPool(name)
				np.Weight = tc.weights[name]
				pools = append(pools, np)
			}
			if reversed {
				slices.Reverse(pools)
			}
			r := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1"})}, NodePools: pools})
			mustPlaceAll(t, r)
			if got := r.NewClaims[0].NodePool; got != tc.want {
				t.Errorf("weights %v (given reversed: %v): nodepool %s, want %s", tc.weights, reversed, got, tc.want)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	build := func() Input {
		podCount := 0
		var pods []*corev1.Pod
		for i := range 60 {
			podCount++
			o := builders.PodOptions{Name: fmt.Sprintf("p-%d", i), CPU: []string{"100m", "500m", "1", "2"}[i%4], Memory: []string{"128Mi", "1Gi", "3Gi"}[i%3], Labels: map[string]string{"app": fmt.Sprint(i % 5)}}
			if i%3 == 0 {
				o.Spread = zonalSpread(map[string]string{"app": fmt.Sprint(i % 5)})
			}
			pods = append(pods, builders.Pod(o))
		}
		return Input{Pods: pods, NodePools: []*NodePool{onDemandPool("a"), onDemandPool("b")}}
	}
	describe := func(r *Results) string {
		var b strings.Builder
		for _, c := range r.NewClaims {
			fmt.Fprintf(&b, "%s %v %s:", c.NodePool, claimTypes(c), c.Requirements)
			for _, p := range c.Pods {
				b.WriteString(" " + p.Name)
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	first := describe(Solve(build()))
	for range 5 {
		if again := describe(Solve(build())); again != first {
			t.Fatalf("runs differ:\n%s\nvs\n%s", first, again)
		}
	}
	// Runs that share what they derive from the same pods (PodInfos) place them as runs that
	// do not, however many share it and whatever preferences the earlier ones relaxed.
	in := build()
	in.Infos = NewPodInfos()
	for i := range 3 {
		if again := describe(Solve(in)); again != first {
			t.Fatalf("run %d with shared pod infos differs:\n%s\nvs\n%s", i, again, first)
		}
	}
	// A Prune keeps the pods solved since the last one, and the next forgets them.
	if in.Infos.Prune(); len(in.Infos.known) != len(in.Pods) {
		t.Fatalf("%d pods known after a prune, want %d", len(in.Infos.known), len(in.Pods))
	}
	if in.Infos.Prune(); len(in.Infos.known) != 0 {
		t.Fatalf("%d pods known after two prunes without a solve", len(in.Infos.known))
	}
}

func TestVolumeZone(t *testing.T) {
	pod := builders.Pod(builders.PodOptions{CPU: "1"})
	volumes := map[types.UID]scheduling.Requirements{pod.UID: scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone2))}
	r := Solve(Input{Pods: []*corev1.Pod{pod}, NodePools: []*NodePool{onDemandPool("default")}, VolumeRequirements: volumes})
	mustPlaceAll(t, r)
	if z, _ := r.NewClaims[0].Requirements.Get(corev1.LabelTopologyZone); strings.Join(z.Values(), ",") != zone2 {
		t.Errorf("zone = %v, want the volume's %s", z.Values(), zone2)
	}
	// A NodePool that cannot reach the volume's zone cannot take the pod.
	pool := onDemandPool("elsewhere", req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone1))
	r = Solve(Input{Pods: []*corev1.Pod{pod}, NodePools: []*NodePool{pool}, VolumeRequirements: volumes})
	if len(r.PodErrors) != 1 || !strings.Contains(r.PodErrors[0].Err.Error(), "topology.kubernetes.io/zone") {
		t.Fatalf("want a zone error, got %+v", r.PodErrors)
	}
}

func TestCapacityTypeSpreadAndMatchLabelKeys(t *testing.T) {
	pool := onDemandPool("both")
	pool.Requirements = scheduling.NewRequirements(req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot))
	app := map[string]string{"app": "batch", "pod-template-hash": "v1"}
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: karpv1.CapacityTypeLabelKey, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "batch"}}, MatchLabelKeys: []string{"pod-template-hash"}}}
	// Pods of an older revision (another hash) are not counted, thanks to matchLabelKeys.
	old := map[string]string{"app": "batch", "pod-template-hash": "v0"}
	node := &Node{Name: "old", Labels: map[string]string{corev1.LabelHostname: "old", karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeSpot},
		Available: builders.Resources("cpu", "0", "memory", "0", "pods", "0"), Pods: builders.Pods(3, builders.PodOptions{Labels: old})}
	r := Solve(Input{Pods: builders.Pods(4, builders.PodOptions{CPU: "1", Labels: app, Spread: spread}), Nodes: []*Node{node}, NodePools: []*NodePool{pool}})
	mustPlaceAll(t, r)
	perType := map[string]int{}
	for _, c := range r.NewClaims {
		ct, _ := c.Requirements.Get(karpv1.CapacityTypeLabelKey)
		if len(ct.Values()) != 1 {
			t.Fatalf("capacity type not pinned: %s", c.Requirements)
		}
		perType[ct.Values()[0]] += len(c.Pods)
	}
	if perType[karpv1.CapacityTypeSpot] != 2 || perType[karpv1.CapacityTypeOnDemand] != 2 {
		t.Errorf("per capacity type = %v, want 2 and 2", perType)
	}
}

func TestMinDomains(t *testing.T) {
	app := map[string]string{"app": "quorum"}
	three := int32(3)
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, MinDomains: &three, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: app}}}
	// Only two zones are reachable, so minDomains 3 holds the global minimum at 0: one pod per zone.
	pool := onDemandPool("two-zones", req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone1, zone2))
	r := Solve(Input{Pods: builders.Pods(3, builders.PodOptions{CPU: "1", Labels: app, Spread: spread}), NodePools: []*NodePool{pool}})
	placed := 0
	for _, c := range r.NewClaims {
		placed += len(c.Pods)
	}
	if placed != 2 || len(r.PodErrors) != 1 {
		t.Errorf("placed %d with %d errors, want 2 placed (one per zone) and 1 refused", placed, len(r.PodErrors))
	}
}

func TestNodeTaintsPolicyHonor(t *testing.T) {
	app := map[string]string{"app": "api"}
	honor := corev1.NodeInclusionPolicyHonor
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: app}, NodeTaintsPolicy: &honor}}
	// The tainted node's pods do not count: its zone is not a domain for these pods.
	tainted := &Node{Name: "tainted", Labels: map[string]string{corev1.LabelHostname: "tainted", corev1.LabelTopologyZone: zone1},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "other", Effect: corev1.TaintEffectNoSchedule}}, Available: builders.Resources("cpu", "0", "pods", "0"),
		Pods: builders.Pods(5, builders.PodOptions{Labels: app})}
	r := Solve(Input{Pods: builders.Pods(3, builders.PodOptions{CPU: "1", Labels: app, Spread: spread}), Nodes: []*Node{tainted}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	zones := map[string]int{}
	for _, c := range r.NewClaims {
		z, _ := c.Requirements.Get(corev1.LabelTopologyZone)
		zones[z.Values()[0]] += len(c.Pods)
	}
	if zones[zone1] != 1 || zones[zone2] != 1 || zones[zone3] != 1 {
		t.Errorf("zones = %v: with nodeTaintsPolicy Honor the tainted node's 5 pods must not count", zones)
	}
}

func TestPreferNoScheduleAvoidedThenTolerated(t *testing.T) {
	soft := onDemandPool("soft")
	soft.Taints = []corev1.Taint{{Key: "spare", Effect: corev1.TaintEffectPreferNoSchedule}}
	soft.Weight = 10
	clean := onDemandPool("clean")
	r := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1"})}, NodePools: []*NodePool{soft, clean}})
	mustPlaceAll(t, r)
	if r.NewClaims[0].NodePool != "clean" {
		t.Errorf("landed on %s: a PreferNoSchedule taint should be avoided while another NodePool fits", r.NewClaims[0].NodePool)
	}
	r = Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1"})}, NodePools: []*NodePool{soft}})
	mustPlaceAll(t, r)
}

func TestPreferredAntiAffinityBindsOnlyItsOwner(t *testing.T) {
	x := map[string]string{"role": "x"}
	prefersAlone := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
		Weight: 5, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: x}, TopologyKey: corev1.LabelHostname}}}}}
	a := builders.Pod(builders.PodOptions{Name: "a", CPU: "1", Affinity: prefersAlone})
	b := builders.Pod(builders.PodOptions{Name: "b", CPU: "1", Labels: x})
	r := Solve(Input{Pods: []*corev1.Pod{a, b}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 1 {
		t.Errorf("%d claims: a's preferred anti-affinity must not keep b away (only required terms are symmetric)", len(r.NewClaims))
	}
	required := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{LabelSelector: &metav1.LabelSelector{MatchLabels: x}, TopologyKey: corev1.LabelHostname}}}}
	a.Spec.Affinity = required
	r = Solve(Input{Pods: []*corev1.Pod{a, b}, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 2 {
		t.Errorf("%d claims: a's required anti-affinity must keep b away", len(r.NewClaims))
	}
}

func TestClaimNamesAtMostSixtyCheapestTypes(t *testing.T) {
	var types []*cloudprovider.InstanceType
	for i := 1; i <= 100; i++ {
		types = append(types, builders.InstanceType(builders.InstanceTypeOptions{Name: fmt.Sprintf("t-%03d", i), CPU: int64(i), MemoryGiB: int64(2 * i), PricePerHour: float64(i)}))
	}
	r := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "1"})}, NodePools: []*NodePool{{Name: "p", InstanceTypes: types}}})
	mustPlaceAll(t, r)
	for _, req := range r.NewClaims[0].NodeSelectorRequirements() {
		if req.Key != corev1.LabelInstanceTypeStable {
			continue
		}
		got := sets.New(req.Values...)
		want := sets.New[string]()
		for i := 1; i <= MaxInstanceTypes; i++ {
			want.Insert(fmt.Sprintf("t-%03d", i))
		}
		if !got.Equal(want) {
			t.Errorf("instance types %v: want the %d cheapest, t-001..t-%03d", sets.List(got), MaxInstanceTypes, MaxInstanceTypes)
		}
	}
}

// TestLimitsOnMemoryAndNodes: spec.limits on memory and on the number of nodes bound new
// claims as limits on cpu do.
func TestLimitsOnMemoryAndNodes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		remaining corev1.ResourceList
		want      string
	}{
		{"nodes", builders.Resources("nodes", "1"), "node limits have been exhausted for nodepool (NodePool=capped): 0 left under spec.limits"},
		{"memory", builders.Resources("memory", "10Gi"), "all available instance types exceed limits for nodepool (NodePool=capped): memory 8Gi of a medium, 2Gi left under spec.limits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := onDemandPool("capped", req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "medium"))
			pool.Remaining = tc.remaining
			// Each pod fills a medium (4 cpu, 8 GiB): two pods need two nodes.
			r := Solve(Input{Pods: builders.Pods(2, builders.PodOptions{CPU: "3", Memory: "5Gi"}), NodePools: []*NodePool{pool}})
			if len(r.NewClaims) != 1 || len(r.PodErrors) != 1 || !strings.Contains(r.PodErrors[0].Err.Error(), tc.want) {
				t.Fatalf("claims %d, errors %+v; want one claim and one pod refused with %q", len(r.NewClaims), r.PodErrors, tc.want)
			}
		})
	}
}

func ptrValue(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestNewClaimChargedLargestType: as Karpenter's subtractMax, a new claim holds, of its
// NodePool's limits, the most any type it may launch as has, so a batch never takes the
// NodePool over its limits whichever types launch, and the claims the limits no longer allow
// overflow to the next NodePool in the same batch.
func TestNewClaimChargedLargestType(t *testing.T) {
	capped := onDemandPool("capped", req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "small", "medium", "large", "xlarge"))
	capped.Weight = 10
	capped.Remaining = builders.Resources("cpu", "20")
	other := onDemandPool("other")
	apart := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "apart"}},
	}}}}
	pods := builders.Pods(3, builders.PodOptions{CPU: "1", Labels: map[string]string{"app": "apart"}, Affinity: apart})
	r := Solve(Input{Pods: pods, NodePools: []*NodePool{other, capped}})
	mustPlaceAll(t, r)
	var cappedTypes [][]string
	most := resource.Quantity{}
	for _, c := range r.NewClaims {
		if c.NodePool != "capped" {
			continue
		}
		cappedTypes = append(cappedTypes, claimTypes(c))
		var largest resource.Quantity
		for _, it := range c.InstanceTypes {
			if q := it.Capacity[corev1.ResourceCPU]; q.Cmp(largest) > 0 {
				largest = q
			}
		}
		most.Add(largest)
	}
	want := [][]string{{"small", "medium", "large", "xlarge"}, {"small", "medium"}}
	if !reflect.DeepEqual(cappedTypes, want) {
		t.Errorf("capped claims' types = %v, want %v: the first holds 16 of the 20 cpu, the second the 4 left, the third goes to other", cappedTypes, want)
	}
	if limit := resource.MustParse("20"); most.Cmp(limit) > 0 {
		t.Errorf("capped's claims may launch %s cpu in all, over its limit of 20", most.String())
	}
}

// TestAffinityTermsAsStored: a pod (anti-)affinity term's labelSelector is read as the API server
// stored it, with its matchLabelKeys already merged at creation, as the kube-scheduler reads it;
// matchLabelKeys are not applied again from the pod's labels of now.
func TestAffinityTermsAsStored(t *testing.T) {
	cases := []struct {
		name     string
		selector *metav1.LabelSelector
	}{
		// Merged when the pod was labelled version v1; relabelled v2 since.
		{"merged at creation, relabelled since", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "version", Operator: metav1.LabelSelectorOpIn, Values: []string{"v1"}}}}},
		// Created where the API server did not merge them (MatchLabelKeysInPodAffinity off).
		{"not merged", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bound := builders.Pod(builders.PodOptions{Name: "web-0", CPU: "100m", Labels: map[string]string{"app": "web", "version": "v1"}})
			node := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1},
				Available: builders.Resources("cpu", "8", "memory", "16Gi", "pods", "100"), Pods: []*corev1.Pod{bound}}
			anti := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: c.selector, MatchLabelKeys: []string{"version"}, TopologyKey: corev1.LabelHostname,
			}}}}
			pod := builders.Pod(builders.PodOptions{Name: "web-1", CPU: "100m", Labels: map[string]string{"app": "web", "version": "v2"}, Affinity: anti})
			r := Solve(Input{Pods: []*corev1.Pod{pod}, Nodes: []*Node{node}, NodePools: []*NodePool{onDemandPool("default")}})
			mustPlaceAll(t, r)
			if len(r.ExistingPlacements) != 0 {
				t.Errorf("placed beside web-0, which its stored selector %s selects", metav1.FormatLabelSelector(c.selector))
			}
		})
	}
}

// TestSpreadDomainsOfOredNodeAffinityTerms: the kube-scheduler counts, among a spread's
// domains, the nodes any of the pod's ORed required node affinity terms matches (node
// affinity policy Honor). Pods placed under the first term (not zone 3) would skew zones 1
// and 2 against zone 3, which the second term allows: the pods the skew refuses there go to
// zone 3 under the second term.
func TestSpreadDomainsOfOredNodeAffinityTerms(t *testing.T) {
	app := map[string]string{"app": "api"}
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{zone3}}}},
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}},
	}}}}
	pods := builders.Pods(6, builders.PodOptions{Labels: app, CPU: "1", Spread: zonalSpread(app), Affinity: affinity})
	r := Solve(Input{Pods: pods, NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	if perZone := podsPerZone(t, r); !reflect.DeepEqual(perZone, map[string]int{zone1: 2, zone2: 2, zone3: 2}) {
		t.Errorf("per zone = %v, want 2 in each: zone 3 is a domain by the second term", perZone)
	}
}

// TestNamespaceSelector: an anti-affinity term's namespaceSelector selects the namespaces whose
// labels it matches (with those it lists), once the input holds their labels; an empty
// selector, or labels not read, select every namespace.
func TestNamespaceSelector(t *testing.T) {
	web := map[string]string{"app": "web"}
	bound := builders.Pod(builders.PodOptions{Name: "web-0", Namespace: "shop", CPU: "100m", Labels: web})
	namespaces := map[string]map[string]string{"shop": {"team": "shop"}, "data": {"team": "data"}, "default": nil}
	for _, tc := range []struct {
		name       string
		selector   *metav1.LabelSelector
		listed     []string
		namespaces map[string]map[string]string
		beside     bool
	}{
		{"selects the bound pod's namespace", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}, nil, namespaces, false},
		{"selects another namespace", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}, nil, namespaces, true},
		{"lists the bound pod's namespace", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}, []string{"shop"}, namespaces, false},
		{"empty selector: every namespace", &metav1.LabelSelector{}, nil, namespaces, false},
		{"labels not read: every namespace", &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1},
				Available: builders.Resources("cpu", "8", "memory", "16Gi", "pods", "100"), Pods: []*corev1.Pod{bound}}
			anti := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: web}, TopologyKey: corev1.LabelHostname, NamespaceSelector: tc.selector, Namespaces: tc.listed,
			}}}}
			pod := builders.Pod(builders.PodOptions{Name: "web-1", CPU: "100m", Labels: web, Affinity: anti})
			r := Solve(Input{Pods: []*corev1.Pod{pod}, Nodes: []*Node{node}, NodePools: []*NodePool{onDemandPool("default")}, NamespaceLabels: tc.namespaces})
			mustPlaceAll(t, r)
			if beside := len(r.ExistingPlacements) == 1; beside != tc.beside {
				t.Errorf("placed beside the bound pod of shop: %v, want %v", beside, tc.beside)
			}
		})
	}
}

// TestDomainPinnedWhereThePodFits: a pod that another pod's zonal affinity selects has its new
// claim's zone pinned (so the affinity can count it); the zone must be one where an instance
// type with room for it launches, not the first zone any type reaches (conformance seed 31:
// the pods stayed pending that Karpenter placed).
func TestDomainPinnedWhereThePodFits(t *testing.T) {
	zoneB := []cloudprovider.Offering{{Zone: zone2, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.8, Available: true}}
	types := []*cloudprovider.InstanceType{
		builders.InstanceType(builders.InstanceTypeOptions{Name: "big", CPU: 16, MemoryGiB: 64, PricePerHour: 0.8, Offerings: zoneB}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "small", CPU: 2, MemoryGiB: 16, PricePerHour: 0.1}),
	}
	pool := &NodePool{Name: "np", Requirements: scheduling.NewRequirements(scheduling.MustRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone1, zone2)), InstanceTypes: types}
	pref := &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: corev1.PodAffinityTerm{
		TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a3"}}}}}}}
	pods := append(builders.Pods(2, builders.PodOptions{Name: "w0", CPU: "3", Labels: map[string]string{"app": "a3"}}),
		builders.Pods(2, builders.PodOptions{Name: "gpu", CPU: "500m", Labels: map[string]string{"app": "a1"}, Affinity: pref, Extended: map[corev1.ResourceName]string{"nvidia.com/gpu": "1"}})...)
	r := Solve(Input{Pods: pods, NodePools: []*NodePool{pool}})
	for _, e := range r.PodErrors {
		if e.Pod.Name != "gpu-0" && e.Pod.Name != "gpu-1" {
			t.Errorf("%s refused: %v", e.Pod.Name, e.Err)
		}
	}
	if len(r.NewClaims) != 1 || claimTypes(r.NewClaims[0])[0] != "big" {
		t.Errorf("want the 3-cpu pods on one big node in %s, got %d claims", zone2, len(r.NewClaims))
	}
}

// partitionTypes are instance types as a NodeClass with a three-partition placement group
// offers them: each offering in zone 1, on-demand, once per partition (1 to 3), as the AWS
// provider v1.15.2's PlacementGroupResolver expands them.
func partitionTypes() []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, t := range []struct {
		name  string
		cpu   int64
		price float64
	}{{"small", 2, 0.10}, {"medium", 4, 0.20}, {"large", 8, 0.40}} {
		var ofs []cloudprovider.Offering
		for p := int32(1); p <= 3; p++ {
			ofs = append(ofs, cloudprovider.Offering{Zone: zone1, CapacityType: karpv1.CapacityTypeOnDemand, Price: t.price, Available: true,
				PlacementGroupID: "pg-0b0000000000000b1", PlacementPartition: p})
		}
		out = append(out, builders.InstanceType(builders.InstanceTypeOptions{Name: t.name, CPU: t.cpu, MemoryGiB: 2 * t.cpu, PricePerHour: t.price, Offerings: ofs}))
	}
	return out
}

// claimPartition is the partition a claim's requirements pin, failing the test when they pin
// none.
func claimPartition(t *testing.T, c *Claim) string {
	t.Helper()
	r, ok := c.Requirements.Get(awsv1.LabelPlacementGroupPartition)
	if !ok || len(r.Values()) != 1 {
		t.Fatalf("claim's partition not pinned: %s", c.Requirements)
	}
	return r.Values()[0]
}

// TestPartitionSpreadAndAffinity: the partitions of a partition placement group are offerings,
// so topology spread over karpenter.k8s.aws/placement-group-partition sees the domains 1 to 3
// (maxSkew 1, DoNotSchedule: three pods, three claims in three partitions) and node affinity
// on a partition pins the claim to it. Before partitions were offerings no instance type had
// the label and these pods stayed pending.
func TestPartitionSpreadAndAffinity(t *testing.T) {
	pool := &NodePool{Name: "kafka", Requirements: scheduling.NewRequirements(req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)),
		InstanceTypes: partitionTypes()}
	app := map[string]string{"app": "broker"}
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: awsv1.LabelPlacementGroupPartition, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: app}}}
	r := Solve(Input{Pods: builders.Pods(3, builders.PodOptions{Name: "broker", CPU: "1", Labels: app, Spread: spread}), NodePools: []*NodePool{pool}})
	mustPlaceAll(t, r)
	perPartition := map[string]int{}
	for _, c := range r.NewClaims {
		perPartition[claimPartition(t, c)] += len(c.Pods)
	}
	if !reflect.DeepEqual(perPartition, map[string]int{"1": 1, "2": 1, "3": 1}) {
		t.Errorf("pods per partition %v, want one in each of 1, 2 and 3", perPartition)
	}

	pinned := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: awsv1.LabelPlacementGroupPartition, Operator: corev1.NodeSelectorOpIn, Values: []string{"3"}}}}}}}}
	r = Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{Name: "zookeeper", CPU: "1", Affinity: pinned})}, NodePools: []*NodePool{pool}})
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 1 || claimPartition(t, r.NewClaims[0]) != "3" {
		t.Errorf("claims %d, want one pinned to partition 3", len(r.NewClaims))
	}

	// A NodePool without a placement group offers no partition: the pinned pod stays pending.
	r = Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{Name: "zookeeper", CPU: "1", Affinity: pinned})}, NodePools: []*NodePool{onDemandPool("plain")}})
	if len(r.PodErrors) != 1 || len(r.NewClaims) != 0 {
		t.Errorf("a plain NodePool took a pod pinned to partition 3: %d claims, %d errors", len(r.NewClaims), len(r.PodErrors))
	}
}

// TestOthersSpreadDoesNotSteerDomain: a pod that another pod's zonal spread selects, but that
// has no zonal constraint of its own, goes to the zone where its node is cheapest, not to the
// zone with the fewest pods of that spread: the kube-scheduler reads only the incoming pod's
// spread (conformance seed 285: ours paid on-demand in other zones for pods Karpenter put on
// spot in the zone of the spread's pods).
func TestOthersSpreadDoesNotSteerDomain(t *testing.T) {
	pool := zone1CheapestPool()
	app := map[string]string{"app": "api"}
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 5, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: app}}}
	// Three api pods run in zone 1 on a full node; one more is pending there, and a worker
	// its spread selects.
	full := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1},
		Available: builders.Resources("cpu", "0", "memory", "0", "pods", "0"),
		Pods:      builders.Pods(3, builders.PodOptions{Name: "api-old", Labels: app, CPU: "1"})}
	pods := append(builders.Pods(1, builders.PodOptions{Name: "api", CPU: "1", Labels: app, Spread: spread, NodeSelector: map[string]string{corev1.LabelTopologyZone: zone1}}),
		builders.Pods(1, builders.PodOptions{Name: "worker", CPU: "3", Labels: app})...)
	r := Solve(Input{Pods: pods, Nodes: []*Node{full}, NodePools: []*NodePool{pool}})
	mustPlaceAll(t, r)
	for _, c := range r.NewClaims {
		if z, _ := c.Requirements.Get(corev1.LabelTopologyZone); c.Pods[0].Name == "worker-0" && (z.Len() != 1 || z.Values()[0] != zone1) {
			t.Errorf("worker's claim in %v at $%.2f/hour, want %s at $0.05/hour", z.Values(), c.Price, zone1)
		}
	}
}

// TestSpreadCountsOnlyNodesItsPolicyCounts: a pod placed in the batch on a node its selector's
// spread does not count (another architecture, under the default nodeAffinityPolicy Honor) does
// not raise that spread's count in the node's zone, as the kube-scheduler and Karpenter's
// TopologyGroup.Counts count it (conformance seed 676: $0.47/h against Karpenter's $0.14/h).
func TestSpreadCountsOnlyNodesItsPolicyCounts(t *testing.T) {
	arm := builders.InstanceType(builders.InstanceTypeOptions{Name: "arm", Arch: "arm64", CPU: 2, MemoryGiB: 4, Offerings: []cloudprovider.Offering{
		{Zone: zone1, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.05, Available: true},
		{Zone: zone2, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.10, Available: true},
	}})
	pool := &NodePool{Name: "np", Requirements: scheduling.NewRequirements(), InstanceTypes: []*cloudprovider.InstanceType{arm}}
	app := map[string]string{"app": "api"}
	// An amd64 node in zone 1 with room for the web pod, which the api pod's spread selects.
	amd := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1, corev1.LabelArchStable: "amd64"},
		Available: builders.Resources("cpu", "4", "memory", "8Gi", "pods", "10")}
	high := int32(10)
	pods := append(builders.Pods(1, builders.PodOptions{Name: "web", CPU: "2", Labels: app, Priority: &high,
		NodeSelector: map[string]string{corev1.LabelArchStable: "amd64"}}),
		builders.Pods(1, builders.PodOptions{Name: "api", CPU: "1", Labels: app, NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"},
			Spread: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: app}}}})...)
	r := Solve(Input{Pods: pods, Nodes: []*Node{amd}, NodePools: []*NodePool{pool}})
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 1 {
		t.Fatalf("got %d claims, want 1 for the api pod", len(r.NewClaims))
	}
	if z, _ := r.NewClaims[0].Requirements.Get(corev1.LabelTopologyZone); z.Len() != 1 || z.Values()[0] != zone1 {
		t.Errorf("api pod's claim in %v at $%.2f/hour, want %s at $0.05/hour: the web pod on an amd64 node does not count in its spread", z.Values(), r.NewClaims[0].Price, zone1)
	}
}

// TestSpreadSkipsDomainsNoTypeHolds: a zone where no instance type has room for the pods (here
// no GPUs) is not a domain of their zonal spread, since no node that takes them can be made
// there and the kube-scheduler counts only the zones of nodes that exist: four one-GPU pods
// with maxSkew 1 run two in each of the two zones that have GPU types, instead of leaving two
// pending for a zone only CPU types reach (conformance seed 509).
func TestSpreadSkipsDomainsNoTypeHolds(t *testing.T) {
	gpuOfferings := []cloudprovider.Offering{
		{Zone: zone2, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.50, Available: true},
		{Zone: zone3, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.50, Available: true},
	}
	gpu := builders.InstanceType(builders.InstanceTypeOptions{Name: "gpu", CPU: 4, MemoryGiB: 16, Offerings: gpuOfferings,
		Extended: map[corev1.ResourceName]int64{"nvidia.com/gpu": 1}})
	cpu := builders.InstanceType(builders.InstanceTypeOptions{Name: "cpu", CPU: 4, MemoryGiB: 16, PricePerHour: 0.10})
	pools := []*NodePool{
		{Name: "gpu", Requirements: scheduling.NewRequirements(), InstanceTypes: []*cloudprovider.InstanceType{gpu}},
		{Name: "general", Requirements: scheduling.NewRequirements(), InstanceTypes: []*cloudprovider.InstanceType{cpu}},
	}
	app := map[string]string{"app": "train"}
	pods := builders.Pods(4, builders.PodOptions{Name: "train", CPU: "1", Labels: app, Extended: map[corev1.ResourceName]string{"nvidia.com/gpu": "1"},
		Spread: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: app}}}})
	r := Solve(Input{Pods: pods, NodePools: pools})
	mustPlaceAll(t, r)
	perZone := map[string]int{}
	for _, c := range r.NewClaims {
		z, _ := c.Requirements.Get(corev1.LabelTopologyZone)
		perZone[strings.Join(z.Values(), ",")] += len(c.Pods)
	}
	if perZone[zone2] != 2 || perZone[zone3] != 2 {
		t.Errorf("pods per zone %v, want 2 in %s and 2 in %s", perZone, zone2, zone3)
	}
}

// TestSpreadNodeInclusionIgnoresVolumeZones: a spread's nodeAffinityPolicy Honor reads the
// pod's node selector and required node affinity, not its volumes' zones (the kube-scheduler's
// PodTopologySpread, Karpenter's TopologyNodeFilter): a node in another zone still counts as a
// domain, so pods whose volumes hold them in one zone stop at maxSkew there (conformance seed
// 922, where ours put four pods in one zone beside an empty one the kube-scheduler counts).
func TestSpreadNodeInclusionIgnoresVolumeZones(t *testing.T) {
	app := map[string]string{"app": "db"}
	roomy := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1},
		Available: builders.Resources("cpu", "16", "memory", "32Gi", "pods", "20")}
	// A full node in zone 2: it takes no pod, but it is a domain with none of them.
	full := &Node{Name: "n2", Labels: map[string]string{corev1.LabelHostname: "n2", corev1.LabelTopologyZone: zone2},
		Available: builders.Resources("cpu", "0", "memory", "0", "pods", "0")}
	pods := builders.Pods(3, builders.PodOptions{Name: "db", CPU: "1", Labels: app,
		Spread: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: app}}}})
	volumes := map[types.UID]scheduling.Requirements{}
	for _, p := range pods {
		volumes[p.UID] = scheduling.NewRequirements(scheduling.MustRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone1))
	}
	r := Solve(Input{Pods: pods, Nodes: []*Node{roomy, full}, VolumeRequirements: volumes})
	if placed := len(r.ExistingPlacements); placed != 1 || len(r.PodErrors) != 2 {
		t.Errorf("%d pods placed and %d refused, want 1 and 2: zone 2's node counts, so zone 1 takes one pod within maxSkew 1", placed, len(r.PodErrors))
	}
}

// TestSpreadCountsZonesOtherPodsReach: a zone whose instance types are too small for the
// spread's pods is still a domain when another pod of the batch gets a node there, since the
// kube-scheduler counts that node (with none of the pods): three 4-cpu pods with maxSkew 1 take
// one node in each of the two zones with large types, and the third waits (conformance seed
// 1372).
func TestSpreadCountsZonesOtherPodsReach(t *testing.T) {
	large := builders.InstanceType(builders.InstanceTypeOptions{Name: "large", CPU: 8, MemoryGiB: 16, Offerings: []cloudprovider.Offering{
		{Zone: zone1, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.40, Available: true},
		{Zone: zone2, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.40, Available: true},
	}})
	small := builders.InstanceType(builders.InstanceTypeOptions{Name: "small", CPU: 2, MemoryGiB: 4, Offerings: []cloudprovider.Offering{
		{Zone: zone3, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.05, Available: true},
	}})
	pool := &NodePool{Name: "np", Requirements: scheduling.NewRequirements(), InstanceTypes: []*cloudprovider.InstanceType{large, small}}
	app := map[string]string{"app": "big"}
	pods := append(builders.Pods(3, builders.PodOptions{Name: "big", CPU: "4", Labels: app,
		Spread: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: app}}}}),
		builders.Pods(1, builders.PodOptions{Name: "web", CPU: "1", NodeSelector: map[string]string{corev1.LabelTopologyZone: zone3}})...)
	r := Solve(Input{Pods: pods, NodePools: []*NodePool{pool}})
	if len(r.PodErrors) != 1 || r.PodErrors[0].Pod.Labels["app"] != "big" {
		t.Fatalf("%d pods refused, want one big pod: zone 3 gets the web pod's node, which the spread counts", len(r.PodErrors))
	}
}

// TestMinValuesUnderLimitsNamesTheLimit: when enough instance types have room for minValues but
// the NodePool's limits leave too few, the refusal names the limit, the thing to raise, as
// Karpenter's does (it filters by limits before it counts minValues), not minValues
// (conformance seed 457).
func TestMinValuesUnderLimitsNamesTheLimit(t *testing.T) {
	two := 2
	r := req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "small", "medium", "large", "xlarge")
	r.MinValues = &two
	pool := onDemandPool("capped", r)
	pool.Remaining = builders.Resources("cpu", "3")
	got := Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "2"})}, NodePools: []*NodePool{pool}})
	if len(got.PodErrors) != 1 || !strings.Contains(got.PodErrors[0].Err.Error(), "exceed limits for nodepool (NodePool=capped)") {
		t.Fatalf("want one limits error, got %d: %v", len(got.PodErrors), firstErr(got))
	}
	// Without the limit, too few types with room is a minValues error still.
	pool.Remaining = nil
	got = Solve(Input{Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{CPU: "9"})}, NodePools: []*NodePool{pool}})
	if len(got.PodErrors) != 1 || !strings.Contains(got.PodErrors[0].Err.Error(), "minValues") {
		t.Fatalf("want one minValues error, got %d: %v", len(got.PodErrors), firstErr(got))
	}
}

// firstErr is the first pod error of a solve, or nil.
func firstErr(r *Results) error {
	if len(r.PodErrors) == 0 {
		return nil
	}
	return r.PodErrors[0].Err
}

// TestOthersScheduleAnywaySpreadLeavesZoneOpen: a pod only selected by another pod's required
// pod affinity (whose followed pods already run) and ScheduleAnyway spread is not bound by
// either, so its claim's zone is left open and launches where it is cheapest, as Karpenter's
// Topology.AddRequirements leaves it. Pinned by the counts, it went to the zone with the fewest
// followed pods, at twice the price (conformance seed 499: $0.2219/h against Karpenter's
// $0.1583/h).
func TestOthersScheduleAnywaySpreadLeavesZoneOpen(t *testing.T) {
	pool := zone1CheapestPool()
	app := map[string]string{"app": "api"}
	selector := &metav1.LabelSelector{MatchLabels: app}
	// Two api pods run in zone 1 on a full node.
	full := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1},
		Available: builders.Resources("cpu", "0", "memory", "0", "pods", "0"),
		Pods:      builders.Pods(2, builders.PodOptions{Name: "api-old", Labels: app, CPU: "1"})}
	// The worker is an api pod; the follower must share a zone with api pods and would
	// rather spread them.
	follower := builders.PodOptions{Name: "follower", CPU: "500m",
		Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: corev1.LabelTopologyZone, LabelSelector: selector}}}},
		Spread: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: selector}}}
	pods := append(builders.Pods(1, builders.PodOptions{Name: "worker", CPU: "3", Labels: app}), builders.Pods(1, follower)...)
	r := Solve(Input{Pods: pods, Nodes: []*Node{full}, NodePools: []*NodePool{pool}})
	mustPlaceAll(t, r)
	for _, c := range r.NewClaims {
		if c.Pods[0].Name == "worker-0" && c.Price != 0.05 {
			z, _ := c.Requirements.Get(corev1.LabelTopologyZone)
			t.Errorf("worker's claim in %v at $%.2f/hour, want one in %s at $0.05/hour", z.Values(), c.Price, zone1)
		}
	}
}

// TestAntiAffinityLeavesClaimZonesOpen: growing claims as Karpenter does, a pod whose zone
// anti-affinity rules one zone out leaves its claim any of the others (Karpenter's
// nextDomainAntiAffinity), and is counted in all of them: a pod joining later narrows the zone
// to one where a type for both is offered, rather than opening a claim of its own beside a
// claim pinned where the first pod alone was cheapest.
func TestAntiAffinityLeavesClaimZonesOpen(t *testing.T) {
	offer := func(zone string, price float64) cloudprovider.Offering {
		return cloudprovider.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true}
	}
	pool := &NodePool{Name: "np", Requirements: scheduling.NewRequirements(), InstanceTypes: []*cloudprovider.InstanceType{
		builders.InstanceType(builders.InstanceTypeOptions{Name: "amd", CPU: 8, MemoryGiB: 16, Offerings: []cloudprovider.Offering{offer(zone1, 0.10), offer(zone2, 0.11)}}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "arm", CPU: 8, MemoryGiB: 16, Arch: "arm64", Offerings: []cloudprovider.Offering{offer(zone2, 0.105)}}),
	}}
	web := map[string]string{"app": "web"}
	full := &Node{Name: "n3", Labels: map[string]string{corev1.LabelHostname: "n3", corev1.LabelTopologyZone: zone3},
		Available: builders.Resources("cpu", "0", "memory", "0", "pods", "0"),
		Pods:      builders.Pods(1, builders.PodOptions{Name: "web", Labels: web, CPU: "1"})}
	db := builders.PodOptions{Name: "db", CPU: "6",
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: web}}}}}}
	pods := append(builders.Pods(1, db), builders.Pods(1, builders.PodOptions{Name: "agent", CPU: "1", NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"}})...)
	in := Input{Pods: pods, Nodes: []*Node{full}, NodePools: []*NodePool{pool}}
	in.Options.GrowClaims, in.Options.karpenterOrder = true, true
	r := Solve(in)
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 1 || r.NewClaims[0].Price != 0.105 {
		for _, c := range r.NewClaims {
			z, _ := c.Requirements.Get(corev1.LabelTopologyZone)
			t.Errorf("claim %v in %v at $%.3f/hour", claimTypes(c), z.Values(), c.Price)
		}
		t.Fatalf("got %d claims, want one arm claim in %s at $0.105/hour", len(r.NewClaims), zone2)
	}
	// Counted in every zone its claim may take: a pod the db's anti-affinity keeps away fits
	// in no zone of this batch but the web pods' own.
	in.Pods = append(in.Pods, builders.Pods(1, builders.PodOptions{Name: "web", Labels: web, CPU: "1", NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"}})...)
	r = Solve(in)
	if len(r.PodErrors) != 1 || r.PodErrors[0].Pod.Name != "web-0" {
		t.Errorf("got %d pods refused, want only the web pod: the db pod is counted in zones 1 and 2", len(r.PodErrors))
	}
}

// TestOneClaimBesideNodesComparedWithKarpentersOrder: an answer with one new claim is weighed
// against Karpenter's packing too when existing nodes take pods: here ours fills the node with
// the high-priority small pods and launches an amd64 node for the large pod that selects amd64,
// where Karpenter's order (cpu descending) puts the large pod on the node and launches an arm64
// node at a quarter of the price for the two small ones left (conformance seed 1301).
func TestOneClaimBesideNodesComparedWithKarpentersOrder(t *testing.T) {
	pool := &NodePool{Name: "np", Requirements: scheduling.NewRequirements(), InstanceTypes: []*cloudprovider.InstanceType{
		builders.InstanceType(builders.InstanceTypeOptions{Name: "amd", CPU: 4, MemoryGiB: 16, PricePerHour: 0.20}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "arm", CPU: 2, MemoryGiB: 8, Arch: "arm64", PricePerHour: 0.05}),
	}}
	node := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1, corev1.LabelArchStable: "amd64"},
		Available: builders.Resources("cpu", "4", "memory", "16Gi", "pods", "10")}
	high := int32(10)
	pods := append(builders.Pods(3, builders.PodOptions{Name: "small", CPU: "1", Priority: &high}),
		builders.Pods(1, builders.PodOptions{Name: "large", CPU: "3", NodeSelector: map[string]string{corev1.LabelArchStable: "amd64"}})...)
	r := Solve(Input{Pods: pods, Nodes: []*Node{node}, NodePools: []*NodePool{pool}})
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 1 || claimTypes(r.NewClaims[0])[0] != "arm" {
		for _, c := range r.NewClaims {
			t.Errorf("claim %v at $%.3f/hour", claimTypes(c), c.Price)
		}
		t.Fatalf("got %d claims, want one whose cheapest type is arm", len(r.NewClaims))
	}
}

// TestJoiningPodPinsZoneForTheClaim: a pod with a zonal spread joining a claim pins the zone
// where a type holds the claim's pods with it, not the one where it alone is cheapest, where
// no type would hold them and it would open a claim of its own (conformance seed 1231).
func TestJoiningPodPinsZoneForTheClaim(t *testing.T) {
	offer := func(zone string, price float64) []cloudprovider.Offering {
		return []cloudprovider.Offering{{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true}}
	}
	pool := &NodePool{Name: "np", Requirements: scheduling.NewRequirements(), InstanceTypes: []*cloudprovider.InstanceType{
		builders.InstanceType(builders.InstanceTypeOptions{Name: "big", CPU: 4, MemoryGiB: 16, Offerings: offer(zone1, 0.20)}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "small", CPU: 1, MemoryGiB: 4, Offerings: offer(zone2, 0.04)}),
	}}
	b := map[string]string{"app": "b"}
	pods := append(builders.Pods(1, builders.PodOptions{Name: "a", CPU: "2"}),
		builders.Pods(1, builders.PodOptions{Name: "b", CPU: "1", Labels: b, Spread: []corev1.TopologySpreadConstraint{{MaxSkew: 1,
			TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: b}}}})...)
	r := Solve(Input{Pods: pods, NodePools: []*NodePool{pool}})
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 1 {
		for _, c := range r.NewClaims {
			z, _ := c.Requirements.Get(corev1.LabelTopologyZone)
			t.Errorf("claim %v in %v at $%.2f/hour", claimTypes(c), z.Values(), c.Price)
		}
		t.Fatalf("got %d claims, want one big claim in %s at $0.20/hour", len(r.NewClaims), zone1)
	}
}

// TestDomainPinnedWhereMinValuesHold: a claim's zone is pinned, for a zonal spread, where the
// NodePool's instance types still meet its minValues, not where the pod alone is cheapest but
// one instance type is offered, which would refuse the pod (conformance seed 1164).
func TestDomainPinnedWhereMinValuesHold(t *testing.T) {
	offer := func(price float64, zones ...string) []cloudprovider.Offering {
		var out []cloudprovider.Offering
		for _, z := range zones {
			out = append(out, cloudprovider.Offering{Zone: z, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true})
		}
		return out
	}
	two := 2
	types := req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpExists)
	types.MinValues = &two
	pool := &NodePool{Name: "np", Requirements: scheduling.NewRequirements(types), InstanceTypes: []*cloudprovider.InstanceType{
		builders.InstanceType(builders.InstanceTypeOptions{Name: "cheap", CPU: 2, MemoryGiB: 8, Offerings: offer(0.05, zone1, zone2)}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "other", CPU: 2, MemoryGiB: 8, Offerings: offer(0.08, zone2)}),
	}}
	app := map[string]string{"app": "api"}
	pods := builders.Pods(1, builders.PodOptions{Name: "api", CPU: "1", Labels: app, Spread: []corev1.TopologySpreadConstraint{{MaxSkew: 1,
		TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: app}}}})
	r := Solve(Input{Pods: pods, NodePools: []*NodePool{pool}})
	mustPlaceAll(t, r)
	for _, c := range r.NewClaims {
		if z, _ := c.Requirements.Get(corev1.LabelTopologyZone); z.Len() != 1 || z.Values()[0] != zone2 {
			t.Errorf("claim %v in %v, want %s, the zone both types are offered in", claimTypes(c), z.Values(), zone2)
		}
	}
}

// zone1CheapestPool is a NodePool of one on-demand instance type (4 cpu) at $0.05/hour in zone
// 1 and $0.10/hour in zones 2 and 3.
func zone1CheapestPool() *NodePool {
	var offerings []cloudprovider.Offering
	for zone, price := range map[string]float64{zone1: 0.05, zone2: 0.10, zone3: 0.10} {
		offerings = append(offerings, cloudprovider.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true})
	}
	return &NodePool{Name: "np", Requirements: scheduling.NewRequirements(), InstanceTypes: []*cloudprovider.InstanceType{
		builders.InstanceType(builders.InstanceTypeOptions{Name: "node", CPU: 4, MemoryGiB: 16, PricePerHour: 0.10, Offerings: offerings}),
	}}
}
