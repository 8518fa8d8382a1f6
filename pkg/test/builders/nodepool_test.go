package builders

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

func TestNodePoolDefaultsAndOverrides(t *testing.T) {
	np := NodePool(NodePoolOptions{})
	if np.Name != "default" || np.Spec.Template.Spec.NodeClassRef.Name != "default" || np.Spec.Template.Spec.NodeClassRef.Kind != "EC2NodeClass" {
		t.Errorf("defaults: name %q, nodeClassRef %+v", np.Name, np.Spec.Template.Spec.NodeClassRef)
	}
	if np.Spec.Disruption.Budgets != nil || np.Spec.Limits != nil || np.Spec.Replicas != nil || np.Status.Conditions != nil {
		t.Errorf("unset options must stay unset: %+v %+v", np.Spec, np.Status)
	}

	opts := NodePoolOptions{
		Name: "gpu", NodeClass: "nc", Ready: true, ConsolidateAfter: "30s",
		Requirements: GeneralPurposeRequirements(),
		Limits:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")},
	}
	np = NodePool(opts, nil, func(np *karpv1.NodePool) { np.Spec.Weight = new(int32) })
	if np.Name != "gpu" || np.Spec.Template.Spec.NodeClassRef.Name != "nc" || np.Spec.Weight == nil {
		t.Errorf("options or override not applied: %+v", np)
	}
	if np.Spec.Disruption.ConsolidateAfter.Duration == nil || np.Spec.Disruption.ConsolidateAfter.Duration.Seconds() != 30 {
		t.Errorf("consolidateAfter %+v, want 30s", np.Spec.Disruption.ConsolidateAfter)
	}
	if len(np.Status.Conditions) != 1 || np.Status.Conditions[0].Type != karpv1.ConditionTypeReady {
		t.Errorf("Ready: conditions %+v", np.Status.Conditions)
	}
	// The options' slices are copied: changing one NodePool leaves the options and the next
	// NodePool built from them alone.
	np.Spec.Template.Spec.Requirements[0].Key = "changed"
	if opts.Requirements[0].Key == "changed" || NodePool(opts).Spec.Template.Spec.Requirements[0].Key == "changed" {
		t.Error("requirements shared between the options and a NodePool")
	}
}

func TestNodeClaimDefaultsAndOverrides(t *testing.T) {
	a, b := NodeClaim(NodeClaimOptions{}), NodeClaim(NodeClaimOptions{})
	if a.Name == b.Name || a.Labels != nil || a.Spec.NodeClassRef.Name != "default" {
		t.Errorf("defaults: %q and %q, labels %v, nodeClassRef %+v", a.Name, b.Name, a.Labels, a.Spec.NodeClassRef)
	}
	c := NodeClaim(NodeClaimOptions{Name: "c", NodePool: "pool", Labels: map[string]string{"team": "a"}, Requests: Resources("cpu", "1")},
		func(nc *karpv1.NodeClaim) { nc.Status.ProviderID = "sim:///c" })
	if c.Name != "c" || c.Labels[karpv1.NodePoolLabelKey] != "pool" || c.Labels["team"] != "a" || c.Status.ProviderID != "sim:///c" {
		t.Errorf("options or override not applied: %+v", c)
	}
	if q := c.Spec.Resources.Requests[corev1.ResourceCPU]; q.String() != "1" {
		t.Errorf("requests %v, want cpu 1", c.Spec.Resources.Requests)
	}
}
