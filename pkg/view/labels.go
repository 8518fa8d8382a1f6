package view

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Computed label keys: values the view works out for a row rather than reads from its labels,
// named as eks-node-viewer names them, so that its --extra-labels and --node-sort values work
// here too.
const (
	// NodeAgeLabel is the row's age.
	NodeAgeLabel = "eks-node-viewer/node-age"

	usageLabelPrefix = "eks-node-viewer/node-"
	usageLabelSuffix = "-usage"
)

// UsageLabel is the computed label key of the share of resource a row's pods request,
// eks-node-viewer/node-RESOURCE-usage: eks-node-viewer/node-cpu-usage for CPU.
func UsageLabel(resource corev1.ResourceName) string {
	return usageLabelPrefix + string(resource) + usageLabelSuffix
}

// usageLabelResource returns the resource of a UsageLabel key, and false when key is not one.
func usageLabelResource(key string) (corev1.ResourceName, bool) {
	name, ok := strings.CutPrefix(key, usageLabelPrefix)
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, usageLabelSuffix)
	if !ok || name == "" {
		return "", false
	}
	return corev1.ResourceName(name), true
}

// LabelValue returns the value row r shows for key: its label, or for NodeAgeLabel and a
// UsageLabel its age or the percentage of the resource its pods request. It returns false when
// r has no such label, or no usage (a claim, or a node that offers none of the resource).
func (s *Snapshot) LabelValue(r *Row, key string) (string, bool) {
	if key == NodeAgeLabel {
		if r.Created.IsZero() {
			return "", false
		}
		return duration.HumanDuration(s.Now.Sub(r.Created)), true
	}
	if name, ok := usageLabelResource(key); ok {
		u, ok := s.usage(r, name)
		if !ok || u.Allocatable <= 0 {
			return "", false
		}
		return percent(u.Fraction()), true
	}
	v, ok := r.Labels[key]
	return v, ok
}

// usage returns r's usage of name, and false when r has none (a claim) or the snapshot does not
// measure name.
func (s *Snapshot) usage(r *Row, name corev1.ResourceName) (Usage, bool) {
	i := slices.Index(s.Measured, name)
	if i < 0 || r.Usage == nil {
		return Usage{}, false
	}
	return r.Usage[i], true
}

// percent formats a fraction as a whole percentage, rounded half up: 0.525 is "53%".
func percent(f float64) string {
	return fmt.Sprintf("%.0f%%", math.Floor(f*100+0.5))
}

// ParseResources parses a comma-separated list of resource names, such as
// cpu,memory,nvidia.com/gpu. It refuses an empty list, an empty or repeated item, and a name
// that is not a Kubernetes resource name.
func ParseResources(s string) ([]corev1.ResourceName, error) {
	items, err := splitList(s)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, errors.New("no resources: want a comma-separated list such as cpu,memory,nvidia.com/gpu")
	}
	names := make([]corev1.ResourceName, len(items))
	for i, item := range items {
		if err := validateResourceName(item); err != nil {
			return nil, err
		}
		names[i] = corev1.ResourceName(item)
	}
	return names, nil
}

// ParseExtraLabels parses a comma-separated list of label keys, such as
// team,karpenter.k8s.aws/instance-family; the computed keys NodeAgeLabel and UsageLabel are
// allowed. An empty string is no labels. It refuses an empty or repeated item and a key that is
// not a label key, and leaves out the keys the view shows in columns of its own (builtInColumns:
// eks-node-viewer's usual topology.kubernetes.io/zone,karpenter.sh/nodepool repeat none).
func ParseExtraLabels(s string) ([]string, error) {
	items, err := splitList(s)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, item := range items {
		if err := validateLabelKey(item); err != nil {
			return nil, err
		}
		if !builtInColumns[item] {
			out = append(out, item)
		}
	}
	return out, nil
}

// builtInColumns are the label keys whose values the view's own columns show: the zone,
// NodePool, instance type and capacity type, and the node's age.
var builtInColumns = map[string]bool{
	corev1.LabelTopologyZone:          true,
	corev1.LabelFailureDomainBetaZone: true,
	"karpenter.sh/nodepool":           true,
	corev1.LabelInstanceTypeStable:    true,
	corev1.LabelInstanceType:          true,
	"karpenter.sh/capacity-type":      true,
	NodeAgeLabel:                      true,
}

// splitList splits a comma-separated list, trimming spaces around its items; an empty or
// blank string is an empty list.
func splitList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	items := strings.Split(s, ",")
	for i, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("empty item in %q: separate the items with single commas", s)
		}
		for _, prev := range items[:i] {
			if prev == item {
				return nil, fmt.Errorf("%s is listed twice in %q", item, s)
			}
		}
		items[i] = item
	}
	return items, nil
}

// validateResourceName refuses what cannot name a resource: resource names are qualified
// names, such as cpu, hugepages-2Mi or nvidia.com/gpu.
func validateResourceName(name string) error {
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return fmt.Errorf("%q is not a resource name (such as cpu, memory or nvidia.com/gpu): %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// validateLabelKey refuses what cannot be a label key or a computed one.
func validateLabelKey(key string) error {
	if name, ok := usageLabelResource(key); ok {
		if err := validateResourceName(string(name)); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("%q is not a label key (such as topology.kubernetes.io/zone): %s", key, strings.Join(errs, "; "))
	}
	return nil
}
