package kops

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// addonLabels are the labels kOps' addon machinery puts on every object of the karpenter.sh
// addon.
func addonLabels() map[string]string {
	return map[string]string{
		"addon.kops.k8s.io/name":       "karpenter.sh",
		"app.kubernetes.io/managed-by": "kops",
		"k8s-addon":                    "karpenter.sh",
	}
}

// roleLabelNode is the label kOps gives nodes of role Node.
const roleLabelNode = "node-role.kubernetes.io/node"

// nodeLabels are the labels kOps gives the group's nodes: the cluster's kubelet node labels,
// overridden by the group's kubelet node labels, the role label, and the group's nodeLabels
// over all.
func nodeLabels(c *Cluster, ig *InstanceGroup) map[string]string {
	labels := map[string]string{}
	if c.Spec.Kubelet != nil {
		for k, v := range c.Spec.Kubelet.NodeLabels {
			labels[k] = v
		}
	}
	if ig.Spec.Kubelet != nil {
		for k, v := range ig.Spec.Kubelet.NodeLabels {
			labels[k] = v
		}
	}
	if ig.Spec.Role == roleNode {
		labels[roleLabelNode] = ""
	}
	for k, v := range ig.Spec.NodeLabels {
		labels[k] = v
	}
	return labels
}

// unsafeTemplateLabel reports whether kOps keeps a node label out of the NodePool template:
// kubernetes.io/hostname and the karpenter.sh and karpenter.k8s.aws domains (and their
// subdomains), except karpenter.sh/capacity-type.
func unsafeTemplateLabel(key string) bool {
	if key == karpv1.CapacityTypeLabelKey {
		return false
	}
	if key == corev1.LabelHostname {
		return true
	}
	domain, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	return domain == "karpenter.sh" || strings.HasSuffix(domain, ".karpenter.sh") ||
		domain == "karpenter.k8s.aws" || strings.HasSuffix(domain, ".karpenter.k8s.aws")
}

// templateLabels returns the safe labels, and a warning for each label left out.
func templateLabels(ig string, labels map[string]string) (map[string]string, []string) {
	safe := map[string]string{}
	var warnings []string
	for _, k := range sortedKeys(labels) {
		if unsafeTemplateLabel(k) {
			warnings = append(warnings, fmt.Sprintf("InstanceGroup %q: node label %q is reserved for Karpenter; kOps leaves it out of NodePool %q", ig, k, ig))
			continue
		}
		safe[k] = labels[k]
	}
	return safe, warnings
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
