package scheduling

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Requirement is the set of values one label key may take on a node, and whether a node
// without the label qualifies. It covers every operator:
//
//	In [a b]        values {a, b}; label required
//	NotIn [a b]     every value but a and b; label may be absent
//	Exists          every value; label required
//	DoesNotExist    no value; label must be absent
//	Gt n / Lt n     integers above / below n; label required
//	Gte n / Lte n   integers from / up to n (n included); label required (NodePools and
//	                NodeClaims only, as in Karpenter v1.9 and later: Kubernetes lacks them)
//
// Requirements are values: methods never modify the receiver.
type Requirement struct {
	// Key is the label key.
	Key string
	// complement: values lists what is excluded (NotIn, Exists); otherwise what is allowed.
	complement bool
	// values is sorted and free of duplicates.
	values []string
	// lower and upper bound integer values when set.
	lower, upper *bound
	// absentOK: a node without the label satisfies the requirement.
	absentOK bool
	// MinValues, when set, asks that the chosen instance types span at least this many values.
	MinValues *int
}

// bound is an integer bound, inclusive: Gt 4 and Gte 5 both hold n = 5. strict remembers that it
// was written Gt or Lt, so that it is written back so (a NodePool's Gt 4 stays Gt 4 on its
// NodeClaims, which a CRD older than Gte and Lte still accepts) and printed as the user wrote it.
type bound struct {
	n      int64
	strict bool
}

// NewRequirement builds a requirement from an operator and its values, validating them as the
// API server does for a pod's node affinity: Gt, Lt, Gte and Lte take any int64, negative ones
// included (the NodePool and NodeClaim CRDs further require non-negative values). Gte and Lte
// are Karpenter's; FromNodeSelectorRequirements refuses them in node affinity.
func NewRequirement(key string, operator corev1.NodeSelectorOperator, values ...string) (Requirement, error) {
	r := Requirement{Key: key}
	switch operator {
	case corev1.NodeSelectorOpIn:
		if len(values) == 0 {
			return r, fmt.Errorf("requirement %s In: needs at least one value", key)
		}
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpNotIn:
		r.complement, r.absentOK, r.values = true, true, sortedUnique(values)
	case corev1.NodeSelectorOpExists:
		if len(values) != 0 {
			return r, fmt.Errorf("requirement %s Exists: must not have values", key)
		}
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		if len(values) != 0 {
			return r, fmt.Errorf("requirement %s DoesNotExist: must not have values", key)
		}
		r.absentOK = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, karpv1.NodeSelectorOpGte, karpv1.NodeSelectorOpLte:
		if len(values) != 1 {
			return r, fmt.Errorf("requirement %s %s: needs exactly one integer value, got %d values", key, operator, len(values))
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return r, fmt.Errorf("requirement %s %s: value %q is not an integer", key, operator, values[0])
		}
		r.complement = true
		switch {
		case operator == corev1.NodeSelectorOpGt && n == math.MaxInt64, operator == corev1.NodeSelectorOpLt && n == math.MinInt64:
			return Requirement{Key: key}, nil // no integer qualifies
		case operator == corev1.NodeSelectorOpGt:
			r.lower = &bound{n: n + 1, strict: true}
		case operator == corev1.NodeSelectorOpLt:
			r.upper = &bound{n: n - 1, strict: true}
		case operator == karpv1.NodeSelectorOpGte:
			r.lower = &bound{n: n}
		default:
			r.upper = &bound{n: n}
		}
	default:
		return r, fmt.Errorf("requirement %s: unknown operator %q, use In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte", key, operator)
	}
	return r, nil
}

// MustRequirement is NewRequirement that panics on error, for constants and tests.
func MustRequirement(key string, operator corev1.NodeSelectorOperator, values ...string) Requirement {
	r, err := NewRequirement(key, operator, values...)
	if err != nil {
		panic(err)
	}
	return r
}

func sortedUnique(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

// Has reports whether a node with the label set to value satisfies the requirement.
func (r Requirement) Has(value string) bool {
	if lo, hi, bounded := r.bounds(); bounded {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < lo || n > hi {
			return false
		}
	}
	_, found := slices.BinarySearch(r.values, value)
	return found != r.complement
}

// AllowsAbsent reports whether a node without the label satisfies the requirement.
func (r Requirement) AllowsAbsent() bool { return r.absentOK }

// IsFinite reports whether the requirement lists its allowed values (In, DoesNotExist, a small
// integer range, or an intersection with them) rather than excluding some from an unbounded set.
func (r Requirement) IsFinite() bool { return !r.complement || r.smallRange() }

// bounds returns the inclusive integer range Gt/Lt/Gte/Lte allow, or bounded false when there
// is none. An empty range has hi < lo.
func (r Requirement) bounds() (lo, hi int64, bounded bool) {
	if r.lower == nil && r.upper == nil {
		return 0, 0, false
	}
	lo, hi = math.MinInt64, math.MaxInt64
	if r.lower != nil {
		lo = r.lower.n
	}
	if r.upper != nil {
		hi = r.upper.n
	}
	return lo, hi, true
}

// smallRange reports whether the integer range is small enough to enumerate: at most a little
// more than the values it excludes, so a range too big to list always has a free value among its
// first len(values)+1 integers.
func (r Requirement) smallRange() bool {
	lo, hi, bounded := r.bounds()
	return bounded && (hi < lo || uint64(hi)-uint64(lo) < uint64(1024+len(r.values)))
}

// Values returns the allowed values of a finite requirement, sorted. For an unbounded one
// (NotIn, Exists, a wide Gt/Lt/Gte/Lte range) it returns nil: use Has.
func (r Requirement) Values() []string {
	if !r.complement {
		return r.values
	}
	if !r.smallRange() {
		return nil
	}
	lo, hi, _ := r.bounds()
	var out []string
	for i := uint64(0); hi >= lo && i <= uint64(hi)-uint64(lo); i++ {
		if v := strconv.FormatInt(lo+int64(i), 10); r.Has(v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// Len is the number of allowed values; math.MaxInt when unbounded.
func (r Requirement) Len() int {
	if r.IsFinite() {
		return len(r.Values())
	}
	return math.MaxInt
}

// IsEmpty reports whether no value satisfies the requirement (the label can at most be absent).
func (r Requirement) IsEmpty() bool { return r.Len() == 0 }

// Satisfiable reports whether any node satisfies the requirement: with some value, or without
// the label.
func (r Requirement) Satisfiable() bool { return r.absentOK || !r.IsEmpty() }

// Any returns an allowed value: the smallest of a finite set, else the smallest non-negative
// integer (or, with a lower bound, the smallest integer from it) that is not excluded, as
// Karpenter picks an integer for NotIn and Exists (it picks at random; this is deterministic).
// It returns "" when there is none.
func (r Requirement) Any() string {
	if r.IsFinite() {
		if vs := r.Values(); len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	// Unbounded: among len(values)+1 candidates at least one is not excluded.
	lo, hi, bounded := r.bounds()
	switch {
	case !bounded:
		lo = 0
	case lo < 0 && hi >= int64(len(r.values)):
		lo = 0
	case lo < 0:
		lo = hi - int64(len(r.values)) // only negative values are allowed: the largest few
	}
	for i := 0; i <= len(r.values); i++ {
		v := strconv.FormatInt(lo+int64(i), 10)
		if r.Has(v) {
			return v
		}
	}
	return ""
}

// Intersect returns the values both requirements allow; minValues takes the larger.
func (r Requirement) Intersect(o Requirement) Requirement {
	out := Requirement{Key: r.Key, absentOK: r.absentOK && o.absentOK}
	out.lower = tighter(r.lower, o.lower, 1)
	out.upper = tighter(r.upper, o.upper, -1)
	switch {
	case !r.complement && !o.complement:
		out.values = intersectSorted(r.values, o.values)
	case !r.complement:
		out.values = differenceSorted(r.values, o.values)
	case !o.complement:
		out.values = differenceSorted(o.values, r.values)
	default:
		out.complement = true
		out.values = unionSorted(r.values, o.values)
	}
	if !out.complement && (out.lower != nil || out.upper != nil) {
		// Bounds filter a finite set down to its integers in range; they need not be kept.
		kept := out.values[:0:0]
		for _, v := range out.values {
			if out.Has(v) {
				kept = append(kept, v)
			}
		}
		out.values, out.lower, out.upper = kept, nil, nil
	}
	out.MinValues = maxMinValues(r.MinValues, o.MinValues)
	return out
}

// tighter returns the bound that allows less: the larger of two lower bounds (sign 1) or the
// smaller of two upper bounds (sign -1). Of two equal bounds it keeps the strict one, so Gt 4 ∩
// Gte 5 is written Gt 4, which every version of the CRD accepts.
func tighter(a, b *bound, sign int) *bound {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.n == b.n && a.strict != b.strict:
		return &bound{n: a.n, strict: true}
	case cmp.Compare(b.n, a.n)*sign > 0:
		return b
	}
	return a
}

func maxMinValues(a, b *int) *int {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

func intersectSorted(a, b []string) []string {
	var out []string
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch strings.Compare(a[i], b[j]) {
		case -1:
			i++
		case 1:
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return out
}

func differenceSorted(a, b []string) []string {
	var out []string
	j := 0
	for _, v := range a {
		for j < len(b) && b[j] < v {
			j++
		}
		if j < len(b) && b[j] == v {
			continue
		}
		out = append(out, v)
	}
	return out
}

func unionSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// NodeSelectorRequirements expresses the requirement as node selector requirements (one, or
// several when bounds combine with exclusions), which together mean the same set. Integer bounds
// are written as they were given: Gt and Lt, or Gte and Lte (which only NodePools and NodeClaims
// take), with any integer, negative ones included (Requirements.NodeSelectorRequirements, for a
// NodeClaim's spec, narrows them to non-negative values first).
func (r Requirement) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	if !r.complement {
		// A finite set never also allows absence: only DoesNotExist does, and it has no values.
		if len(r.values) == 0 && r.absentOK {
			return []corev1.NodeSelectorRequirement{{Key: r.Key, Operator: corev1.NodeSelectorOpDoesNotExist}}
		}
		if len(r.values) == 0 {
			// Nothing satisfies it; Kubernetes can only say so as Exists and DoesNotExist together.
			return []corev1.NodeSelectorRequirement{
				{Key: r.Key, Operator: corev1.NodeSelectorOpExists},
				{Key: r.Key, Operator: corev1.NodeSelectorOpDoesNotExist},
			}
		}
		return []corev1.NodeSelectorRequirement{{Key: r.Key, Operator: corev1.NodeSelectorOpIn, Values: r.values}}
	}
	var out []corev1.NodeSelectorRequirement
	bounded := r.lower != nil || r.upper != nil
	if b := r.lower; b != nil {
		op, n := karpv1.NodeSelectorOpGte, b.n
		if b.strict {
			op, n = corev1.NodeSelectorOpGt, b.n-1 // strict lower bounds come from Gt n-1 ≥ MinInt64
		}
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: op, Values: []string{strconv.FormatInt(n, 10)}})
	}
	if b := r.upper; b != nil {
		op, n := karpv1.NodeSelectorOpLte, b.n
		if b.strict {
			op, n = corev1.NodeSelectorOpLt, b.n+1 // strict upper bounds come from Lt n+1 ≤ MaxInt64
		}
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: op, Values: []string{strconv.FormatInt(n, 10)}})
	}
	if len(r.values) > 0 || (len(out) == 0 && r.absentOK) {
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpNotIn, Values: r.values})
	}
	if len(out) == 0 || (!r.absentOK && len(r.values) > 0 && !bounded) {
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpExists})
	}
	return out
}

// nonNegative returns the requirement with its integer bounds narrowed to what the NodePool and
// NodeClaim CRDs accept, whose Gt, Lt, Gte and Lte take only non-negative values. The result
// allows no value the requirement does not; it loses only negative integers, which a bound
// from a pod's affinity (Gt -1, Lt 0) may allow and no instance type's label takes:
//
//	Gt -1 becomes Gte 0 (the same set); Gt -5 and Gte -4 become Gte 0 (without -4 … -1);
//	Lte -1 becomes Lt 0 (the same set); Lt -1 and Lte -2 become a requirement nothing meets.
//
// A bound already written with a non-negative value is kept as it is.
func (r Requirement) nonNegative() Requirement {
	if b := r.upper; b != nil && b.n < -1 {
		return Requirement{Key: r.Key, MinValues: r.MinValues}
	}
	if b := r.lower; b != nil && (b.n < 0 || b.n == 0 && b.strict) {
		r.lower = &bound{n: max(b.n, 0)}
	}
	if b := r.upper; b != nil && b.n == -1 && !b.strict {
		r.upper = &bound{n: -1, strict: true}
	}
	return r
}

// String describes the requirement as a user would write it, such as "kubernetes.io/arch In
// [amd64]", "karpenter.k8s.aws/instance-cpu Gt 4" or "karpenter.k8s.aws/instance-cpu Gte 4,
// karpenter.k8s.aws/instance-cpu Lte 16".
func (r Requirement) String() string {
	if !r.Satisfiable() {
		return r.Key + " (no value and no absence satisfies it)"
	}
	parts := make([]string, 0, 2)
	for _, s := range r.NodeSelectorRequirements() {
		switch s.Operator {
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			parts = append(parts, fmt.Sprintf("%s %s", s.Key, s.Operator))
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, karpv1.NodeSelectorOpGte, karpv1.NodeSelectorOpLte:
			parts = append(parts, fmt.Sprintf("%s %s %s", s.Key, s.Operator, s.Values[0]))
		default:
			parts = append(parts, fmt.Sprintf("%s %s [%s]", s.Key, s.Operator, strings.Join(s.Values, " ")))
		}
	}
	s := strings.Join(parts, ", ")
	if r.MinValues != nil {
		s += fmt.Sprintf(" (minValues %d)", *r.MinValues)
	}
	return s
}
