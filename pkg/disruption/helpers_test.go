package disruption

import (
	"fmt"
	"math/rand"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var epoch = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC) // a Monday

// catalog is a small set of instance types: m (4 GiB per cpu) and c (2 GiB per cpu).
func catalog() []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, fam := range []struct {
		name  string
		mem   int64
		price float64
	}{{"m", 4, 0.048}, {"c", 2, 0.0425}} {
		for _, size := range []struct {
			name string
			cpu  int64
		}{{"large", 2}, {"xlarge", 4}, {"2xlarge", 8}, {"4xlarge", 16}} {
			out = append(out, builders.InstanceType(builders.InstanceTypeOptions{
				Name: fam.name + "." + size.name, CPU: size.cpu, MemoryGiB: size.cpu * fam.mem, PricePerHour: fam.price * float64(size.cpu),
			}))
		}
	}
	return out
}

func findType(its []*cloudprovider.InstanceType, name string) *cloudprovider.InstanceType {
	for _, it := range its {
		if it.Name == name {
			return it
		}
	}
	panic("no instance type " + name)
}

// stateNode builds an initialized Karpenter node of np, created and initialized an hour
// before epoch, with pods bound to it.
func stateNode(np *karpv1.NodePool, name string, it *cloudprovider.InstanceType, capacityType, zone string, pods ...*corev1.Pod) *state.StateNode {
	labels := map[string]string{}
	for k, v := range it.Labels {
		labels[k] = v
	}
	labels[karpv1.NodePoolLabelKey] = np.Name
	labels[karpv1.CapacityTypeLabelKey] = capacityType
	labels[corev1.LabelTopologyZone] = zone
	labels[corev1.LabelHostname] = name
	for k, v := range np.Spec.Template.Labels {
		labels[k] = v
	}
	node := builders.Node(name, labels, it.Allocatable())
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-claim", Labels: labels, CreationTimestamp: metav1.NewTime(epoch.Add(-time.Hour)),
			Annotations: map[string]string{karpv1.NodePoolHashAnnotationKey: nodepool.Hash(np), karpv1.NodePoolHashVersionAnnotationKey: nodepool.HashVersion},
		},
		Status: karpv1.NodeClaimStatus{NodeName: name, Capacity: it.Capacity, Allocatable: it.Allocatable(), Conditions: []metav1.Condition{{
			Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(epoch.Add(-time.Hour)),
		}}},
	}
	sn := &state.StateNode{Node: node, NodeClaim: claim, Allocatable: it.Allocatable()}
	bind(sn, pods...)
	return sn
}

func bind(sn *state.StateNode, pods ...*corev1.Pod) {
	for _, p := range pods {
		p.Spec.NodeName = sn.Node.Name
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = nil
		sn.Pods = append(sn.Pods, p)
	}
	lists := []corev1.ResourceList{}
	for _, p := range sn.Pods {
		lists = append(lists, scheduling.PodRequests(p))
	}
	sn.Requested = scheduling.Merge(lists...)
}

func pod(cpu, mem string) *corev1.Pod {
	return builders.Pod(builders.PodOptions{CPU: cpu, Memory: mem})
}

// cluster is a pure test cluster: Input plus helpers to apply commands.
type cluster struct {
	in    Input
	types []*cloudprovider.InstanceType
	seq   int
}

func newCluster(types []*cloudprovider.InstanceType, pools ...*karpv1.NodePool) *cluster {
	c := &cluster{types: types, in: Input{Now: epoch, NodePools: pools, InstanceTypes: map[string][]*cloudprovider.InstanceType{}}}
	for _, np := range pools {
		c.in.InstanceTypes[np.Name] = types
	}
	return c
}

func (c *cluster) add(sn *state.StateNode) *state.StateNode {
	c.in.Nodes = append(c.in.Nodes, sn)
	return sn
}

// apply carries out a command at once: candidates vanish, replacements appear with the pods
// the scheduler gave them, pods placed on existing nodes move there.
func (c *cluster) apply(cmd *Command) {
	gone := map[string]bool{}
	for _, cand := range cmd.Candidates {
		gone[cand.Name()] = true
	}
	byName := map[string]*state.StateNode{}
	var kept []*state.StateNode
	for _, sn := range c.in.Nodes {
		if !gone[sn.Name()] {
			kept = append(kept, sn)
			byName[sn.Name()] = sn
		}
	}
	for _, pl := range cmd.Placements {
		bind(byName[pl.Node], pl.Pod)
	}
	for _, r := range cmd.Replacements {
		c.seq++
		it := r.Claim.InstanceTypes[0]
		ct, zone := karpv1.CapacityTypeOnDemand, ""
		o, _ := it.Offerings.CheapestWhere(func(o cloudprovider.Offering) bool {
			zones, hz := r.Claim.Requirements.Get(corev1.LabelTopologyZone)
			cts, hc := r.Claim.Requirements.Get(karpv1.CapacityTypeLabelKey)
			return o.Available && (!hz || zones.Has(o.Zone)) && (!hc || cts.Has(o.CapacityType))
		})
		ct, zone = o.CapacityType, o.Zone
		sn := stateNode(r.NodePool, fmt.Sprintf("replacement-%d", c.seq), it, ct, zone, r.Claim.Pods...)
		sn.NodeClaim.CreationTimestamp = metav1.NewTime(c.in.Now)
		sn.NodeClaim.Status.Conditions[0].LastTransitionTime = metav1.NewTime(c.in.Now)
		kept = append(kept, sn)
	}
	c.in.Nodes = kept
}

func (c *cluster) cost() float64 {
	total := 0.0
	for _, sn := range c.in.Nodes {
		total += NodePrice(sn, c.types)
	}
	return total
}

// randomCluster builds nodes of random types, filled to a random utilization with pods.
func randomCluster(r *rand.Rand, nodes int, pools ...*karpv1.NodePool) *cluster {
	types := catalog()
	c := newCluster(types, pools...)
	zones := []string{"test-zone-1", "test-zone-2", "test-zone-3"}
	for i := 0; i < nodes; i++ {
		it := types[r.Intn(len(types))]
		np := pools[r.Intn(len(pools))]
		ct := karpv1.CapacityTypeOnDemand
		if r.Intn(4) == 0 {
			ct = karpv1.CapacityTypeSpot
		}
		alloc := scheduling.ResourcesOf(it.Allocatable())
		fill := r.Float64() * 0.9
		var pods []*corev1.Pod
		usedCPU, usedMem := int64(0), int64(0)
		for usedCPU < int64(float64(alloc.MilliCPU)*fill) {
			cpu := int64(100 * (1 + r.Intn(10)))
			mem := int64(128<<20) * int64(1+r.Intn(8))
			if usedCPU+cpu > alloc.MilliCPU || usedMem+mem > alloc.Memory {
				break
			}
			usedCPU += cpu
			usedMem += mem
			p := pod(fmt.Sprintf("%dm", cpu), fmt.Sprintf("%d", mem))
			switch r.Intn(40) {
			case 0:
				p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
			case 1:
				// Protected for 2h since it started: some still are, some no longer.
				p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "2h"}
				p.Status.StartTime = &metav1.Time{Time: epoch.Add(-time.Duration(r.Intn(240)) * time.Minute)}
			case 2:
				p.Labels = map[string]string{"app": "guarded"} // its PDB allows no disruption
			case 3:
				p.Labels = map[string]string{"app": "tolerant"} // its PDB allows some
			}
			pods = append(pods, p)
		}
		c.add(stateNode(np, fmt.Sprintf("node-%04d", i), it, ct, zones[r.Intn(len(zones))], pods...))
	}
	for app, allowed := range map[string]int32{"guarded": 0, "tolerant": 3} {
		c.in.PDBs = append(c.in.PDBs, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
		})
	}
	sort.Slice(c.in.PDBs, func(i, j int) bool { return c.in.PDBs[i].Name < c.in.PDBs[j].Name })
	return c
}

type resourceQ = resource.Quantity

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }
