package legacy

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// renamedLabels maps v0.x label keys to their v1 names. The Kubernetes beta labels are
// normalized by both versions; writing the stable name keeps the NodePool plain.
var renamedLabels = map[string]string{
	"karpenter.sh/provisioner-name":            karpv1.NodePoolLabelKey,
	"beta.kubernetes.io/arch":                  corev1.LabelArchStable,
	"beta.kubernetes.io/os":                    corev1.LabelOSStable,
	"beta.kubernetes.io/instance-type":         corev1.LabelInstanceTypeStable,
	"failure-domain.beta.kubernetes.io/zone":   corev1.LabelTopologyZone,
	"failure-domain.beta.kubernetes.io/region": corev1.LabelTopologyRegion,
}

// droppedLabels are v0.x label keys v1 no longer has.
var droppedLabels = map[string]string{
	"karpenter.k8s.aws/instance-pods": "v1 has no instance-pods label (pod density comes from the kubelet settings)",
}

// renamedAnnotations maps v0.x node annotations to their v1 names.
var renamedAnnotations = map[string]string{
	"karpenter.sh/do-not-consolidate": karpv1.DoNotDisruptAnnotationKey,
	"karpenter.sh/do-not-evict":       karpv1.DoNotDisruptAnnotationKey,
}

// wellKnownAWSLabels are the karpenter.k8s.aws labels a v1 NodePool may name.
var wellKnownAWSLabels = map[string]bool{
	"karpenter.k8s.aws/capacity-reservation-id":                  true,
	"karpenter.k8s.aws/capacity-reservation-type":                true,
	"karpenter.k8s.aws/ec2nodeclass":                             true,
	"karpenter.k8s.aws/instance-encryption-in-transit-supported": true,
	"karpenter.k8s.aws/instance-category":                        true,
	"karpenter.k8s.aws/instance-hypervisor":                      true,
	"karpenter.k8s.aws/instance-family":                          true,
	"karpenter.k8s.aws/instance-generation":                      true,
	"karpenter.k8s.aws/instance-local-nvme":                      true,
	"karpenter.k8s.aws/instance-size":                            true,
	"karpenter.k8s.aws/instance-cpu":                             true,
	"karpenter.k8s.aws/instance-cpu-manufacturer":                true,
	"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz":   true,
	"karpenter.k8s.aws/instance-memory":                          true,
	"karpenter.k8s.aws/instance-ebs-bandwidth":                   true,
	"karpenter.k8s.aws/instance-network-bandwidth":               true,
	"karpenter.k8s.aws/instance-gpu-name":                        true,
	"karpenter.k8s.aws/instance-gpu-manufacturer":                true,
	"karpenter.k8s.aws/instance-gpu-count":                       true,
	"karpenter.k8s.aws/instance-gpu-memory":                      true,
	"karpenter.k8s.aws/instance-accelerator-name":                true,
	"karpenter.k8s.aws/instance-accelerator-manufacturer":        true,
	"karpenter.k8s.aws/instance-accelerator-count":               true,
	"karpenter.k8s.aws/instance-capability-flex":                 true,
}

// kubernetesRequirementKeys are the kubernetes.io labels a v1 NodePool requirement may name.
var kubernetesRequirementKeys = map[string]bool{
	"beta.kubernetes.io/instance-type":         true,
	"failure-domain.beta.kubernetes.io/region": true,
	"beta.kubernetes.io/os":                    true,
	"beta.kubernetes.io/arch":                  true,
	"failure-domain.beta.kubernetes.io/zone":   true,
	corev1.LabelTopologyZone:                   true,
	corev1.LabelTopologyRegion:                 true,
	corev1.LabelInstanceTypeStable:             true,
	corev1.LabelArchStable:                     true,
	corev1.LabelOSStable:                       true,
	corev1.LabelWindowsBuild:                   true,
}

func domain(key string) string {
	d, _, found := strings.Cut(key, "/")
	if !found {
		return ""
	}
	return d
}

// restrictedLabel says why a v1 NodePool template may not set a label, or "" when it may.
func restrictedLabel(key string) string {
	d := domain(key)
	switch {
	case key == karpv1.NodePoolLabelKey:
		return "Karpenter sets it itself"
	case key == corev1.LabelHostname:
		return "it is restricted"
	case strings.HasSuffix(d, "karpenter.sh") && key != karpv1.CapacityTypeLabelKey:
		return `the "karpenter.sh" domain is restricted`
	case strings.HasSuffix(d, "karpenter.k8s.aws") && !wellKnownAWSLabels[key]:
		return `the "karpenter.k8s.aws" domain is restricted`
	}
	return ""
}

// restrictedRequirement says why a v1 NodePool requirement may not name a label, or "".
func restrictedRequirement(key string) string {
	if reason := restrictedLabel(key); reason != "" {
		return reason
	}
	d := domain(key)
	if strings.HasSuffix(d, "kubernetes.io") && !kubernetesRequirementKeys[key] &&
		!strings.HasSuffix(d, "node.kubernetes.io") && !strings.HasSuffix(d, "node-restriction.kubernetes.io") {
		return `the "kubernetes.io" domain is restricted`
	}
	return ""
}
