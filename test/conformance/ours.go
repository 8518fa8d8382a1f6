package conformance

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/state"
)

var ourScheme = apis.NewScheme()

// ourMapper is built once: a fake client builds one from the whole scheme otherwise, which
// dominates a small case's run time.
var ourMapper = testrestmapper.TestOnlyStaticRESTMapper(ourScheme)

// instanceTypeProvider is the one part of our CloudProvider a provisioning pass calls: the
// other methods panic (through the nil embedded interface) if the pass ever launches.
type instanceTypeProvider struct {
	cloudprovider.CloudProvider
	types []*cloudprovider.InstanceType
}

func (p *instanceTypeProvider) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return p.types, nil
}

// RunOurs schedules the case with our provisioner's pass (Provision: cluster snapshot, the
// adapter to scheduler.Input with daemonset overhead, limits and volume requirements, Solve,
// NodeClaims created) on a fake controller-runtime client.
func RunOurs(ctx context.Context, c *Case) (*Outcome, error) {
	return runOurs(ctx, c, false)
}

// runOurs is RunOurs, with preferred affinities and ScheduleAnyway spread ignored when
// ignorePreferences (Karpenter's preference policy Ignore).
func runOurs(ctx context.Context, c *Case, ignorePreferences bool) (*Outcome, error) {
	kube := fake.NewClientBuilder().WithScheme(ourScheme).WithRESTMapper(ourMapper).Build()
	clk := clock.NewFakeClock(epoch)
	for _, np := range c.NodePools {
		np = np.DeepCopy()
		meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"})
		if err := kube.Create(ctx, np); err != nil {
			return nil, fmt.Errorf("creating nodepool: %w", err)
		}
	}
	if err := createCommon(ctx, kube, c); err != nil {
		return nil, err
	}
	for _, n := range c.Nodes {
		it := c.instanceType(n.InstanceType)
		node := nodeObject(n, it)
		node.Labels[karpv1.NodeInitializedLabelKey] = "true"
		node.Labels[karpv1.NodeRegisteredLabelKey] = "true"
		node.Spec.ProviderID = "sim:///" + n.Name
		if n.NodePool != "" {
			nc := &karpv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: node.Labels},
				Spec: karpv1.NodeClaimSpec{
					Taints:       n.Taints,
					NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{it.Name}}},
				},
				Status: karpv1.NodeClaimStatus{ProviderID: node.Spec.ProviderID, NodeName: node.Name, Capacity: it.Capacity, Allocatable: it.Allocatable()},
			}
			for _, t := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
				meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, LastTransitionTime: metav1.NewTime(epoch.Add(-50 * 60e9))})
			}
			if err := kube.Create(ctx, nc); err != nil {
				return nil, fmt.Errorf("creating nodeclaim: %w", err)
			}
		}
		if err := kube.Create(ctx, node); err != nil {
			return nil, fmt.Errorf("creating node: %w", err)
		}
	}
	cp := &instanceTypeProvider{types: ourInstanceTypes(c.InstanceTypes)}
	cluster := state.NewCluster(kube, clk)
	prov := provisioning.NewProvisioner(kube, cluster, cp, nil, nil, clk, provisioning.Options{IgnorePreferences: ignorePreferences})
	decision, err := prov.Provision(ctx)
	if err != nil {
		return nil, fmt.Errorf("our provision: %w", err)
	}
	out := &Outcome{Scheduler: "ours", Existing: map[string]string{}, Errors: map[string]string{}}
	res := decision.Results
	for _, pl := range res.ExistingPlacements {
		out.Existing[PodKey(pl.Pod)] = pl.Node
	}
	for i, nc := range res.NewClaims {
		claim := &Claim{Name: fmt.Sprintf("our-claim-%d", i), NodePool: nc.NodePool, Labels: map[string]string{}}
		for _, p := range nc.Pods {
			claim.Pods = append(claim.Pods, PodKey(p))
		}
		for _, it := range nc.InstanceTypes {
			claim.InstanceTypes = append(claim.InstanceTypes, it.Name)
		}
		if i < len(decision.Created) {
			claim.Labels = decision.Created[i].Labels
			for _, r := range decision.Created[i].Spec.Requirements {
				claim.Requirements = append(claim.Requirements, corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
			}
		}
		out.Claims = append(out.Claims, claim)
	}
	for _, pe := range res.PodErrors {
		out.Errors[PodKey(pe.Pod)] = pe.Err.Error()
	}
	return out, nil
}

// ourInstanceTypes converts instance types to our model, offerings sorted by zone then
// capacity type as our constructors keep them.
func ourInstanceTypes(its []*InstanceType) []*cloudprovider.InstanceType {
	out := make([]*cloudprovider.InstanceType, 0, len(its))
	for _, it := range its {
		labels := map[string]string{}
		for k, v := range it.Labels {
			labels[k] = v
		}
		var offerings cloudprovider.Offerings
		for _, o := range it.Offerings {
			offerings = append(offerings, cloudprovider.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: o.Available})
		}
		sort.SliceStable(offerings, func(i, j int) bool {
			if offerings[i].Zone != offerings[j].Zone {
				return offerings[i].Zone < offerings[j].Zone
			}
			return offerings[i].CapacityType < offerings[j].CapacityType
		})
		out = append(out, &cloudprovider.InstanceType{
			Name:      it.Name,
			Labels:    labels,
			Capacity:  it.Capacity.DeepCopy(),
			Overhead:  cloudprovider.InstanceTypeOverhead{KubeReserved: it.Overhead.DeepCopy()},
			Offerings: offerings,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
