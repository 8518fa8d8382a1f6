package differential_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openkarpenter/karpenter/pkg/apis"
	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
)

// kwokKubeReserved is what upstream's KWOK provider holds back from every instance type's
// resources (kwok/cloudprovider/helpers.go): the instance types file adds it, so that its
// nodes' allocatable is ours.
var kwokKubeReserved = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100m"),
	corev1.ResourceMemory: resource.MustParse("10Mi"),
}

// catalog is what our simulated cloud sells a default EC2NodeClass: the instance types, and
// the price of each offering.
type catalog struct {
	types  []*cloudprovider.InstanceType
	prices map[cloudprovider.OfferingID]float64
}

// loadCatalog asks a simulated cloud, configured as the controller's --cloud-provider sim is,
// for the instance types of a NodePool on an EC2NodeClass with no kubelet settings.
func loadCatalog() (*catalog, error) {
	nodeClass := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	reader := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(nodeClass).Build()
	cloud, err := sim.New(sim.Options{NodeClasses: reader})
	if err != nil {
		return nil, err
	}
	nodePool := &karpv1.NodePool{}
	nodePool.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	types, err := cloud.GetInstanceTypes(context.Background(), nodePool)
	if err != nil {
		return nil, fmt.Errorf("the simulated cloud's instance types: %w", err)
	}
	c := &catalog{types: types, prices: map[cloudprovider.OfferingID]float64{}}
	for _, it := range types {
		for _, o := range it.Offerings {
			c.prices[o.ID(it.Name)] = o.Price
		}
	}
	return c, nil
}

// price is the $/hour of a node or a NodeClaim, from its instance type, zone and capacity type
// labels; ok is false when the catalog has no such offering (a claim not launched yet).
func (c *catalog) price(labels map[string]string) (float64, bool) {
	p, ok := c.prices[cloudprovider.OfferingID{
		InstanceType: labels[corev1.LabelInstanceTypeStable],
		Zone:         labels[corev1.LabelTopologyZone],
		CapacityType: labels[karpv1.CapacityTypeLabelKey],
	}]
	return p, ok
}

// upstreamInstanceType is one entry of the file upstream's KWOK provider reads
// (INSTANCE_TYPES_FILE_PATH; kwok/cloudprovider.InstanceTypeOptions).
type upstreamInstanceType struct {
	Name             string              `json:"name"`
	Offerings        []upstreamOffering  `json:"offerings"`
	Architecture     string              `json:"architecture"`
	OperatingSystems []string            `json:"operatingSystems"`
	Resources        corev1.ResourceList `json:"resources"`
}

type upstreamOffering struct {
	Price        float64                          `json:"Price"`
	Available    bool                             `json:"Available"`
	Requirements []corev1.NodeSelectorRequirement `json:"Requirements"`
}

// writeUpstreamInstanceTypes writes the catalog as upstream's KWOK provider reads it: the same
// types, zones, capacity types and prices, resources that leave the same allocatable after
// the provider's kube-reserved, and the karpenter.k8s.aws/instance-* labels as offering
// requirements (the provider makes those keys well known and labels its nodes with them), so
// that NodePools select types by category, family, size or generation as they do on AWS.
func (c *catalog) writeUpstreamInstanceTypes(path string) error {
	out := make([]upstreamInstanceType, 0, len(c.types))
	for _, it := range c.types {
		resources := corev1.ResourceList{}
		for name, q := range it.Allocatable() {
			if q.IsZero() {
				continue
			}
			q = q.DeepCopy()
			if reserved, ok := kwokKubeReserved[name]; ok {
				q.Add(reserved)
			}
			resources[name] = q
		}
		var facts []corev1.NodeSelectorRequirement
		keys := make([]string, 0, len(it.Labels))
		for k := range it.Labels {
			if strings.HasPrefix(k, awsv1.Group+"/") {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			facts = append(facts, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{it.Labels[k]}})
		}
		entry := upstreamInstanceType{
			Name:             it.Name,
			Architecture:     it.Labels[corev1.LabelArchStable],
			OperatingSystems: []string{it.Labels[corev1.LabelOSStable]},
			Resources:        resources,
		}
		for _, o := range it.Offerings {
			reqs := append([]corev1.NodeSelectorRequirement{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{o.Zone}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{o.CapacityType}},
			}, facts...)
			entry.Offerings = append(entry.Offerings, upstreamOffering{Price: o.Price, Available: o.Available, Requirements: reqs})
		}
		out = append(out, entry)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
