package nodepool

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Reasons of a failed ValidationSucceeded condition, in ValidationError.Reason.
const (
	// ReasonRequirementsInvalid: a requirement does not parse (operator, values, integers).
	ReasonRequirementsInvalid = "RequirementsInvalid"
	// ReasonRequirementsUnsatisfiable: no node can meet the requirements together with the
	// template labels (or a minValues cannot be met).
	ReasonRequirementsUnsatisfiable = "RequirementsUnsatisfiable"
	// ReasonLabelsConflict: a template label has a value the requirements exclude.
	ReasonLabelsConflict = "LabelsConflictWithRequirements"
	// ReasonLabelInvalid: a template label's key or value is not a valid Kubernetes label.
	ReasonLabelInvalid = "LabelInvalid"
	// ReasonLabelRestricted: a template label or requirement uses a key users may not set.
	ReasonLabelRestricted = "LabelRestricted"
)

// ValidationError says which field of a NodePool fails a check the CRD schema cannot make, and
// why. Reason is one of the Reason… constants of this file.
type ValidationError struct {
	// Field is the path of the offending field, such as
	// spec.template.spec.requirements[2] or spec.template.metadata.labels[team].
	Field string
	// Reason is a CamelCase reason for the NodePool's ValidationSucceeded condition.
	Reason string
	// Detail says what is wrong with the field.
	Detail string
}

// Error implements error as "<field>: <detail>".
func (e *ValidationError) Error() string { return e.Field + ": " + e.Detail }

const (
	requirementsField = "spec.template.spec.requirements"
	labelsField       = "spec.template.metadata.labels"
)

// Validate makes the checks of a NodePool that the CRD schema cannot make, in a fixed order,
// and returns the first failure as a *ValidationError (nil when the NodePool is valid):
//
//  1. each requirement parses (operator and values agree, Gt/Lt/Gte/Lte take one integer);
//  2. no requirement key is restricted, and an In requirement on a label with well-known
//     values (karpenter.sh/capacity-type, karpenter.k8s.aws/instance-tenancy) names one of
//     them, as many as its minValues, as Karpenter's validateWellKnownValues has it: the karpenter.sh and karpenter.k8s.aws domains but for
//     their well-known labels, karpenter.sh/nodepool, kubernetes.io/hostname, and the
//     kubernetes.io domain but for its well-known labels and node.kubernetes.io and
//     node-restriction.kubernetes.io;
//  3. each template label is a valid label and is not restricted (the same rules, except that
//     the kubernetes.io domain is allowed, as the schema allows it);
//  4. no template label has a value the requirements exclude;
//  5. the requirements are satisfiable together with the template labels, and each minValues
//     can still be met.
//
// The schema already enforces most of 1–3; they are checked again so a NodePool written before
// a schema change (or through a path that skipped it) is never launched from.
func Validate(np *karpv1.NodePool) error {
	tmpl := np.Spec.Template
	var reqs scheduling.Requirements
	for i, s := range tmpl.Spec.Requirements {
		field := fmt.Sprintf("%s[%d]", requirementsField, i)
		r, err := scheduling.NewRequirement(s.Key, s.Operator, s.Values...)
		if err != nil {
			return &ValidationError{Field: field, Reason: ReasonRequirementsInvalid, Detail: err.Error()}
		}
		if reason := requirementKeyReason(s.Key); reason != "" {
			return &ValidationError{Field: field, Reason: ReasonLabelRestricted, Detail: reason}
		}
		if detail := unknownValues(s); detail != "" {
			return &ValidationError{Field: field, Reason: ReasonRequirementsUnsatisfiable, Detail: detail}
		}
		r.MinValues = s.MinValues
		reqs = reqs.With(r)
	}
	keys := sortedKeys(tmpl.Labels)
	for _, k := range keys {
		field := fmt.Sprintf("%s[%s]", labelsField, k)
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return &ValidationError{Field: field, Reason: ReasonLabelInvalid, Detail: "invalid key: " + strings.Join(errs, "; ")}
		}
		if errs := validation.IsValidLabelValue(tmpl.Labels[k]); len(errs) > 0 {
			return &ValidationError{Field: field, Reason: ReasonLabelInvalid, Detail: fmt.Sprintf("invalid value %q: %s", tmpl.Labels[k], strings.Join(errs, "; "))}
		}
		if reason := scheduling.RestrictedLabelReason(k); reason != "" {
			return &ValidationError{Field: field, Reason: ReasonLabelRestricted, Detail: reason}
		}
	}
	for _, k := range keys {
		if r, ok := reqs.Get(k); ok && !r.Has(tmpl.Labels[k]) {
			return &ValidationError{
				Field:  fmt.Sprintf("%s[%s]", labelsField, k),
				Reason: ReasonLabelsConflict,
				Detail: fmt.Sprintf("value %q is not allowed by %s (%s)", tmpl.Labels[k], requirementsField, r),
			}
		}
	}
	all := reqs.Intersect(scheduling.FromLabels(tmpl.Labels))
	if err := all.Satisfiable(); err != nil {
		return &ValidationError{Field: requirementsField, Reason: ReasonRequirementsUnsatisfiable, Detail: err.Error()}
	}
	for _, r := range all.All() {
		if r.MinValues != nil && r.IsFinite() && r.Len() < *r.MinValues {
			return &ValidationError{
				Field:  requirementsField,
				Reason: ReasonRequirementsUnsatisfiable,
				Detail: fmt.Sprintf("minValues %d of %s cannot be met: only %d values are allowed", *r.MinValues, r.Key, r.Len()),
			}
		}
	}
	return nil
}

// unknownValues says why an In requirement on a label with well-known values
// (scheduling.WellKnownValues) can never be met, in Karpenter's words, or "" when it can: none
// of its values is one of them, or fewer than its minValues are.
func unknownValues(r karpv1.NodeSelectorRequirementWithMinValues) string {
	known, ok := scheduling.WellKnownValues(r.Key)
	if !ok || r.Operator != corev1.NodeSelectorOpIn {
		return ""
	}
	var valid, invalid []string
	for _, v := range r.Values {
		if slices.Contains(known, v) {
			valid = append(valid, v)
		} else {
			invalid = append(invalid, v)
		}
	}
	switch {
	case len(valid) == 0:
		return fmt.Sprintf("no valid values found in %v for %s, expected one of: %v, got: %v", r.Values, r.Key, known, invalid)
	case r.MinValues != nil && len(valid) < *r.MinValues:
		return fmt.Sprintf("not enough valid values found in %v for %s, expected at least %d valid values from: %v, got: %d", r.Values, r.Key, *r.MinValues, known, len(valid))
	}
	return ""
}

// ClaimRequirements are scheduling.NodePoolRequirements as a NodeClaim's spec may carry them:
// template labels whose keys the NodeClaim schema refuses in requirements (kubernetes.io labels
// such as node-role.kubernetes.io/worker, which a template may set) are left out. They still
// reach the node as labels, which NewNodeClaim copies from the template.
func ClaimRequirements(np *karpv1.NodePool) (scheduling.Requirements, error) {
	return scheduling.NodePoolRequirements(np, func(key string) bool { return requirementKeyReason(key) == "" })
}

// kubernetesRequirementKeys are the kubernetes.io keys a requirement may name; other keys in
// that domain are refused unless their domain ends in node.kubernetes.io or
// node-restriction.kubernetes.io (labels the kubelet may set), as the CRD schema of NodePool
// and NodeClaim requirements says.
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

// requirementKeyReason says why a requirement may not name key, or "" when it may: the
// restrictions of template labels (scheduling.RestrictedLabelReason) plus the kubernetes.io
// domain, which template labels may use but requirements may not.
func requirementKeyReason(key string) string {
	if reason := scheduling.RestrictedLabelReason(key); reason != "" {
		return reason
	}
	if kubernetesRequirementKeys[key] {
		return ""
	}
	domain, _, _ := strings.Cut(key, "/")
	if strings.HasSuffix(domain, "node.kubernetes.io") || strings.HasSuffix(domain, "node-restriction.kubernetes.io") {
		return ""
	}
	if strings.HasSuffix(domain, "kubernetes.io") {
		return `label domain "kubernetes.io" is restricted`
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
