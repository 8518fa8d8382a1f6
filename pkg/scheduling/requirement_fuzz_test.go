package scheduling

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

var fuzzOperators = []corev1.NodeSelectorOperator{in, notIn, exists, doesNotExist, gt, lt, gte, lte}

// fuzzRequirement builds a requirement from fuzz input, or reports false for input the API
// server would refuse (which NewRequirement must reject without panicking).
func fuzzRequirement(op uint8, values string) (Requirement, bool) {
	var vs []string
	if values != "" {
		vs = strings.Split(values, ",")
	}
	r, err := NewRequirement("k", fuzzOperators[int(op)%len(fuzzOperators)], vs...)
	return r, err == nil
}

// FuzzRequirementAlgebra checks the laws of the algebra on random requirements: intersection
// is membership-exact and commutative, idempotent, and associative; a satisfiable requirement is
// compatible with itself; converting to node selector requirements and back keeps the set; what
// is written to a NodeClaim's spec passes the CRD's rule on bounds and allows no value the
// requirement does not, and loses none but negative integers.
func FuzzRequirementAlgebra(f *testing.F) {
	f.Add(uint8(0), "a,b", uint8(1), "b", uint8(4), "3")
	f.Add(uint8(4), "2", uint8(5), "6", uint8(1), "4")
	f.Add(uint8(2), "", uint8(3), "", uint8(0), "1,2,3")
	f.Add(uint8(1), "", uint8(5), "-4", uint8(4), "-9")
	f.Add(uint8(6), "4", uint8(7), "16", uint8(4), "3")
	f.Add(uint8(6), "5", uint8(4), "4", uint8(7), "5")
	f.Add(uint8(4), "-1", uint8(7), "-1", uint8(1), "0")
	f.Add(uint8(6), "-3", uint8(5), "-2", uint8(2), "")
	f.Fuzz(func(t *testing.T, opA uint8, valuesA string, opB uint8, valuesB string, opC uint8, valuesC string) {
		a, okA := fuzzRequirement(opA, valuesA)
		b, okB := fuzzRequirement(opB, valuesB)
		c, okC := fuzzRequirement(opC, valuesC)
		if !okA || !okB || !okC {
			return
		}
		probe := append(append(append([]string{}, samples...), strings.Split(valuesA+","+valuesB+","+valuesC, ",")...), "4", "6", "8", "9", "-2", "-3", "-5")
		ab, ba := a.Intersect(b), b.Intersect(a)
		for _, v := range probe {
			if ab.Has(v) != (a.Has(v) && b.Has(v)) {
				t.Fatalf("(%s ∩ %s).Has(%q) = %v", a, b, v, ab.Has(v))
			}
			if ab.Has(v) != ba.Has(v) {
				t.Fatalf("intersection does not commute on %q: %s vs %s", v, ab, ba)
			}
			if a.Intersect(a).Has(v) != a.Has(v) {
				t.Fatalf("intersection not idempotent on %q for %s", v, a)
			}
			if ab.Intersect(c).Has(v) != a.Intersect(b.Intersect(c)).Has(v) {
				t.Fatalf("intersection not associative on %q", v)
			}
		}
		if ab.AllowsAbsent() != (a.AllowsAbsent() && b.AllowsAbsent()) {
			t.Fatalf("absence of %s ∩ %s wrong", a, b)
		}
		if ab.Len() < 0 || (ab.IsFinite() && ab.Len() != len(ab.Values())) {
			t.Fatalf("Len %d inconsistent with Values %v", ab.Len(), ab.Values())
		}
		for _, v := range ab.Values() {
			if !ab.Has(v) {
				t.Fatalf("Values() of %s lists %q which it does not have", ab, v)
			}
		}
		if any := ab.Any(); !ab.IsEmpty() && !ab.Has(any) {
			t.Fatalf("Any() of %s = %q, not a member", ab, any)
		}
		if ab.Satisfiable() {
			self := NewRequirements(ab)
			if err := self.Compatible(self, nil); err != nil {
				t.Fatalf("%s not compatible with itself: %v", ab, err)
			}
		}
		var written []karpv1.NodeSelectorRequirementWithMinValues
		for _, s := range ab.NodeSelectorRequirements() {
			written = append(written, karpv1.NodeSelectorRequirementWithMinValues{Key: s.Key, Operator: s.Operator, Values: s.Values})
		}
		back, err := FromNodePoolRequirements(written...)
		if err != nil {
			t.Fatalf("%s does not convert back: %v", ab, err)
		}
		got, _ := back.Get("k")
		for _, v := range probe {
			if got.Has(v) != ab.Has(v) {
				t.Fatalf("%s converted to %s disagrees on %q", ab, got, v)
			}
		}
		if got.AllowsAbsent() != ab.AllowsAbsent() {
			t.Fatalf("%s converted to %s disagrees on absence", ab, got)
		}

		claim := NewRequirements(ab).NodeSelectorRequirements()
		for _, s := range claim {
			if isBound(s.Operator) && (len(s.Values) != 1 || !nonNegativeInteger.MatchString(s.Values[0])) {
				t.Fatalf("%s written for a NodeClaim as %s %v, which the CRD refuses", ab, s.Operator, s.Values)
			}
		}
		narrowed, err := FromNodePoolRequirements(claim...)
		if err != nil {
			t.Fatalf("%s written for a NodeClaim does not convert back: %v", ab, err)
		}
		got, _ = narrowed.Get("k")
		for _, v := range probe {
			if got.Has(v) && !ab.Has(v) {
				t.Fatalf("%s written for a NodeClaim as %s allows %q", ab, got, v)
			}
			if n, err := strconv.ParseInt(v, 10, 64); ab.Has(v) && !got.Has(v) && (err != nil || n >= 0) {
				t.Fatalf("%s written for a NodeClaim as %s loses %q", ab, got, v)
			}
		}
		if got.AllowsAbsent() != ab.AllowsAbsent() {
			t.Fatalf("%s written for a NodeClaim as %s disagrees on absence", ab, got)
		}
	})
}

// nonNegativeInteger is what the NodePool and NodeClaim CRDs accept as the value of a bound.
var nonNegativeInteger = regexp.MustCompile(`^[0-9]+$`)

func isBound(op corev1.NodeSelectorOperator) bool {
	return op == gt || op == lt || op == gte || op == lte
}
