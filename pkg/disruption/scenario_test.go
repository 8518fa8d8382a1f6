package disruption

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/scenarios")

// scenario is the input of a golden disruption scenario (testdata/scenarios/*.yaml): a cluster
// of the test catalog's instance types (m and c, large to 4xlarge), on which Decide runs and
// each command it returns is carried out, until it returns none or Steps commands ran.
type scenario struct {
	// Description says what the scenario shows.
	Description string `json:"description"`
	NodePools   []struct {
		Name                string                                        `json:"name"`
		ConsolidationPolicy karpv1.ConsolidationPolicy                    `json:"consolidationPolicy,omitempty"`
		ConsolidateAfter    string                                        `json:"consolidateAfter,omitempty"`
		Budgets             []karpv1.Budget                               `json:"budgets,omitempty"`
		Requirements        []karpv1.NodeSelectorRequirementWithMinValues `json:"requirements,omitempty"`
	} `json:"nodePools"`
	Nodes []struct {
		Name         string `json:"name"`
		NodePool     string `json:"nodePool"`
		InstanceType string `json:"instanceType"`
		CapacityType string `json:"capacityType"`
		Zone         string `json:"zone"`
		// Drifted is the cloud provider's drift reason for the node's claim.
		Drifted cloudprovider.DriftReason `json:"drifted,omitempty"`
		Pods    []builders.PodGroup       `json:"pods,omitempty"`
	} `json:"nodes"`
	PDBs []policyv1.PodDisruptionBudget `json:"pdbs,omitempty"`
	// Steps is how many commands to carry out at most (default 10).
	Steps int `json:"steps,omitempty"`
}

// cluster builds the scenario's cluster.
func (sc *scenario) cluster(t *testing.T) *cluster {
	var pools []*karpv1.NodePool
	byName := map[string]*karpv1.NodePool{}
	for _, p := range sc.NodePools {
		np := builders.NodePool(builders.NodePoolOptions{Name: p.Name, Ready: true, ConsolidationPolicy: p.ConsolidationPolicy,
			ConsolidateAfter: p.ConsolidateAfter, Budgets: p.Budgets, Requirements: p.Requirements})
		if len(np.Spec.Disruption.Budgets) == 0 {
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "10%"}}
		}
		if np.Spec.Disruption.ConsolidationPolicy == "" {
			np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
		}
		pools = append(pools, np)
		byName[np.Name] = np
	}
	c := newCluster(catalog(), pools...)
	for _, n := range sc.Nodes {
		np := byName[n.NodePool]
		if np == nil {
			t.Fatalf("node %s: no nodepool %q", n.Name, n.NodePool)
		}
		var pods []*corev1.Pod
		for _, g := range n.Pods {
			pods = append(pods, g.Expand()...)
		}
		sn := c.add(stateNode(np, n.Name, findType(c.types, n.InstanceType), n.CapacityType, n.Zone, pods...))
		if n.Drifted != "" {
			if c.in.CloudDrift == nil {
				c.in.CloudDrift = map[string]cloudprovider.DriftReason{}
			}
			c.in.CloudDrift[sn.NodeClaim.Name] = n.Drifted
		}
	}
	for i := range sc.PDBs {
		c.in.PDBs = append(c.in.PDBs, &sc.PDBs[i])
	}
	return c
}

// play runs Decide and carries out its commands, and describes each decision.
func (sc *scenario) play(c *cluster) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cost before: $%.4f/hour over %d nodes\n", c.cost(), len(c.in.Nodes))
	steps := sc.Steps
	if steps == 0 {
		steps = 10
	}
	for step := 1; ; step++ {
		d := Decide(c.in)
		if d.Command == nil {
			fmt.Fprintf(&b, "step %d: no command\n", step)
			describeRest(&b, d)
			break
		}
		cmd := d.Command
		fmt.Fprintf(&b, "step %d: %s (%s, %s): saves $%.4f/hour\n", step, cmd.Message(), cmd.Method, cmd.Reason, cmd.Savings)
		fmt.Fprintf(&b, "  candidates: %s\n", strings.Join(cmd.NodeNames(), ", "))
		for _, r := range cmd.Replacements {
			names := make([]string, 0, 3)
			for _, it := range r.Claim.InstanceTypes[:min(3, len(r.Claim.InstanceTypes))] {
				names = append(names, it.Name)
			}
			fmt.Fprintf(&b, "  replacement in %s: %d pods, $%.4f/hour, types %s (of %d)\n", r.NodePool.Name, len(r.Claim.Pods), r.Price, strings.Join(names, " "), len(r.Claim.InstanceTypes))
		}
		if len(cmd.Placements) > 0 {
			onto := map[string]int{}
			for _, p := range cmd.Placements {
				onto[p.Node]++
			}
			fmt.Fprintf(&b, "  pods onto existing nodes: %s\n", counts(onto))
		}
		if step == steps {
			fmt.Fprintf(&b, "stopped after %d commands\n", steps)
			break
		}
		c.apply(cmd)
	}
	fmt.Fprintf(&b, "cost after: $%.4f/hour over %d nodes\n", c.cost(), len(c.in.Nodes))
	return b.String()
}

// describeRest writes why nothing more is done: what is eligible, and the nodes kept.
func describeRest(b *strings.Builder, d *Decision) {
	reasons := make([]string, 0, len(d.Eligible))
	for r, n := range d.Eligible {
		reasons = append(reasons, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(reasons)
	fmt.Fprintf(b, "  eligible: %s\n", strings.Join(reasons, " "))
	var kept []string
	for _, s := range d.Claims {
		if !s.Consolidatable && s.ConsolidatableReason != "" {
			kept = append(kept, fmt.Sprintf("%s (%s)", s.NodeClaim, s.ConsolidatableReason))
		}
	}
	for _, bl := range d.Blocked {
		kept = append(kept, fmt.Sprintf("%s blocked: %s", bl.Node, bl.Reason))
	}
	sort.Strings(kept)
	for _, k := range kept {
		fmt.Fprintf(b, "  kept: %s\n", k)
	}
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// TestScenarios runs every golden disruption scenario and compares what it decides, command by
// command, with its golden file (go test ./pkg/disruption -run TestScenarios -update rewrites
// them).
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
			got := sc.play(sc.cluster(t))
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s (-update rewrites it):\n--- got\n%s--- want\n%s", file, golden, got, want)
			}
		})
	}
}
