package scheduler

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/scenarios")

// scenario is the input of a golden scenario file (testdata/scenarios/*.yaml).
type scenario struct {
	// Description says what the scenario shows.
	Description string `json:"description"`
	NodePools   []struct {
		Name         string                                        `json:"name"`
		Weight       int32                                         `json:"weight,omitempty"`
		Requirements []karpv1.NodeSelectorRequirementWithMinValues `json:"requirements,omitempty"`
		Labels       map[string]string                             `json:"labels,omitempty"`
		Taints       []corev1.Taint                                `json:"taints,omitempty"`
		Limits       corev1.ResourceList                           `json:"limits,omitempty"`
		Daemonsets   corev1.ResourceList                           `json:"daemonsetOverhead,omitempty"`
		// InstanceTypes names types of the synthetic test set; "ec2" takes the real catalog.
		InstanceTypes []string `json:"instanceTypes,omitempty"`
	} `json:"nodePools"`
	Nodes []struct {
		Name      string              `json:"name"`
		Labels    map[string]string   `json:"labels,omitempty"`
		Taints    []corev1.Taint      `json:"taints,omitempty"`
		Available corev1.ResourceList `json:"available"`
		Pods      []builders.PodGroup `json:"pods,omitempty"`
	} `json:"nodes,omitempty"`
	Pods []builders.PodGroup `json:"pods"`
	// VolumeZones pins pods (by name) to zones, as their volumes would.
	VolumeZones       map[string][]string `json:"volumeZones,omitempty"`
	IgnorePreferences bool                `json:"ignorePreferences,omitempty"`
}

func (sc *scenario) input(t *testing.T) Input {
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range testTypes() {
		byName[it.Name] = it
	}
	in := Input{Options: Options{IgnorePreferences: sc.IgnorePreferences}, VolumeRequirements: map[types.UID]scheduling.Requirements{}}
	for _, np := range sc.NodePools {
		reqs, err := scheduling.FromNodePoolRequirements(np.Requirements...)
		if err != nil {
			t.Fatalf("nodepool %s: %v", np.Name, err)
		}
		reqs = reqs.Intersect(scheduling.FromLabels(np.Labels)).With(scheduling.MustRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, np.Name))
		pool := &NodePool{Name: np.Name, Weight: np.Weight, Requirements: reqs, Labels: np.Labels, Taints: np.Taints, Remaining: np.Limits}
		if len(np.Daemonsets) > 0 {
			// One daemonset per NodePool that runs on its nodes only, with the overhead given.
			in.DaemonPods = append(in.DaemonPods, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: np.Name + "-daemon", Namespace: "kube-system"},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{karpv1.NodePoolLabelKey: np.Name},
					Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers:   []corev1.Container{{Name: "daemon", Resources: corev1.ResourceRequirements{Requests: np.Daemonsets}}},
				},
			})
		}
		for _, name := range np.InstanceTypes {
			if name == "ec2" {
				types, err := cloudprovider.DefaultInstanceTypes(cloudprovider.InstanceTypeOptions{Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}})
				if err != nil {
					t.Fatal(err)
				}
				pool.InstanceTypes = append(pool.InstanceTypes, types...)
				continue
			}
			it, ok := byName[name]
			if !ok {
				t.Fatalf("nodepool %s: unknown instance type %q", np.Name, name)
			}
			pool.InstanceTypes = append(pool.InstanceTypes, it)
		}
		in.NodePools = append(in.NodePools, pool)
	}
	for _, n := range sc.Nodes {
		node := &Node{Name: n.Name, Labels: n.Labels, Taints: n.Taints, Available: n.Available}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[corev1.LabelHostname] = n.Name
		for _, g := range n.Pods {
			node.Pods = append(node.Pods, g.Expand()...)
		}
		in.Nodes = append(in.Nodes, node)
	}
	for _, g := range sc.Pods {
		in.Pods = append(in.Pods, g.Expand()...)
	}
	for _, pod := range in.Pods {
		if zones, ok := sc.VolumeZones[pod.Name]; ok {
			in.VolumeRequirements[pod.UID] = scheduling.NewRequirements(scheduling.MustRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
		}
	}
	return in
}

// describe renders decisions as the golden text.
func describe(r *Results) string {
	var b strings.Builder
	total := 0.0
	for i, c := range r.NewClaims {
		total += c.Price
		names := claimTypes(c)
		more := ""
		if len(names) > 6 {
			more = fmt.Sprintf(" … (%d types)", len(names))
			names = names[:6]
		}
		fmt.Fprintf(&b, "claim %d: nodepool %s, $%.4f/hour, instance types [%s]%s\n", i, c.NodePool, c.Price, strings.Join(names, " "), more)
		var pinned []string
		for _, req := range c.Requirements.All() {
			if req.Key == corev1.LabelTopologyZone || req.Key == karpv1.CapacityTypeLabelKey || req.Key == corev1.LabelArchStable || req.Key == awsv1.LabelInstanceCPU {
				pinned = append(pinned, req.String())
			}
		}
		if len(pinned) > 0 {
			fmt.Fprintf(&b, "  requirements: %s\n", strings.Join(pinned, ", "))
		}
		fmt.Fprintf(&b, "  pods: %s\n", podNames(c.Pods))
	}
	if len(r.NewClaims) > 0 {
		fmt.Fprintf(&b, "total: %d claims, $%.4f/hour\n", len(r.NewClaims), total)
	}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range r.ExistingPlacements {
		byNode[p.Node] = append(byNode[p.Node], p.Pod)
	}
	nodes := make([]string, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		fmt.Fprintf(&b, "existing node %s: %s\n", n, podNames(byNode[n]))
	}
	for _, e := range r.PodErrors {
		fmt.Fprintf(&b, "unschedulable %s: %v\n", e.Pod.Name, e.Err)
	}
	return b.String()
}

func podNames(pods []*corev1.Pod) string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// TestScenarios runs every testdata/scenarios/*.yaml and compares the decisions with the
// .golden file beside it. Regenerate with: go test ./pkg/scheduler -run TestScenarios -update
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var sc scenario
			if err := yaml.UnmarshalStrict(data, &sc); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			got := "# " + sc.Description + "\n" + describe(Solve(sc.input(t)))
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("decisions differ from %s (run with -update if the change is intended):\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

// TestBurstOfFourShapesPacksIntoFewNodes: 1,800 pods of four shapes at once on the real
// catalog. Claims opened early count on pending pods to size themselves; when larger pods fill
// them first, those promises must be released, or every later claim is sized for its pod alone
// (this batch once became 562 nodes, most with one or two pods).
func TestBurstOfFourShapesPacksIntoFewNodes(t *testing.T) {
	pool := catalogPool(t)
	var pods []*corev1.Pod
	for i, s := range []struct{ cpu, memory string }{{"250m", "512Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"500m", "4Gi"}} {
		pods = append(pods, builders.Pods(450, builders.PodOptions{Name: fmt.Sprintf("svc-%d", i), CPU: s.cpu, Memory: s.memory})...)
	}
	res := Solve(Input{Pods: pods, NodePools: []*NodePool{pool}})
	grow := Solve(Input{Pods: pods, NodePools: []*NodePool{pool}, Options: Options{GrowClaims: true}})
	if len(res.PodErrors) > 0 {
		t.Fatalf("%d pods unplaced: %v", len(res.PodErrors), res.PodErrors[0].Err)
	}
	if len(res.NewClaims) > 40 {
		t.Errorf("%d claims for 1,800 pods", len(res.NewClaims))
	}
	if cost(res) > cost(grow)+1e-9 {
		t.Errorf("$%.2f/hour, Karpenter's packing $%.2f/hour", cost(res), cost(grow))
	}
	bound := lpBound(t, pool, pods)
	if cost(res) > 1.15*bound {
		t.Errorf("$%.2f/hour, more than 15%% above the LP bound $%.2f/hour", cost(res), bound)
	}
	t.Logf("%d claims, $%.2f/hour (Karpenter's packing: %d claims, $%.2f/hour; LP bound $%.2f/hour)",
		len(res.NewClaims), cost(res), len(grow.NewClaims), cost(grow), bound)
}

// TestComplementaryShapesShareNodes: cpu-heavy and memory-heavy pods arriving together share
// nodes as the LP plan mixes them, instead of each filling its own family (1.29× the bound
// before the plan); GPU pods, a dimension of the plan's LP, share theirs with cpu pods too; and
// on-demand pods, a class of the plan, with pods that could go to spot (1.27× before the plan).
func TestComplementaryShapesShareNodes(t *testing.T) {
	for _, tc := range []struct {
		batch string
		limit float64
	}{{"skewed-3000", 1.035}, {"gpu-web-2000", 1.03}, {"spot-ondemand-3000", 1.02}} {
		t.Run(tc.batch, func(t *testing.T) {
			i := slices.IndexFunc(catalogBatches, func(b catalogBatch) bool { return b.name == tc.batch })
			pool, pods := catalogBatches[i].pool(t), catalogBatches[i].pods()
			res := Solve(Input{Pods: pods, NodePools: []*NodePool{pool}})
			if len(res.PodErrors) > 0 {
				t.Fatalf("%d pods unplaced: %v", len(res.PodErrors), res.PodErrors[0].Err)
			}
			bound := lpBound(t, pool, pods)
			if cost(res) > tc.limit*bound {
				t.Errorf("$%.2f/hour, %.3f× the LP bound $%.2f/hour, above %.3f×", cost(res), cost(res)/bound, bound, tc.limit)
			}
			t.Logf("%d claims, $%.2f/hour, %.3f× the LP bound", len(res.NewClaims), cost(res), cost(res)/bound)
			// The plan is deterministic: the same batch gives the same claims.
			again := Solve(Input{Pods: pods, NodePools: []*NodePool{pool}})
			if len(again.NewClaims) != len(res.NewClaims) {
				t.Fatalf("%d claims, then %d", len(res.NewClaims), len(again.NewClaims))
			}
			for i, c := range again.NewClaims {
				if i >= len(res.NewClaims) || len(c.Pods) != len(res.NewClaims[i].Pods) || c.Pods[0] != res.NewClaims[i].Pods[0] || c.Price != res.NewClaims[i].Price {
					t.Fatalf("claim %d differs between two runs", i)
				}
			}
		})
	}
}

// TestPlanUnderLimits: a NodePool's limits do not turn the LP plan off. Under limits far above
// the batch (spec.limits cpu: 1000 is the usual NodePool's) the skewed batch costs what it
// costs without limits; under a binding limit every claim stays within it and the pods the
// limit leaves no room for are refused in Karpenter's words.
func TestPlanUnderLimits(t *testing.T) {
	i := slices.IndexFunc(catalogBatches, func(b catalogBatch) bool { return b.name == "skewed-3000" })
	pods := catalogBatches[i].pods()
	free := Solve(Input{Pods: pods, NodePools: []*NodePool{catalogBatches[i].pool(t)}})

	generous := catalogBatches[i].pool(t)
	generous.Remaining = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100000")}
	limited := Solve(Input{Pods: pods, NodePools: []*NodePool{generous}})
	if len(limited.PodErrors) > 0 || math.Abs(cost(limited)-cost(free)) > 1e-6 {
		t.Errorf("under a limit far above the batch: $%.2f/hour and %d pods refused, want $%.2f/hour as without limits", cost(limited), len(limited.PodErrors), cost(free))
	}

	tight := catalogBatches[i].pool(t)
	tight.Remaining = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
	res := Solve(Input{Pods: pods, NodePools: []*NodePool{tight}})
	used := resource.Quantity{}
	for _, c := range res.NewClaims {
		used.Add(c.InstanceTypes[0].Capacity[corev1.ResourceCPU])
	}
	if used.Cmp(resource.MustParse("1000")) > 0 {
		t.Errorf("claims of %s cpu in all, above the limit of 1000", used.String())
	}
	if len(res.PodErrors) == 0 {
		t.Fatal("no pod refused, though the batch needs more than 1000 cpu")
	}
	if msg := res.PodErrors[0].Err.Error(); !strings.Contains(msg, "limits") {
		t.Errorf("a pod refused with %q, want the limits named", msg)
	}
	t.Logf("limit 1000 cpu: %d claims of %s cpu, %d pods refused; no limit: $%.2f/hour", len(res.NewClaims), used.String(), len(res.PodErrors), cost(free))
}
