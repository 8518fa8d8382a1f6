package builders

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// NodePoolOptions describe a test NodePool; zero fields take defaults or stay unset.
type NodePoolOptions struct {
	// Name defaults to "default".
	Name string
	// NodeClass is the name of the EC2NodeClass of nodeClassRef; default "default".
	NodeClass string
	// Labels are the labels of the NodeClaim template.
	Labels map[string]string
	// Requirements of the NodeClaim template (copied); none by default.
	Requirements []karpv1.NodeSelectorRequirementWithMinValues
	// Taints of the NodeClaim template (copied).
	Taints []corev1.Taint
	// Budgets are the disruption budgets (copied); unset by default.
	Budgets []karpv1.Budget
	// ConsolidationPolicy and ConsolidateAfter (a duration such as "30s" or "Never"), when set.
	ConsolidationPolicy karpv1.ConsolidationPolicy
	ConsolidateAfter    string
	// Limits, when set, are spec.limits.
	Limits corev1.ResourceList
	// Replicas, when set, makes the NodePool static.
	Replicas *int64
	// Ready sets a True Ready condition in the status, as the status controller would.
	Ready bool
}

// NodePool builds a NodePool from o, then applies each non-nil override in order, for what
// the options do not cover.
func NodePool(o NodePoolOptions, overrides ...func(*karpv1.NodePool)) *karpv1.NodePool {
	if o.Name == "" {
		o.Name = "default"
	}
	if o.NodeClass == "" {
		o.NodeClass = "default"
	}
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				ObjectMeta: karpv1.ObjectMeta{Labels: maps.Clone(o.Labels)},
				Spec: karpv1.NodeClaimTemplateSpec{
					NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: o.NodeClass},
					Requirements: slices.Clone(o.Requirements),
					Taints:       slices.Clone(o.Taints),
				},
			},
			Disruption: karpv1.Disruption{ConsolidationPolicy: o.ConsolidationPolicy, Budgets: slices.Clone(o.Budgets)},
			Replicas:   o.Replicas,
		},
	}
	if o.ConsolidateAfter != "" {
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration(o.ConsolidateAfter)
	}
	if o.Limits != nil {
		np.Spec.Limits = karpv1.Limits(o.Limits.DeepCopy())
	}
	if o.Ready {
		np.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	}
	for _, override := range overrides {
		if override != nil {
			override(np)
		}
	}
	return np
}

// Requirement is one NodeClaim requirement without minValues: Requirement(corev1.LabelArchStable,
// corev1.NodeSelectorOpIn, "amd64").
func Requirement(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

// GeneralPurposeRequirements are the requirements of Karpenter's getting-started NodePool:
// instance categories c, m and r of a generation above 5, on amd64. Each call returns a new
// slice.
func GeneralPurposeRequirements() []karpv1.NodeSelectorRequirementWithMinValues {
	return []karpv1.NodeSelectorRequirementWithMinValues{
		Requirement(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r"),
		Requirement(awsv1.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "5"),
		Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
	}
}

// NodeClaimOptions describe a test NodeClaim; zero fields take defaults or stay unset.
type NodeClaimOptions struct {
	// Name defaults to nodeclaim-N.
	Name string
	// NodePool, when set, is the karpenter.sh/nodepool label.
	NodePool string
	// Labels are more labels.
	Labels map[string]string
	// NodeClass is the name of the EC2NodeClass of nodeClassRef; default "default".
	NodeClass string
	// Requirements of the claim (copied).
	Requirements []karpv1.NodeSelectorRequirementWithMinValues
	// Requests are spec.resources.requests.
	Requests corev1.ResourceList
}

var nodeClaimCount int

// NodeClaim builds a NodeClaim from o, then applies each non-nil override in order.
func NodeClaim(o NodeClaimOptions, overrides ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	nodeClaimCount++
	if o.Name == "" {
		o.Name = fmt.Sprintf("nodeclaim-%d", nodeClaimCount)
	}
	if o.NodeClass == "" {
		o.NodeClass = "default"
	}
	labels := maps.Clone(o.Labels)
	if o.NodePool != "" {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[karpv1.NodePoolLabelKey] = o.NodePool
	}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Labels: labels},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: o.NodeClass},
			Requirements: slices.Clone(o.Requirements),
		},
	}
	if o.Requests != nil {
		claim.Spec.Resources.Requests = o.Requests.DeepCopy()
	}
	for _, override := range overrides {
		if override != nil {
			override(claim)
		}
	}
	return claim
}
