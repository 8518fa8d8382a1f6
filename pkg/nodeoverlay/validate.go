package nodeoverlay

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// RuntimeValidate makes the checks of an overlay the CRD cannot make, as Karpenter's
// NodeOverlay.RuntimeValidate does: each requirement's key is a label key outside the
// restricted domains (karpenter.sh/nodepool and karpenter.sh/capacity-type are allowed) and
// each value a label value; its operator and values form a requirement; the price or price
// adjustment parses; capacity names no standard resource. The error lists every failure,
// each naming the field.
func RuntimeValidate(o *v1alpha1.NodeOverlay) error {
	var errs []error
	for i, r := range o.Spec.Requirements {
		field := fmt.Sprintf("spec.requirements[%d]", i)
		if msgs := validation.IsQualifiedName(r.Key); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s.key %q: %s", field, r.Key, strings.Join(msgs, "; ")))
		} else if reason := scheduling.RestrictedLabelReason(r.Key); reason != "" && r.Key != karpv1.NodePoolLabelKey {
			errs = append(errs, fmt.Errorf("%s.key: %s", field, reason))
		}
		for j, v := range r.Values {
			if r.Operator == corev1.NodeSelectorOpIn || r.Operator == corev1.NodeSelectorOpNotIn {
				if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
					errs = append(errs, fmt.Errorf("%s.values[%d] %q: %s", field, j, v, strings.Join(msgs, "; ")))
				}
			}
		}
		if r.Operator == corev1.NodeSelectorOpNotIn && len(r.Values) == 0 {
			errs = append(errs, fmt.Errorf("%s: key %s with operator NotIn must have a value defined", field, r.Key))
		}
		if _, err := scheduling.NewRequirement(r.Key, r.Operator, r.Values...); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
	}
	if o.Spec.Price != nil && o.Spec.PriceAdjustment != nil {
		errs = append(errs, errors.New("spec: cannot set both price and priceAdjustment"))
	}
	if _, err := AdjustedPrice(1, change(o)); err != nil {
		errs = append(errs, fmt.Errorf("spec: %w", err))
	}
	for name := range o.Spec.Capacity {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
			errs = append(errs, fmt.Errorf("spec.capacity: %s cannot be changed, only extended resources can be added", name))
		}
	}
	return errors.Join(errs...)
}

// change is the overlay's price or price adjustment, or "" when it sets neither.
func change(o *v1alpha1.NodeOverlay) string {
	switch {
	case o.Spec.Price != nil:
		return *o.Spec.Price
	case o.Spec.PriceAdjustment != nil:
		return *o.Spec.PriceAdjustment
	}
	return ""
}

// requirements are the overlay's requirements for matching; RuntimeValidate has passed.
func requirements(o *v1alpha1.NodeOverlay) (scheduling.Requirements, error) {
	in := make([]karpv1.NodeSelectorRequirementWithMinValues, len(o.Spec.Requirements))
	for i, r := range o.Spec.Requirements {
		in[i] = karpv1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values}
	}
	return scheduling.FromNodePoolRequirements(in...)
}
