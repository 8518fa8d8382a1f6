package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// wellKnownLabels are the labels every node Karpenter launches carries, with values that come
// from the instance type and offering chosen. A pod may require them even when a NodePool does
// not mention them: the instance types decide.
var wellKnownLabels = map[string]bool{
	corev1.LabelTopologyZone:                        true,
	corev1.LabelTopologyRegion:                      true,
	corev1.LabelInstanceTypeStable:                  true,
	corev1.LabelArchStable:                          true,
	corev1.LabelOSStable:                            true,
	corev1.LabelWindowsBuild:                        true,
	karpv1.CapacityTypeLabelKey:                     true,
	karpv1.NodePoolLabelKey:                         true,
	awsv1.LabelInstanceCategory:                     true,
	awsv1.LabelInstanceFamily:                       true,
	awsv1.LabelInstanceGeneration:                   true,
	awsv1.LabelInstanceSize:                         true,
	awsv1.LabelInstanceCPU:                          true,
	awsv1.LabelInstanceCPUManufacturer:              true,
	awsv1.LabelInstanceCPUSustainedClockSpeedMhz:    true,
	awsv1.LabelInstanceMemory:                       true,
	awsv1.LabelInstanceHypervisor:                   true,
	awsv1.LabelInstanceEncryptionInTransitSupported: true,
	awsv1.LabelInstanceLocalNVME:                    true,
	awsv1.LabelInstanceNetworkBandwidth:             true,
	awsv1.LabelInstanceEBSBandwidth:                 true,
	awsv1.LabelInstanceGPUName:                      true,
	awsv1.LabelInstanceGPUManufacturer:              true,
	awsv1.LabelInstanceGPUCount:                     true,
	awsv1.LabelInstanceGPUMemory:                    true,
	awsv1.LabelInstanceAcceleratorName:              true,
	awsv1.LabelInstanceAcceleratorManufacturer:      true,
	awsv1.LabelInstanceAcceleratorCount:             true,
	awsv1.LabelInstanceCapabilityFlex:               true,
	awsv1.LabelCapacityReservationID:                true,
	awsv1.LabelCapacityReservationType:              true,
	awsv1.LabelCapacityReservationInterruptible:     true,
	awsv1.LabelPlacementGroupID:                     true,
	awsv1.LabelPlacementGroupPartition:              true,
	awsv1.LabelInstanceTenancy:                      true,
	awsv1.LabelTopologyZoneID:                       true,
	awsv1.LabelNodeClass:                            true,
}

// launchChoices are the well-known labels whose value no instance type fixes: an instance of
// any type may take any of the values, and its launch takes the first one the claim allows, in
// this order. The instance tenancy is one: as in Karpenter's AWS provider v1.15, every instance
// type's requirements allow both tenancies, and a claim that allows the default one launches on
// shared hardware.
var launchChoices = map[string][]string{
	awsv1.LabelInstanceTenancy: {awsv1.TenancyDefault, awsv1.TenancyDedicated},
}

// wellKnownValues are the only values some well-known labels take, as Karpenter's
// WellKnownValuesForRequirements lists them: a NodePool requirement In none of them can never
// be met.
var wellKnownValues = map[string][]string{
	karpv1.CapacityTypeLabelKey: {karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot, karpv1.CapacityTypeReserved},
	awsv1.LabelInstanceTenancy:  launchChoices[awsv1.LabelInstanceTenancy],
}

// WellKnownValues returns the only values the label takes; false when any value may be.
func WellKnownValues(key string) ([]string, bool) {
	values, ok := wellKnownValues[key]
	return values, ok
}

// LaunchChoices returns the values an instance of any type may take for the label, chosen at
// its launch, in order of preference; false when the label is not chosen so.
func LaunchChoices(key string) ([]string, bool) {
	values, ok := launchChoices[key]
	return values, ok
}

// LaunchChoiceLabels are the labels a launch for these requirements chooses: for each label
// of LaunchChoices, the first value the requirements allow. A label whose values the
// requirements all exclude is missing (no instance can meet them).
func (rs Requirements) LaunchChoiceLabels() map[string]string {
	out := map[string]string{}
	for key, values := range launchChoices {
		r, constrained := rs.Get(key)
		for _, v := range values {
			if !constrained || r.Has(v) {
				out[key] = v
				break
			}
		}
	}
	return out
}

// IsWellKnownLabel reports whether every Karpenter node carries the label, with a value set by
// the instance type or offering (zone, arch, instance type, capacity type, …).
func IsWellKnownLabel(key string) bool { return wellKnownLabels[key] }

// RestrictedLabelReason says why a NodePool may not set a label, or "" when it may.
func RestrictedLabelReason(key string) string {
	if key == corev1.LabelHostname {
		return `label "kubernetes.io/hostname" is restricted`
	}
	if key == karpv1.NodePoolLabelKey {
		return `label "karpenter.sh/nodepool" is restricted`
	}
	domain := key
	for i := range len(key) {
		if key[i] == '/' {
			domain = key[:i]
			break
		}
	}
	for _, restricted := range karpv1.RestrictedLabelDomains {
		if (domain == restricted || hasSuffix(domain, "."+restricted)) && !wellKnownLabels[key] {
			return `label domain "` + restricted + `" is restricted`
		}
	}
	return ""
}

func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// ResolvedLabels returns the labels that a node made for these requirements carries because of
// them, as Karpenter resolves a NodeClaim's custom labels from its requirements: for every key
// that is neither well known (the instance type and offering set those) nor
// kubernetes.io/hostname, a value the requirement allows. In gives its value (the smallest of
// several); Exists, NotIn, Gt, Lt, Gte and Lte give an integer they allow; DoesNotExist gives
// no label. Pods that selected a value narrowed the requirement to it, so the node carries their
// value.
func (rs Requirements) ResolvedLabels() map[string]string {
	out := map[string]string{}
	for _, r := range rs.reqs {
		if wellKnownLabels[r.Key] || r.Key == corev1.LabelHostname {
			continue
		}
		if v := r.Any(); v != "" {
			out[r.Key] = v
		}
	}
	return out
}

// NodeSelectionTerms are a pod's node selection as requirements, one per term of its required node
// affinity (each with its nodeSelector), or its nodeSelector alone when it has no such
// affinity. A term that cannot be parsed is left out: it matches no node.
func NodeSelectionTerms(spec *corev1.PodSpec) []Requirements {
	selector := FromLabels(spec.NodeSelector)
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return []Requirements{selector}
	}
	var out []Requirements
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		reqs, err := FromNodeSelectorRequirements(term.MatchExpressions...)
		if err != nil {
			continue
		}
		out = append(out, selector.Intersect(reqs))
	}
	return out
}

// DaemonTerms is the one answer to whether a daemonset's pod (spec, its template's) may run on a
// node with these taints, and under which node selection: its NodeSelectionTerms when it
// tolerates the taints (PreferNoSchedule is no bar), none when it does not. It runs on a node
// that one of the terms matches. Its callers ask of different nodes: a node or in-flight claim
// by its labels (state.DaemonSetSchedules), each instance type of a NodePool by the labels a
// node of it would have (the scheduler's daemon overhead), and every node of a NodePool, which
// only a term with no requirement matches (the packing bound).
func DaemonTerms(spec *corev1.PodSpec, taints []corev1.Taint) []Requirements {
	if Tolerates(spec.Tolerations, taints) != nil {
		return nil
	}
	return NodeSelectionTerms(spec)
}
