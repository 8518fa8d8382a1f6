package kops

import (
	"fmt"
	"strings"

	"github.com/openkarpenter/karpenter/pkg/convert"
)

// Tag keys and prefixes kOps puts on a group's instances.
const (
	tagClusterName         = "KubernetesCluster"
	tagInstanceGroup       = "kops.k8s.io/instancegroup"
	tagRolePrefix          = "k8s.io/role/"
	tagNodeTemplateLabel   = "k8s.io/cluster-autoscaler/node-template/label/"
	tagNodeTemplateTaint   = "k8s.io/cluster-autoscaler/node-template/taint/"
	tagOwnedClusterPrefix  = "kubernetes.io/cluster/"
	tagSubnetInstanceGroup = "kops.k8s.io/instance-group/"
)

// cloudTags are the tags kOps computes for a group's instances: the cluster's own tags (Name,
// KubernetesCluster, the owned-cluster tag and the cluster cloudLabels), the group's
// cloudLabels over them, the cluster-autoscaler node-template tags for each node label and
// each taint with a value, then the role and instance-group tags, which win.
func cloudTags(c *Cluster, ig *InstanceGroup) map[string]string {
	cluster := c.Metadata.Name
	tags := map[string]string{
		"Name":                          ig.Metadata.Name + "." + cluster,
		tagClusterName:                  cluster,
		tagOwnedClusterPrefix + cluster: "owned",
	}
	for k, v := range c.Spec.CloudLabels {
		tags[k] = v
	}
	for k, v := range ig.Spec.CloudLabels {
		tags[k] = v
	}
	for k, v := range nodeLabels(c, ig) {
		tags[tagNodeTemplateLabel+k] = v
	}
	for _, taint := range ig.Spec.Taints {
		if key, rest, found := strings.Cut(taint, "="); found {
			tags[tagNodeTemplateTaint+key] = rest
		}
	}
	tags[tagRolePrefix+strings.ToLower(ig.Spec.Role)] = "1"
	tags[tagInstanceGroup] = ig.Metadata.Name
	return tags
}

// nodeClassTags removes the reserved keys from the kOps tags, warning about those the user set
// (the owned-cluster tag kOps adds itself is dropped quietly).
func nodeClassTags(c *Cluster, ig *InstanceGroup) (map[string]string, []string) {
	tags := cloudTags(c, ig)
	userSet := map[string]bool{}
	for k := range c.Spec.CloudLabels {
		userSet[k] = true
	}
	for k := range ig.Spec.CloudLabels {
		userSet[k] = true
	}
	var warnings []string
	for _, k := range sortedKeys(tags) {
		if !convert.ReservedTag(k) {
			continue
		}
		if userSet[k] {
			warnings = append(warnings, fmt.Sprintf("InstanceGroup %q: cloud label %q is a tag Karpenter reserves; kOps leaves it out of EC2NodeClass %q", ig.Metadata.Name, k, ig.Metadata.Name))
		}
		delete(tags, k)
	}
	return tags, warnings
}
