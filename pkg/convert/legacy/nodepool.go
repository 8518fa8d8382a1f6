package legacy

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/convert"
)

// nodePool translates a Provisioner, tracing in doc which of its fields each part comes from.
func (c *converter) nodePool(p *provisioner, nodeClassName string, doc *convert.Document) *karpv1.NodePool {
	spec := p.obj.Spec
	for _, same := range []struct{ output, input string }{
		{"metadata", "metadata"},
		{"spec.template.metadata.labels", "spec.labels"},
		{"spec.template.metadata.annotations", "spec.annotations"},
		{"spec.template.spec.taints", "spec.taints"},
		{"spec.template.spec.startupTaints", "spec.startupTaints"},
		{"spec.template.spec.expireAfter", "spec.ttlSecondsUntilExpired"},
		{"spec.disruption.consolidateAfter", "spec.ttlSecondsAfterEmpty"},
		{"spec.weight", "spec.weight"},
		{"spec.limits", "spec.limits.resources"},
	} {
		doc.Trace(same.output, p.src, same.input)
	}
	// The list as a whole (its length); each requirement is traced on its own below.
	doc.TraceParsed("spec.template.spec.requirements", p.src, "spec.requirements")
	pool := &karpv1.NodePool{
		TypeMeta: metav1.TypeMeta{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.obj.Name,
			Labels:      p.obj.Labels,
			Annotations: withoutLastApplied(p.obj.Annotations),
		},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				ObjectMeta: karpv1.ObjectMeta{
					Labels:      c.templateLabels(p),
					Annotations: c.templateAnnotations(p),
				},
				Spec: karpv1.NodeClaimTemplateSpec{
					Requirements:  c.requirements(p, doc),
					Taints:        spec.Taints,
					StartupTaints: spec.StartupTaints,
					NodeClassRef:  &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClassName},
					ExpireAfter:   karpv1.NeverDuration(),
				},
			},
			Disruption: c.disruption(p),
			Weight:     spec.Weight,
		},
	}
	if spec.TTLSecondsUntilExpired != nil {
		pool.Spec.Template.Spec.ExpireAfter = seconds(*spec.TTLSecondsUntilExpired)
	}
	if spec.Limits != nil && len(spec.Limits.Resources) > 0 {
		pool.Spec.Limits = karpv1.Limits(spec.Limits.Resources)
	}
	return pool
}

// disruption maps v0.x's two switches: consolidation.enabled removes or replaces underused
// nodes; ttlSecondsAfterEmpty removes empty nodes after that long; neither means Karpenter v0.x
// removed nothing for being empty or underused, which v1 says with consolidateAfter: Never.
func (c *converter) disruption(p *provisioner) karpv1.Disruption {
	spec := p.obj.Spec
	consolidation := spec.Consolidation != nil && spec.Consolidation.Enabled != nil && *spec.Consolidation.Enabled
	switch {
	case consolidation:
		after := seconds(0)
		if ttl := spec.TTLSecondsAfterEmpty; ttl != nil {
			after = seconds(*ttl)
			c.result.Warnf("%s: spec.ttlSecondsAfterEmpty: v0.x refused it beside consolidation.enabled; written as consolidateAfter %s for both", p.label, secondsText(*ttl))
		}
		return karpv1.Disruption{ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: after}
	case spec.TTLSecondsAfterEmpty != nil:
		return karpv1.Disruption{ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmpty, ConsolidateAfter: seconds(*spec.TTLSecondsAfterEmpty)}
	default:
		return karpv1.Disruption{ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmpty, ConsolidateAfter: karpv1.NeverDuration()}
	}
}

// seconds writes a number of seconds, from 0 to maxTTLSeconds, as a short duration, such as
// 30s, 2m or 720h.
func seconds(s int64) karpv1.NillableDuration {
	d := karpv1.NewNillableDuration(time.Duration(s) * time.Second)
	d.Raw = []byte(strconv.Quote(secondsText(s)))
	return d
}

// secondsText spells a number of seconds in hours, minutes and seconds, leaving out zeros.
func secondsText(s int64) string {
	var b strings.Builder
	if h := s / 3600; h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m := s % 3600 / 60; m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if sec := s % 60; sec > 0 || b.Len() == 0 {
		fmt.Fprintf(&b, "%ds", sec)
	}
	return b.String()
}

// templateLabels maps the Provisioner's node labels, renaming and dropping as v1 requires.
func (c *converter) templateLabels(p *provisioner) map[string]string {
	labels := map[string]string{}
	for _, key := range sortedKeys(p.obj.Spec.Labels) {
		value := p.obj.Spec.Labels[key]
		path := "spec.labels[" + key + "]"
		key, ok := c.renameLabel(p, path, key, restrictedLabel)
		if !ok {
			continue
		}
		labels[key] = value
	}
	if len(labels) == 0 {
		return nil
	}
	return labels
}

// renameLabel gives a v0.x label key its v1 name, reporting the rename, or reports why v1
// cannot have it.
func (c *converter) renameLabel(p *provisioner, path, key string, restricted func(string) string) (string, bool) {
	if why, dropped := droppedLabels[key]; dropped {
		c.result.Warnf("%s: %s: dropped: %s", p.label, path, why)
		return "", false
	}
	renamed, isRenamed := renamedLabels[key]
	if !isRenamed {
		renamed = key
	}
	if why := restricted(renamed); why != "" {
		if isRenamed {
			why = fmt.Sprintf("it is %s in v1, and %s", renamed, why)
		}
		c.result.Warnf("%s: %s: dropped: %s", p.label, path, why)
		return "", false
	}
	if isRenamed {
		c.result.Warnf("%s: %s: renamed %s", p.label, path, renamed)
	}
	return renamed, true
}

// templateAnnotations maps the Provisioner's node annotations, renaming v0.x's.
func (c *converter) templateAnnotations(p *provisioner) map[string]string {
	annotations := map[string]string{}
	for _, key := range sortedKeys(p.obj.Spec.Annotations) {
		value := p.obj.Spec.Annotations[key]
		if renamed, ok := renamedAnnotations[key]; ok {
			c.result.Warnf("%s: spec.annotations[%s]: renamed %s", p.label, key, renamed)
			key = renamed
		}
		annotations[key] = value
	}
	if len(annotations) == 0 {
		return nil
	}
	return annotations
}

// requirements maps the Provisioner's requirements, tracing each in doc, and adds the
// defaults v0.x applied.
func (c *converter) requirements(p *provisioner, doc *convert.Document) []karpv1.NodeSelectorRequirementWithMinValues {
	var out []karpv1.NodeSelectorRequirementWithMinValues
	has := map[string]bool{}
	for i, r := range p.obj.Spec.Requirements {
		path := fmt.Sprintf("spec.requirements[%d] (%s)", i, r.Key)
		key, ok := c.renameLabel(p, path, r.Key, restrictedRequirement)
		if !ok {
			continue
		}
		has[key] = true
		doc.Trace(fmt.Sprintf("spec.template.spec.requirements[%d]", len(out)), p.src, fmt.Sprintf("spec.requirements[%d]", i))
		out = append(out, karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: r.Operator, Values: r.Values})
	}
	if c.opts.IgnoreDefaults {
		return out
	}
	for _, d := range legacyDefaults(has) {
		c.result.Warnf("%s: added requirement %s %s %v, a default of Karpenter v0.x that v1 does not apply", p.label, d.Key, d.Operator, d.Values)
		out = append(out, d)
	}
	return out
}

// legacyDefaults are the requirements Karpenter v0.x added to a Provisioner lacking them.
func legacyDefaults(has map[string]bool) []karpv1.NodeSelectorRequirementWithMinValues {
	var defaults []karpv1.NodeSelectorRequirementWithMinValues
	in := func(key string, values ...string) {
		defaults = append(defaults, karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values})
	}
	if !has[corev1.LabelOSStable] {
		in(corev1.LabelOSStable, string(corev1.Linux))
	}
	if !has[corev1.LabelArchStable] {
		in(corev1.LabelArchStable, "amd64")
	}
	if !has[karpv1.CapacityTypeLabelKey] {
		in(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)
	}
	if !has[corev1.LabelInstanceTypeStable] && !has[awsv1.LabelInstanceFamily] &&
		!has[awsv1.LabelInstanceCategory] && !has[awsv1.LabelInstanceGeneration] {
		in(awsv1.LabelInstanceCategory, "c", "m", "r")
		defaults = append(defaults, karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}})
	}
	return defaults
}

// kubelet maps the Provisioner's kubeletConfiguration to the EC2NodeClass kubelet block.
func (c *converter) kubelet(p *provisioner) *awsv1.KubeletConfiguration {
	k := p.obj.Spec.KubeletConfiguration
	if k == nil {
		return nil
	}
	if k.ContainerRuntime != nil {
		c.result.Warnf("%s: spec.kubeletConfiguration.containerRuntime: dropped: v1 always uses containerd", p.label)
	}
	out := &awsv1.KubeletConfiguration{
		ClusterDNS:                  k.ClusterDNS,
		MaxPods:                     k.MaxPods,
		PodsPerCore:                 k.PodsPerCore,
		SystemReserved:              quantities(k.SystemReserved),
		KubeReserved:                quantities(k.KubeReserved),
		EvictionHard:                k.EvictionHard,
		EvictionSoft:                k.EvictionSoft,
		EvictionSoftGracePeriod:     k.EvictionSoftGracePeriod,
		EvictionMaxPodGracePeriod:   k.EvictionMaxPodGracePeriod,
		ImageGCHighThresholdPercent: k.ImageGCHighThresholdPercent,
		ImageGCLowThresholdPercent:  k.ImageGCLowThresholdPercent,
		CPUCFSQuota:                 k.CPUCFSQuota,
	}
	if isZero(out) {
		return nil
	}
	return out
}

func isZero(k *awsv1.KubeletConfiguration) bool {
	return len(k.ClusterDNS) == 0 && k.MaxPods == nil && k.PodsPerCore == nil && len(k.SystemReserved) == 0 &&
		len(k.KubeReserved) == 0 && len(k.EvictionHard) == 0 && len(k.EvictionSoft) == 0 &&
		len(k.EvictionSoftGracePeriod) == 0 && k.EvictionMaxPodGracePeriod == nil &&
		k.ImageGCHighThresholdPercent == nil && k.ImageGCLowThresholdPercent == nil && k.CPUCFSQuota == nil
}

func quantities(list corev1.ResourceList) map[string]string {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]string, len(list))
	for name, q := range list {
		out[string(name)] = q.String()
	}
	return out
}

func withoutLastApplied(annotations map[string]string) map[string]string {
	if _, ok := annotations[lastApplied]; !ok {
		return annotations
	}
	out := map[string]string{}
	for k, v := range annotations {
		if k != lastApplied {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
