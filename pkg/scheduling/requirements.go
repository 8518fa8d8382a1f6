package scheduling

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Requirements is a conjunction of requirements on distinct keys, kept sorted by key so that
// iteration, printing and hashing are deterministic. The zero value requires nothing.
// Requirements are values: methods never modify the receiver.
type Requirements struct {
	reqs []Requirement
}

// NewRequirements combines requirements; several on one key are intersected.
func NewRequirements(rs ...Requirement) Requirements {
	var out Requirements
	for _, r := range rs {
		out = out.With(r)
	}
	return out
}

// FromNodeSelectorRequirements converts Kubernetes node selector requirements: a pod's or a
// volume's node affinity. They take Kubernetes' operators only, as the API server checks:
// Karpenter's Gte and Lte are refused with an error that gives the Gt or Lt to use instead.
func FromNodeSelectorRequirements(in ...corev1.NodeSelectorRequirement) (Requirements, error) {
	var out Requirements
	for _, s := range in {
		if s.Operator == karpv1.NodeSelectorOpGte || s.Operator == karpv1.NodeSelectorOpLte {
			return Requirements{}, karpenterOnlyOperator(s)
		}
		r, err := NewRequirement(s.Key, s.Operator, s.Values...)
		if err != nil {
			return Requirements{}, err
		}
		out = out.With(r)
	}
	return out, nil
}

// karpenterOnlyOperator is the error for Gte or Lte in a node selector term, which suggests
// the Kubernetes operator that means the same.
func karpenterOnlyOperator(s corev1.NodeSelectorRequirement) error {
	fix := "use Gt or Lt"
	if len(s.Values) == 1 {
		if n, err := strconv.ParseInt(s.Values[0], 10, 64); err == nil {
			switch {
			case s.Operator == karpv1.NodeSelectorOpGte && n > math.MinInt64:
				fix = fmt.Sprintf("use Gt %d", n-1)
			case s.Operator == karpv1.NodeSelectorOpLte && n < math.MaxInt64:
				fix = fmt.Sprintf("use Lt %d", n+1)
			}
		}
	}
	return fmt.Errorf("requirement %s %s %s: Gte and Lte are for NodePools and NodeClaims only, node selectors take In, NotIn, Exists, DoesNotExist, Gt and Lt: %s",
		s.Key, s.Operator, strings.Join(s.Values, " "), fix)
}

// FromNodePoolRequirements converts a NodePool's or NodeClaim's requirements, with minValues;
// they may use Karpenter's Gte and Lte besides Kubernetes' operators.
func FromNodePoolRequirements(in ...karpv1.NodeSelectorRequirementWithMinValues) (Requirements, error) {
	var out Requirements
	for _, s := range in {
		r, err := NewRequirement(s.Key, s.Operator, s.Values...)
		if err != nil {
			return Requirements{}, err
		}
		r.MinValues = s.MinValues
		out = out.With(r)
	}
	return out, nil
}

// NodePoolRequirements are what every node of the NodePool must meet: its template's
// requirements, its template labels (each as In of its value) that keepLabel keeps (nil keeps
// them all) and karpenter.sh/nodepool In [name]. It fails when a requirement does not parse;
// it does not check satisfiability (the nodepool package validates NodePools).
func NodePoolRequirements(np *karpv1.NodePool, keepLabel func(key string) bool) (Requirements, error) {
	reqs, err := FromNodePoolRequirements(np.Spec.Template.Spec.Requirements...)
	if err != nil {
		return Requirements{}, fmt.Errorf("parsing nodepool requirements: %w", err)
	}
	labels := make(map[string]string, len(np.Spec.Template.Labels))
	for k, v := range np.Spec.Template.Labels {
		if keepLabel == nil || keepLabel(k) {
			labels[k] = v
		}
	}
	reqs = reqs.Intersect(FromLabels(labels))
	return reqs.With(MustRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, np.Name)), nil
}

// FromLabels turns labels into In requirements of one value each.
func FromLabels(labels map[string]string) Requirements {
	reqs := make([]Requirement, 0, len(labels))
	for k, v := range labels {
		reqs = append(reqs, Requirement{Key: k, values: []string{v}})
	}
	slices.SortFunc(reqs, func(a, b Requirement) int { return strings.Compare(a.Key, b.Key) })
	return Requirements{reqs: reqs}
}

func (rs Requirements) index(key string) (int, bool) {
	return slices.BinarySearchFunc(rs.reqs, key, func(r Requirement, k string) int { return strings.Compare(r.Key, k) })
}

// Get returns the requirement on key, if any.
func (rs Requirements) Get(key string) (Requirement, bool) {
	if i, ok := rs.index(key); ok {
		return rs.reqs[i], true
	}
	return Requirement{}, false
}

// Has reports whether there is a requirement on key.
func (rs Requirements) Has(key string) bool {
	_, ok := rs.index(key)
	return ok
}

// Len is the number of keys with a requirement.
func (rs Requirements) Len() int { return len(rs.reqs) }

// All returns the requirements sorted by key. The slice must not be modified.
func (rs Requirements) All() []Requirement { return rs.reqs }

// Keys returns the keys with a requirement, sorted.
func (rs Requirements) Keys() []string {
	keys := make([]string, len(rs.reqs))
	for i, r := range rs.reqs {
		keys[i] = r.Key
	}
	return keys
}

// With returns rs with r added, intersected with any requirement already on r.Key.
func (rs Requirements) With(r Requirement) Requirements {
	i, found := rs.index(r.Key)
	out := make([]Requirement, len(rs.reqs), len(rs.reqs)+1)
	copy(out, rs.reqs)
	if found {
		out[i] = out[i].Intersect(r)
	} else {
		out = slices.Insert(out, i, r)
	}
	return Requirements{reqs: out}
}

// WithMinValues returns rs with the minValues of the requirement on key set to n (lowered or
// raised, unlike With, which keeps the larger); rs itself when it has no requirement on key.
func (rs Requirements) WithMinValues(key string, n int) Requirements {
	i, found := rs.index(key)
	if !found {
		return rs
	}
	out := slices.Clone(rs.reqs)
	out[i].MinValues = &n
	return Requirements{reqs: out}
}

// Intersect returns the requirements of both.
func (rs Requirements) Intersect(o Requirements) Requirements {
	if len(o.reqs) == 0 {
		return rs
	}
	if len(rs.reqs) == 0 {
		return o
	}
	out := make([]Requirement, 0, len(rs.reqs)+len(o.reqs))
	i, j := 0, 0
	for i < len(rs.reqs) || j < len(o.reqs) {
		switch {
		case j == len(o.reqs) || (i < len(rs.reqs) && rs.reqs[i].Key < o.reqs[j].Key):
			out = append(out, rs.reqs[i])
			i++
		case i == len(rs.reqs) || o.reqs[j].Key < rs.reqs[i].Key:
			out = append(out, o.reqs[j])
			j++
		default:
			out = append(out, rs.reqs[i].Intersect(o.reqs[j]))
			i, j = i+1, j+1
		}
	}
	return Requirements{reqs: out}
}

// Satisfiable returns an error naming the first key no node can satisfy.
func (rs Requirements) Satisfiable() error {
	for _, r := range rs.reqs {
		if !r.Satisfiable() {
			return fmt.Errorf("no value of %s satisfies the requirements", r.Key)
		}
	}
	return nil
}

// Compatible reports whether some node can satisfy both rs (say, a pod's) and o (say, a
// NodePool's), and if not, why. A key only rs constrains is fine when rs allows the label to be
// absent, or when it is in knownKeys: labels the node will get from elsewhere (the instance
// type's well-known labels), which the caller checks separately.
func (rs Requirements) Compatible(o Requirements, knownKeys func(string) bool) error {
	j := 0
	for _, r := range rs.reqs {
		for j < len(o.reqs) && o.reqs[j].Key < r.Key {
			j++
		}
		if j < len(o.reqs) && o.reqs[j].Key == r.Key {
			other := o.reqs[j]
			if !r.Intersect(other).Satisfiable() {
				return &IncompatibleError{Key: r.Key, Want: r, Have: other}
			}
			continue
		}
		if r.AllowsAbsent() || (knownKeys != nil && knownKeys(r.Key)) {
			continue
		}
		return &IncompatibleError{Key: r.Key, Want: r, Undefined: true}
	}
	return nil
}

// IncompatibleError says which key two sets of requirements disagree on.
type IncompatibleError struct {
	// Key is the label key in conflict.
	Key string
	// Want is the requirement that could not be met; Have the one it met.
	Want, Have Requirement
	// Undefined: the other side says nothing of Key, so nodes will not have the label.
	Undefined bool
}

// Error names the requirement that does not intersect.
func (e *IncompatibleError) Error() string {
	if e.Undefined {
		return fmt.Sprintf("requirement %s cannot be met: the label is not defined (add it to the NodePool's labels or requirements)", e.Want)
	}
	return fmt.Sprintf("requirement %s not compatible with %s", e.Want, e.Have)
}

// Matches reports whether a node with these labels satisfies every requirement, and if not,
// which one fails.
func (rs Requirements) Matches(labels map[string]string) error {
	for _, r := range rs.reqs {
		v, ok := labels[r.Key]
		if ok && r.Has(v) || !ok && r.AllowsAbsent() {
			continue
		}
		if ok {
			return fmt.Errorf("label %s=%s does not satisfy %s", r.Key, v, r)
		}
		return fmt.Errorf("label %s is missing, required by %s", r.Key, r)
	}
	return nil
}

// Labels returns the labels the requirements pin to one value (In with a single value), which a
// node created for them will carry.
func (rs Requirements) Labels() map[string]string {
	out := map[string]string{}
	for _, r := range rs.reqs {
		if !r.complement && len(r.values) == 1 {
			out[r.Key] = r.values[0]
		}
	}
	return out
}

// NodeSelectorRequirements expresses the requirements for a NodeClaim's spec, which the CRD
// accepts: integer bounds keep the operator they were given (a NodePool's Gt stays Gt, its Gte
// stays Gte), and a bound with a negative value, which only a pod's affinity can bring, is
// narrowed to the non-negative integers (Gt -1 is written Gte 0).
func (rs Requirements) NodeSelectorRequirements() []karpv1.NodeSelectorRequirementWithMinValues {
	out := make([]karpv1.NodeSelectorRequirementWithMinValues, 0, len(rs.reqs))
	for _, r := range rs.reqs {
		for i, s := range r.nonNegative().NodeSelectorRequirements() {
			req := karpv1.NodeSelectorRequirementWithMinValues{Key: s.Key, Operator: s.Operator, Values: s.Values}
			if i == 0 && s.Operator == corev1.NodeSelectorOpIn {
				req.MinValues = r.MinValues
			}
			out = append(out, req)
		}
	}
	return out
}

// Fingerprint is a compact string that two Requirements share exactly when they hold the same
// requirements (keys, values, bounds, absence and minValues): a map key, much cheaper to make
// than String, for caches keyed by requirements.
func (rs Requirements) Fingerprint() string {
	var b strings.Builder
	for _, r := range rs.reqs {
		b.WriteString(r.Key)
		b.WriteByte(0)
		flags := byte('0')
		if r.complement {
			flags |= 1
		}
		if r.absentOK {
			flags |= 2
		}
		b.WriteByte(flags)
		for _, v := range r.values {
			b.WriteString(v)
			b.WriteByte(1)
		}
		for _, bd := range []*bound{r.lower, r.upper} {
			if bd == nil {
				b.WriteByte('-')
				continue
			}
			b.WriteString(strconv.FormatInt(bd.n, 10))
			if bd.strict {
				b.WriteByte('s')
			}
			b.WriteByte(2)
		}
		if r.MinValues != nil {
			b.WriteString(strconv.Itoa(*r.MinValues))
		}
		b.WriteByte(3)
	}
	return b.String()
}

// String lists the requirements, one per key, in key order.
func (rs Requirements) String() string {
	parts := make([]string, len(rs.reqs))
	for i, r := range rs.reqs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}
