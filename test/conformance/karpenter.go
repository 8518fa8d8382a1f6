package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	clock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	_ "github.com/openkarpenter/karpenter/test/conformance/internal/metricsisolation" // before Karpenter's metrics
	kv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	kcloud "sigs.k8s.io/karpenter/pkg/cloudprovider"
	kfake "sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	kprov "sigs.k8s.io/karpenter/pkg/controllers/provisioning"
	kstate "sigs.k8s.io/karpenter/pkg/controllers/state"
	kevents "sigs.k8s.io/karpenter/pkg/events"
	koptions "sigs.k8s.io/karpenter/pkg/operator/options"
	kscheduling "sigs.k8s.io/karpenter/pkg/scheduling"
	ktest "sigs.k8s.io/karpenter/pkg/test"
	ktestv1alpha1 "sigs.k8s.io/karpenter/pkg/test/v1alpha1"
)

// instanceLabelKeys are the instance-type labels the generator uses. Karpenter's AWS provider
// registers them as well-known (a pod may require them without a NodePool naming them), as our
// scheduling package does; Karpenter core alone does not, so the harness registers them.
var instanceLabelKeys = []string{
	awsv1.LabelInstanceCategory, awsv1.LabelInstanceFamily, awsv1.LabelInstanceGeneration,
	awsv1.LabelInstanceSize, awsv1.LabelInstanceCPU, awsv1.LabelInstanceCPUManufacturer,
	awsv1.LabelInstanceMemory, awsv1.LabelInstanceHypervisor, awsv1.LabelInstanceGPUName,
	awsv1.LabelInstanceGPUManufacturer, awsv1.LabelInstanceGPUCount,
}

func init() {
	kv1.WellKnownLabels.Insert(instanceLabelKeys...)
}

// karpenterScheme is client-go's, where Karpenter's API packages register their types.
var karpenterScheme = clientgoscheme.Scheme

// karpenterMapper is built once (see ourMapper).
var karpenterMapper = testrestmapper.TestOnlyStaticRESTMapper(karpenterScheme)

// RunKarpenter schedules the case with Karpenter v1.15.0's provisioner (Schedule: pending pods,
// validation, volume topology, daemonset overhead, existing nodes, Solve), on a fake
// controller-runtime client and Karpenter's cluster state fed the case's objects.
func RunKarpenter(ctx context.Context, c *Case) (*Outcome, error) {
	ctx = koptions.ToContext(ctx, ktest.Options())
	var kube client.Client = fake.NewClientBuilder().WithScheme(karpenterScheme).WithRESTMapper(karpenterMapper).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithIndex(&corev1.Node{}, "spec.providerID", func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }).
		WithIndex(&kv1.NodeClaim{}, "status.providerID", func(o client.Object) []string { return []string{o.(*kv1.NodeClaim).Status.ProviderID} }).
		Build()
	kube = clusterScopedGets{kube}
	clk := clock.NewFakeClock(epoch)
	cp := kfake.NewCloudProvider()
	cp.InstanceTypes = karpenterInstanceTypes(c.InstanceTypes)
	cluster := kstate.NewCluster(clk, kube, cp)

	for _, np := range c.NodePools {
		knp, err := karpenterNodePool(np)
		if err != nil {
			return nil, err
		}
		if err := kube.Create(ctx, knp); err != nil {
			return nil, fmt.Errorf("creating nodepool: %w", err)
		}
	}
	if err := createCommon(ctx, kube, c); err != nil {
		return nil, err
	}
	for _, n := range c.Nodes {
		it := c.instanceType(n.InstanceType)
		node := nodeObject(n, it)
		node.Labels[kv1.NodeInitializedLabelKey] = "true"
		node.Labels[kv1.NodeRegisteredLabelKey] = "true"
		node.Spec.ProviderID = "fake:///" + n.Name
		if n.NodePool != "" {
			nc := &kv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: node.Labels, UID: "claim-" + node.UID},
				Spec: kv1.NodeClaimSpec{
					Taints:       n.Taints,
					NodeClassRef: &kv1.NodeClassReference{Group: ktestv1alpha1.Group, Kind: "TestNodeClass", Name: "default"},
					Requirements: []kv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{it.Name}}},
				},
				Status: kv1.NodeClaimStatus{ProviderID: node.Spec.ProviderID, NodeName: node.Name, Capacity: it.Capacity, Allocatable: it.Allocatable()},
			}
			nc.StatusConditions().SetTrue(kv1.ConditionTypeLaunched)
			nc.StatusConditions().SetTrue(kv1.ConditionTypeRegistered)
			nc.StatusConditions().SetTrue(kv1.ConditionTypeInitialized)
			if err := kube.Create(ctx, nc); err != nil {
				return nil, fmt.Errorf("creating nodeclaim: %w", err)
			}
			cluster.UpdateNodeClaim(nc)
		}
		if err := kube.Create(ctx, node); err != nil {
			return nil, fmt.Errorf("creating node: %w", err)
		}
		if err := cluster.UpdateNode(ctx, node); err != nil {
			return nil, fmt.Errorf("tracking node: %w", err)
		}
		for _, p := range n.Pods {
			if err := cluster.UpdatePod(ctx, p.DeepCopy()); err != nil {
				return nil, fmt.Errorf("tracking pod: %w", err)
			}
		}
	}
	prov := kprov.NewProvisioner(kube, kevents.NewRecorder(&record.FakeRecorder{}), cp, cluster, clk, nil, nil)
	results, err := prov.Schedule(ctx)
	if err != nil {
		return nil, fmt.Errorf("karpenter schedule: %w", err)
	}
	out := &Outcome{Scheduler: "karpenter", Existing: map[string]string{}, Errors: map[string]string{}}
	for _, n := range results.ExistingNodes {
		for _, p := range n.Pods {
			out.Existing[PodKey(p)] = n.Name()
		}
	}
	for i, nc := range results.NewNodeClaims {
		claim := &Claim{Name: fmt.Sprintf("karpenter-claim-%d", i), NodePool: nc.NodePoolName}
		for _, p := range nc.Pods {
			claim.Pods = append(claim.Pods, PodKey(p))
		}
		for _, it := range nc.InstanceTypeOptions.OrderByPrice(nc.Requirements) {
			claim.InstanceTypes = append(claim.InstanceTypes, it.Name)
		}
		obj := nc.ToNodeClaim()
		claim.Labels = obj.Labels
		for _, r := range obj.Spec.Requirements {
			claim.Requirements = append(claim.Requirements, corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
		}
		out.Claims = append(out.Claims, claim)
	}
	for p, err := range results.PodErrors {
		out.Errors[PodKey(p)] = err.Error()
	}
	placed := map[string]bool{}
	for _, claim := range out.Claims {
		for _, key := range claim.Pods {
			placed[key] = true
		}
	}
	for _, p := range c.Pods {
		key := PodKey(p)
		if _, refused := out.Errors[key]; !refused && !placed[key] && out.Existing[key] == "" {
			// Validation or a volume lookup left it out of the run: Karpenter will not place it.
			out.Errors[key] = "ignored by the provisioner (validation or volume topology)"
		}
	}
	return out, nil
}

// clusterScopedGets drops the namespace from a Get of a cluster-scoped object, as the API
// server does; the fake client would look it up under the namespace and find nothing (Karpenter
// gets a PersistentVolume with its pod's namespace).
type clusterScopedGets struct{ client.Client }

func (c clusterScopedGets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch obj.(type) {
	case *corev1.PersistentVolume, *corev1.Node, *storagev1.StorageClass, *kv1.NodePool, *kv1.NodeClaim:
		key.Namespace = ""
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// karpenterNodePool converts a NodePool to Karpenter's type (the same schema), on the fake
// provider's NodeClass and Ready.
func karpenterNodePool(np interface{}) (*kv1.NodePool, error) {
	raw, err := json.Marshal(np)
	if err != nil {
		return nil, err
	}
	out := &kv1.NodePool{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("converting nodepool: %w", err)
	}
	out.Spec.Template.Spec.NodeClassRef = &kv1.NodeClassReference{Group: ktestv1alpha1.Group, Kind: "TestNodeClass", Name: "default"}
	out.StatusConditions().SetTrue(status.ConditionReady)
	return out, nil
}

// karpenterInstanceTypes converts instance types: each label becomes an In requirement of its
// one value, and every label key some type has but this one lacks a DoesNotExist requirement
// (Karpenter reads an undefined key as "any value").
func karpenterInstanceTypes(its []*InstanceType) []*kcloud.InstanceType {
	keys := map[string]bool{}
	for _, it := range its {
		for k := range it.Labels {
			keys[k] = true
		}
	}
	for _, k := range instanceLabelKeys {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	out := make([]*kcloud.InstanceType, 0, len(its))
	for _, it := range its {
		reqs := kscheduling.NewRequirements()
		for _, k := range sorted {
			if v, ok := it.Labels[k]; ok {
				reqs.Add(kscheduling.NewRequirement(k, corev1.NodeSelectorOpIn, v))
			} else {
				reqs.Add(kscheduling.NewRequirement(k, corev1.NodeSelectorOpDoesNotExist))
			}
		}
		var zones, capacityTypes []string
		var offerings kcloud.Offerings
		for _, o := range it.Offerings {
			offerings = append(offerings, &kcloud.Offering{
				Requirements: kscheduling.NewLabelRequirements(map[string]string{corev1.LabelTopologyZone: o.Zone, kv1.CapacityTypeLabelKey: o.CapacityType}),
				Price:        o.Price,
				Available:    o.Available,
			})
			if o.Available {
				zones = append(zones, o.Zone)
				capacityTypes = append(capacityTypes, o.CapacityType)
			}
		}
		reqs.Add(kscheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
		reqs.Add(kscheduling.NewRequirement(kv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityTypes...))
		out = append(out, &kcloud.InstanceType{
			Name:         it.Name,
			Requirements: reqs,
			Offerings:    offerings,
			Capacity:     it.Capacity.DeepCopy(),
			Overhead:     &kcloud.InstanceTypeOverhead{KubeReserved: it.Overhead.DeepCopy()},
		})
	}
	return out
}
