package kops

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/convert"
)

// nodePool builds the NodePool kOps 1.36 generates for a group, tracing in doc which of the
// group's fields each part comes from.
func (g *generator) nodePool(ig *InstanceGroup, doc *convert.Document) (*karpv1.NodePool, error) {
	name := ig.Metadata.Name
	src := g.sources[ig]
	labels, warnings := templateLabels(name, nodeLabels(g.cluster, ig))
	g.result.Warnings = append(g.result.Warnings, warnings...)
	doc.Trace("spec.template.metadata.labels", src, "spec.nodeLabels")
	for i := range ig.Spec.Taints {
		doc.TraceParsed(fmt.Sprintf("spec.template.spec.taints[%d]", i), src, fmt.Sprintf("spec.taints[%d]", i))
	}
	doc.TraceParsed("spec.replicas", src, "spec.minSize")
	doc.TraceParsed("spec.limits", src, "spec.maxSize")

	taints, err := parseTaints(ig)
	if err != nil {
		return nil, err
	}

	capacityTypes := capacityTypes(ig)
	requirements := []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Linux)}},
	}
	if types := instanceTypes(ig); len(types) > 0 {
		doc.TraceParsed(fmt.Sprintf("spec.template.spec.requirements[%d]", len(requirements)), src, instanceTypesField(ig))
		requirements = append(requirements, karpv1.NodeSelectorRequirementWithMinValues{
			Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: types,
		})
	}
	requirements = append(requirements, karpv1.NodeSelectorRequirementWithMinValues{
		Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: capacityTypes,
	})
	if value, ok := labels[karpv1.CapacityTypeLabelKey]; ok && !slices.Contains(capacityTypes, value) {
		g.result.Warnf("InstanceGroup %q: node label %s=%s contradicts the capacity types %s of NodePool %q, which then launches nothing",
			name, karpv1.CapacityTypeLabelKey, value, strings.Join(capacityTypes, ", "), name)
	}

	pool := &karpv1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: addonLabels()},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				Spec: karpv1.NodeClaimTemplateSpec{
					Requirements: requirements,
					Taints:       taints,
					NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: name},
				},
			},
		},
	}
	if len(labels) > 0 {
		pool.Spec.Template.Labels = labels
	}
	if ig.Spec.MinSize != nil && *ig.Spec.MinSize > 0 {
		pool.Spec.Replicas = ptr.To(int64(*ig.Spec.MinSize))
		// kOps' addon runs Karpenter with the gate on (validateCluster refuses it off); any
		// other install must turn it on, or the NodePool launches nothing.
		doc.Comment = fmt.Sprintf("A static NodePool (spec.replicas %d, from the InstanceGroup's minSize): Karpenter launches its nodes\n"+
			"only with the StaticCapacity feature gate on, as kOps' addon runs it. Elsewhere set\n"+
			"FEATURE_GATES=StaticCapacity=true (Helm: settings.featureGates.staticCapacity: true).", *pool.Spec.Replicas)
		g.result.Warnf("NodePool %q is static (spec.replicas %d, from minSize): Karpenter launches its nodes only with the StaticCapacity feature gate on, as kOps' addon runs it; elsewhere set FEATURE_GATES=StaticCapacity=true (Helm: settings.featureGates.staticCapacity: true), or the NodePool launches nothing",
			name, *pool.Spec.Replicas)
	}
	if ig.Spec.MaxSize != nil {
		pool.Spec.Limits = karpv1.Limits{"nodes": resource.MustParse(strconv.FormatInt(int64(*ig.Spec.MaxSize), 10))}
		if pool.Spec.Replicas != nil && *pool.Spec.Replicas > int64(*ig.Spec.MaxSize) {
			g.result.Warnf("InstanceGroup %q: minSize %d is above maxSize %d, so static NodePool %q stops at %d nodes",
				name, *ig.Spec.MinSize, *ig.Spec.MaxSize, name, *ig.Spec.MaxSize)
		}
	}
	return pool, nil
}

// instanceTypes are the group's instance types: the mixed instances policy's and the
// comma-separated machineType's, trimmed, de-duplicated and sorted.
func instanceTypes(ig *InstanceGroup) []string {
	seen := map[string]bool{}
	var types []string
	add := func(t string) {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			return
		}
		seen[t] = true
		types = append(types, t)
	}
	if ig.Spec.MixedInstancesPolicy != nil {
		for _, t := range ig.Spec.MixedInstancesPolicy.Instances {
			add(t)
		}
	}
	for _, t := range strings.Split(ig.Spec.MachineType, ",") {
		add(t)
	}
	sort.Strings(types)
	return types
}

// instanceTypesField names the field the group's instance types come from, for messages.
func instanceTypesField(ig *InstanceGroup) string {
	if ig.Spec.MachineType == "" && ig.Spec.MixedInstancesPolicy != nil {
		return "spec.mixedInstancesPolicy.instances"
	}
	return "spec.machineType"
}

// parseTaints reads the group's taints.
func parseTaints(ig *InstanceGroup) ([]corev1.Taint, error) {
	var taints []corev1.Taint
	for i, spec := range ig.Spec.Taints {
		taint, err := parseTaint(spec)
		if err != nil {
			return nil, at(fmt.Sprintf("spec.taints[%d]", i), fmt.Errorf("parsing taint %q for %q: %w", spec, ig.Metadata.Name, err))
		}
		taints = append(taints, taint)
	}
	return taints, nil
}

// capacityTypes: a max price or a spot duration means spot only; an on-demand share below 100%
// above the base allows both; anything else is on-demand.
func capacityTypes(ig *InstanceGroup) []string {
	if ig.Spec.MaxPrice != nil || ig.Spec.SpotDurationInMinutes != nil {
		return []string{karpv1.CapacityTypeSpot}
	}
	if p := ig.Spec.MixedInstancesPolicy; p != nil && p.OnDemandAboveBase != nil && *p.OnDemandAboveBase < 100 {
		return []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot}
	}
	return []string{karpv1.CapacityTypeOnDemand}
}
