package kops

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	awsv1alpha1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1alpha1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	karpv1alpha5 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/openkarpenter/karpenter/pkg/convert"
)

// The labels kOps ≤ 1.33 used in Provisioner requirements.
const (
	labelInstanceCPU              = awsv1.LabelInstanceCPU
	labelInstanceMemory           = awsv1.LabelInstanceMemory
	labelInstanceGPUCount         = awsv1.LabelInstanceGPUCount
	labelInstanceAcceleratorCount = awsv1.LabelInstanceAcceleratorCount
	taintUninitialized            = "node.cloudprovider.kubernetes.io/uninitialized"
)

// awsNodeTemplate builds the AWSNodeTemplate kOps ≤ 1.33 generated: the group's subnets and
// the launch template kOps built for it.
func (g *generator) awsNodeTemplate(ig *InstanceGroup) *awsv1alpha1.AWSNodeTemplate {
	name := ig.Metadata.Name
	cluster := g.cluster.Metadata.Name
	return &awsv1alpha1.AWSNodeTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1alpha1.SchemeGroupVersion.String(), Kind: "AWSNodeTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: addonLabels()},
		Spec: awsv1alpha1.AWSNodeTemplateSpec{AWS: awsv1alpha1.AWS{
			SubnetSelector: map[string]string{
				tagSubnetInstanceGroup + name:   "*",
				tagOwnedClusterPrefix + cluster: "*",
			},
			LaunchTemplate: awsv1alpha1.LaunchTemplate{LaunchTemplateName: ptr.To(name + "." + cluster)},
		}},
	}
}

// provisioner builds the Provisioner kOps ≤ 1.33 generated, tracing in doc which of the
// group's fields each part comes from.
func (g *generator) provisioner(ig *InstanceGroup, doc *convert.Document) (*karpv1alpha5.Provisioner, error) {
	name := ig.Metadata.Name
	src := g.sources[ig]
	requirements := []corev1.NodeSelectorRequirement{
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}},
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{g.arch(ig)}},
	}
	types, err := g.legacyInstanceTypes(ig)
	if err != nil {
		return nil, at(instanceTypesField(ig), err)
	}
	for i := range types {
		doc.TraceParsed(fmt.Sprintf("spec.requirements[%d]", len(requirements)+i), src, instanceTypesField(ig))
	}
	requirements = append(requirements, types...)
	doc.Trace("spec.labels", src, "spec.nodeLabels")
	for i := range ig.Spec.Taints {
		doc.TraceParsed(fmt.Sprintf("spec.taints[%d]", i), src, fmt.Sprintf("spec.taints[%d]", i))
	}
	doc.Trace("spec.kubeletConfiguration", src, "spec.kubelet")

	taints, err := parseTaints(ig)
	if err != nil {
		return nil, err
	}
	var startupTaints []corev1.Taint
	if g.externalCloudControllerManager() {
		startupTaints = []corev1.Taint{{Key: taintUninitialized, Effect: corev1.TaintEffectNoSchedule}}
	}
	kubelet, err := legacyKubelet(ig)
	if err != nil {
		return nil, err
	}
	if ig.Spec.MinSize != nil || ig.Spec.MaxSize != nil {
		g.result.Warnf("InstanceGroup %q: the legacy integration does not use minSize or maxSize", name)
	}
	return &karpv1alpha5.Provisioner{
		TypeMeta:   metav1.TypeMeta{APIVersion: karpv1alpha5.SchemeGroupVersion.String(), Kind: "Provisioner"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: addonLabels()},
		Spec: karpv1alpha5.ProvisionerSpec{
			Labels:               ig.Spec.NodeLabels,
			Taints:               taints,
			StartupTaints:        startupTaints,
			Requirements:         requirements,
			KubeletConfiguration: kubelet,
			ProviderRef:          &karpv1alpha5.MachineTemplateRef{Name: name},
			Consolidation:        &karpv1alpha5.Consolidation{Enabled: ptr.To(true)},
		},
	}, nil
}

// arch is the architecture of the group's image: kOps read it from EC2 (x86_64 is amd64,
// anything else arm64); offline it comes from the options, else amd64 is assumed and reported.
func (g *generator) arch(ig *InstanceGroup) string {
	if arch := g.opts.Archs[ig.Metadata.Name]; arch != "" {
		return normalizeArch(arch)
	}
	if g.opts.Arch != "" {
		return normalizeArch(g.opts.Arch)
	}
	g.result.Warnf("InstanceGroup %q: the architecture of image %q needs EC2 to resolve; assuming amd64: set --arch if the image is arm64",
		ig.Metadata.Name, strings.TrimSpace(ig.Spec.Image))
	return "amd64"
}

// normalizeArch maps EC2's architecture names to Kubernetes' as kOps did.
func normalizeArch(arch string) string {
	if arch == "x86_64" || arch == "amd64" {
		return "amd64"
	}
	return "arm64"
}

// validArch reports whether an architecture option is one the conversion understands.
func validArch(arch string) bool {
	switch arch {
	case "amd64", "x86_64", "arm64", "aarch64":
		return true
	}
	return false
}

// externalCloudControllerManager reports whether kOps runs the AWS cloud controller manager,
// whose nodes start with the uninitialized taint: when the cluster configures it, and by
// default from Kubernetes 1.24.
func (g *generator) externalCloudControllerManager() bool {
	spec := &g.cluster.Spec
	if spec.CloudControllerManager != nil || spec.ExternalCloudControllerManager != nil {
		return true
	}
	major, minor, ok := kubernetesMinor(spec.KubernetesVersion)
	if !ok { // unset (validateCluster refuses a version it cannot read)
		g.result.Warnf("Cluster %q: spec.kubernetesVersion is not set; assuming the external cloud controller manager (Kubernetes 1.24 and later)",
			g.cluster.Metadata.Name)
		return true
	}
	return major > 1 || (major == 1 && minor >= 24)
}

// kubernetesMinor reads the major and minor numbers of a version such as v1.28.3.
func kubernetesMinor(version string) (major, minor int, ok bool) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(version), "v"), ".")
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}

// legacyInstanceTypes returns the instance-type requirements kOps ≤ 1.33 wrote. Where kOps
// asked EC2 for the instance types matching cpu and memory ranges, the same ranges are written
// as requirements on Karpenter's instance-cpu and instance-memory labels instead (memory in the
// same units kOps sent EC2, which read MB as MiB), with accelerators excluded as kOps did.
func (g *generator) legacyInstanceTypes(ig *InstanceGroup) ([]corev1.NodeSelectorRequirement, error) {
	name := ig.Metadata.Name
	p := ig.Spec.MixedInstancesPolicy
	var ranges *InstanceRequirements
	switch {
	case ig.Spec.MachineType == "" && p == nil:
		two, twoG := resource.MustParse("2"), resource.MustParse("2G")
		ranges = &InstanceRequirements{CPU: &MinMax{Min: &two}, Memory: &MinMax{Min: &twoG}}
	case p != nil && len(p.Instances) > 0:
		return []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: p.Instances}}, nil
	case p != nil && p.InstanceRequirements != nil && p.InstanceRequirements.CPU != nil:
		ranges = p.InstanceRequirements
	}
	if ranges == nil {
		if ig.Spec.MachineType == "" {
			return nil, fmt.Errorf("InstanceGroup %q: the legacy integration needs spec.machineType, mixedInstancesPolicy.instances or mixedInstancesPolicy.instanceRequirements.cpu", name)
		}
		if strings.Contains(ig.Spec.MachineType, ",") {
			g.result.Warnf("InstanceGroup %q: the legacy integration used machineType %q as one instance type, which matches none", name, ig.Spec.MachineType)
		}
		return []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{ig.Spec.MachineType}}}, nil
	}
	var requirements []corev1.NodeSelectorRequirement
	bound := func(key string, q *resource.Quantity, scale func(*resource.Quantity) int64, operator corev1.NodeSelectorOperator) {
		if q == nil {
			return
		}
		value := scale(q)
		if operator == corev1.NodeSelectorOpGt {
			if value <= 0 {
				return
			}
			value--
		} else {
			value++
		}
		requirements = append(requirements, corev1.NodeSelectorRequirement{Key: key, Operator: operator, Values: []string{strconv.FormatInt(value, 10)}})
	}
	count := func(q *resource.Quantity) int64 { return q.Value() }
	megabytes := func(q *resource.Quantity) int64 { return q.ScaledValue(resource.Mega) }
	if ranges.CPU != nil {
		bound(labelInstanceCPU, ranges.CPU.Min, count, corev1.NodeSelectorOpGt)
		bound(labelInstanceCPU, ranges.CPU.Max, count, corev1.NodeSelectorOpLt)
	}
	if ranges.Memory != nil {
		bound(labelInstanceMemory, ranges.Memory.Min, megabytes, corev1.NodeSelectorOpGt)
		bound(labelInstanceMemory, ranges.Memory.Max, megabytes, corev1.NodeSelectorOpLt)
	}
	requirements = append(requirements,
		corev1.NodeSelectorRequirement{Key: labelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		corev1.NodeSelectorRequirement{Key: labelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	)
	g.result.Warnf("InstanceGroup %q: kOps listed the instance types matching its cpu and memory ranges by asking EC2 (current generation, no accelerators); written as requirements on %s and %s instead",
		name, labelInstanceCPU, labelInstanceMemory)
	return requirements, nil
}

// legacyKubelet is the kubelet block kOps ≤ 1.33 wrote: the group's maxPods, systemReserved
// and kubeReserved.
func legacyKubelet(ig *InstanceGroup) (*karpv1alpha5.KubeletConfiguration, error) {
	k := ig.Spec.Kubelet
	if k == nil || (k.MaxPods == nil && len(k.SystemReserved) == 0 && len(k.KubeReserved) == 0) {
		return nil, nil
	}
	system, err := resourceList(ig.Metadata.Name, "systemReserved", k.SystemReserved)
	if err != nil {
		return nil, err
	}
	kube, err := resourceList(ig.Metadata.Name, "kubeReserved", k.KubeReserved)
	if err != nil {
		return nil, err
	}
	return &karpv1alpha5.KubeletConfiguration{MaxPods: k.MaxPods, SystemReserved: system, KubeReserved: kube}, nil
}

func resourceList(ig, field string, m map[string]string) (corev1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	list := corev1.ResourceList{}
	for _, k := range sortedKeys(m) {
		q, err := resource.ParseQuantity(m[k])
		if err != nil {
			return nil, at(fmt.Sprintf("spec.kubelet.%s[%s]", field, k), fmt.Errorf("InstanceGroup %q: spec.kubelet.%s[%s]: %w", ig, field, k, err))
		}
		list[corev1.ResourceName(k)] = q
	}
	return list, nil
}
