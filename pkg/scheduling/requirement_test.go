package scheduling

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

const (
	in           = corev1.NodeSelectorOpIn
	notIn        = corev1.NodeSelectorOpNotIn
	exists       = corev1.NodeSelectorOpExists
	doesNotExist = corev1.NodeSelectorOpDoesNotExist
	gt           = corev1.NodeSelectorOpGt
	lt           = corev1.NodeSelectorOpLt
	gte          = karpv1.NodeSelectorOpGte
	lte          = karpv1.NodeSelectorOpLte
)

func TestRequirementHas(t *testing.T) {
	cases := []struct {
		req         Requirement
		yes, no     []string
		absentOK    bool
		satisfiable bool
	}{
		{MustRequirement("k", in, "a", "b"), []string{"a", "b"}, []string{"c", ""}, false, true},
		{MustRequirement("k", notIn, "a"), []string{"b", "zzz"}, []string{"a"}, true, true},
		{MustRequirement("k", exists), []string{"a", "1"}, nil, false, true},
		{MustRequirement("k", doesNotExist), nil, []string{"a"}, true, true},
		{MustRequirement("k", gt, "4"), []string{"5", "100"}, []string{"4", "3", "x", "-1"}, false, true},
		{MustRequirement("k", lt, "4"), []string{"3", "-7"}, []string{"4", "5", "x"}, false, true},
		{MustRequirement("k", gte, "4"), []string{"4", "5", "100"}, []string{"3", "x", "-1", "4.5"}, false, true},
		{MustRequirement("k", lte, "4"), []string{"4", "3", "-7"}, []string{"5", "x"}, false, true},
		{MustRequirement("k", gte, "0"), []string{"0", "1"}, []string{"-1", "x"}, false, true},
		{MustRequirement("k", gt, "9223372036854775807"), nil, []string{"9223372036854775807", "x"}, false, false},
		{MustRequirement("k", lt, "-9223372036854775808"), nil, []string{"-9223372036854775808", "x"}, false, false},
		{MustRequirement("k", gte, "9223372036854775807"), []string{"9223372036854775807"}, []string{"9223372036854775806"}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.req.String(), func(t *testing.T) {
			for _, v := range tc.yes {
				if !tc.req.Has(v) {
					t.Errorf("%s should have %q", tc.req, v)
				}
			}
			for _, v := range tc.no {
				if tc.req.Has(v) {
					t.Errorf("%s should not have %q", tc.req, v)
				}
			}
			if tc.req.AllowsAbsent() != tc.absentOK {
				t.Errorf("AllowsAbsent = %v", tc.req.AllowsAbsent())
			}
			if tc.req.Satisfiable() != tc.satisfiable {
				t.Errorf("Satisfiable = %v", tc.req.Satisfiable())
			}
		})
	}
}

func TestRequirementIntersect(t *testing.T) {
	cases := []struct {
		a, b Requirement
		want string
	}{
		{MustRequirement("k", in, "a", "b", "c"), MustRequirement("k", in, "b", "c", "d"), "k In [b c]"},
		{MustRequirement("k", in, "a", "b"), MustRequirement("k", notIn, "a"), "k In [b]"},
		{MustRequirement("k", notIn, "a"), MustRequirement("k", notIn, "b"), "k NotIn [a b]"},
		{MustRequirement("k", notIn, "a"), MustRequirement("k", exists), "k NotIn [a], k Exists"},
		{MustRequirement("k", in, "a"), MustRequirement("k", in, "b"), "k (no value and no absence satisfies it)"},
		{MustRequirement("k", exists), MustRequirement("k", doesNotExist), "k (no value and no absence satisfies it)"},
		{MustRequirement("k", notIn, "a"), MustRequirement("k", doesNotExist), "k DoesNotExist"},
		{MustRequirement("k", gt, "2"), MustRequirement("k", lt, "6"), "k Gt 2, k Lt 6"},
		{MustRequirement("k", gt, "2"), MustRequirement("k", in, "1", "3", "x", "10"), "k In [10 3]"},
		{MustRequirement("k", gt, "2"), MustRequirement("k", gt, "5"), "k Gt 5"},
		{MustRequirement("k", gte, "4"), MustRequirement("k", lte, "16"), "k Gte 4, k Lte 16"},
		{MustRequirement("k", gte, "4"), MustRequirement("k", gte, "6"), "k Gte 6"},
		{MustRequirement("k", gte, "6"), MustRequirement("k", gt, "4"), "k Gte 6"},
		{MustRequirement("k", gte, "5"), MustRequirement("k", gt, "4"), "k Gt 4"},
		{MustRequirement("k", lte, "5"), MustRequirement("k", lt, "6"), "k Lt 6"},
		{MustRequirement("k", lte, "5"), MustRequirement("k", lt, "9"), "k Lte 5"},
		{MustRequirement("k", gte, "4"), MustRequirement("k", in, "3", "4", "16", "x"), "k In [16 4]"},
		{MustRequirement("k", lte, "4"), MustRequirement("k", notIn, "2"), "k Lte 4, k NotIn [2]"},
		{MustRequirement("k", gte, "5"), MustRequirement("k", lte, "4"), "k (no value and no absence satisfies it)"},
		{MustRequirement("k", gte, "5"), MustRequirement("k", lt, "5"), "k (no value and no absence satisfies it)"},
	}
	for _, tc := range cases {
		got := tc.a.Intersect(tc.b)
		if got.String() != tc.want {
			t.Errorf("%s ∩ %s = %s, want %s", tc.a, tc.b, got, tc.want)
		}
		if back := tc.b.Intersect(tc.a); back.String() != got.String() {
			t.Errorf("intersection does not commute: %s vs %s", got, back)
		}
	}
	empty := MustRequirement("k", gt, "5").Intersect(MustRequirement("k", lt, "6"))
	if !strings.Contains(empty.String(), "no value") {
		t.Errorf("an empty range prints as %s", empty)
	}
	if !empty.IsEmpty() || empty.Satisfiable() {
		t.Errorf("Gt 5 ∩ Lt 6 should be empty, got len %d", empty.Len())
	}
	if v := MustRequirement("k", gt, "5").Intersect(MustRequirement("k", lt, "8")).Values(); strings.Join(v, ",") != "6,7" {
		t.Errorf("Gt 5 ∩ Lt 8 values = %v", v)
	}
	if v := MustRequirement("k", gte, "5").Intersect(MustRequirement("k", lte, "5")).Values(); strings.Join(v, ",") != "5" {
		t.Errorf("Gte 5 ∩ Lte 5 values = %v", v)
	}
	if v := MustRequirement("k", gte, "4").Intersect(MustRequirement("k", lte, "8")).Intersect(MustRequirement("k", notIn, "6")).Values(); strings.Join(v, ",") != "4,5,7,8" {
		t.Errorf("Gte 4 ∩ Lte 8 ∩ NotIn [6] values = %v", v)
	}
}

func TestNewRequirementErrors(t *testing.T) {
	cases := []struct {
		op     corev1.NodeSelectorOperator
		values []string
		err    string
	}{
		{gte, nil, "requirement k Gte: needs exactly one integer value, got 0 values"},
		{lte, []string{"1", "2"}, "requirement k Lte: needs exactly one integer value, got 2 values"},
		{gte, []string{"a"}, `requirement k Gte: value "a" is not an integer`},
		{lte, []string{"99999999999999999999"}, `requirement k Lte: value "99999999999999999999" is not an integer`},
		{"Like", []string{"a"}, `requirement k: unknown operator "Like", use In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte`},
	}
	for _, tc := range cases {
		if _, err := NewRequirement("k", tc.op, tc.values...); err == nil || err.Error() != tc.err {
			t.Errorf("%s %v: got %v, want %q", tc.op, tc.values, err, tc.err)
		}
	}
}

// TestNodeAffinityRefusesGteLte: a pod's node affinity takes Kubernetes' operators only, as the
// API server checks; the error gives the one to use.
func TestNodeAffinityRefusesGteLte(t *testing.T) {
	cases := []struct {
		req corev1.NodeSelectorRequirement
		err string
	}{
		{corev1.NodeSelectorRequirement{Key: "k", Operator: gte, Values: []string{"4"}}, "requirement k Gte 4: Gte and Lte are for NodePools and NodeClaims only, node selectors take In, NotIn, Exists, DoesNotExist, Gt and Lt: use Gt 3"},
		{corev1.NodeSelectorRequirement{Key: "k", Operator: lte, Values: []string{"16"}}, "requirement k Lte 16: Gte and Lte are for NodePools and NodeClaims only, node selectors take In, NotIn, Exists, DoesNotExist, Gt and Lt: use Lt 17"},
		{corev1.NodeSelectorRequirement{Key: "k", Operator: lte, Values: []string{"x"}}, ": use Gt or Lt"},
	}
	for _, tc := range cases {
		_, err := FromNodeSelectorRequirements(corev1.NodeSelectorRequirement{Key: "a", Operator: in, Values: []string{"b"}}, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s %s %v: got %v, want %q", tc.req.Key, tc.req.Operator, tc.req.Values, err, tc.err)
		}
	}
	if _, err := FromNodePoolRequirements(karpv1.NodeSelectorRequirementWithMinValues{Key: "k", Operator: gte, Values: []string{"4"}}); err != nil {
		t.Errorf("a NodePool's Gte: %v", err)
	}
}

// TestNodeClaimBounds: the bounds written to a NodeClaim's spec keep the operator they were
// given and take only the non-negative values the CRD accepts; a negative bound, which only a
// pod's affinity can bring, is narrowed to the non-negative integers.
func TestNodeClaimBounds(t *testing.T) {
	cases := []struct {
		name string
		req  Requirement
		want string
	}{
		{"Gt kept", MustRequirement("k", gt, "4"), "k Gt [4]"},
		{"Gte kept", MustRequirement("k", gte, "4"), "k Gte [4]"},
		{"Lt kept", MustRequirement("k", lt, "16"), "k Lt [16]"},
		{"Lte kept", MustRequirement("k", lte, "16"), "k Lte [16]"},
		{"range", MustRequirement("k", gte, "4").Intersect(MustRequirement("k", lte, "16")), "k Gte [4]; k Lte [16]"},
		{"range with exclusions", MustRequirement("k", gt, "3").Intersect(MustRequirement("k", lte, "16")).Intersect(MustRequirement("k", notIn, "8")), "k Gt [3]; k Lte [16]; k NotIn [8]"},
		{"Gte 0", MustRequirement("k", gte, "0"), "k Gte [0]"},
		{"Gt -1 is Gte 0", MustRequirement("k", gt, "-1"), "k Gte [0]"},
		{"Gt -5 narrowed to Gte 0", MustRequirement("k", gt, "-5"), "k Gte [0]"},
		{"Gte -4 narrowed to Gte 0", MustRequirement("k", gte, "-4"), "k Gte [0]"},
		{"Lt 0 kept", MustRequirement("k", lt, "0"), "k Lt [0]"},
		{"Lte -1 is Lt 0", MustRequirement("k", lte, "-1"), "k Lt [0]"},
		{"Lt -1 allows no non-negative value", MustRequirement("k", lt, "-1"), "k Exists []; k DoesNotExist []"},
		{"Lte -2 allows no non-negative value", MustRequirement("k", lte, "-2"), "k Exists []; k DoesNotExist []"},
		{"negative range narrowed", MustRequirement("k", gt, "-5").Intersect(MustRequirement("k", lt, "3")), "k Gte [0]; k Lt [3]"},
		{"Gt max", MustRequirement("k", gt, "9223372036854775807"), "k Exists []; k DoesNotExist []"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var parts []string
			for _, s := range NewRequirements(tc.req).NodeSelectorRequirements() {
				parts = append(parts, fmt.Sprintf("%s %s %v", s.Key, s.Operator, s.Values))
			}
			if got := strings.Join(parts, "; "); got != tc.want {
				t.Errorf("written as %s, want %s", got, tc.want)
			}
		})
	}
	// A pod's requirement prints as it was written, not narrowed.
	if got := MustRequirement("k", gt, "-5").String(); got != "k Gt -5" {
		t.Errorf("String() = %s", got)
	}
}

func TestMinValuesCarried(t *testing.T) {
	two, three := 2, 3
	a := MustRequirement("k", in, "a", "b", "c")
	a.MinValues = &two
	b := MustRequirement("k", in, "a", "b", "c", "d")
	b.MinValues = &three
	got := a.Intersect(b)
	if got.MinValues == nil || *got.MinValues != 3 {
		t.Errorf("minValues = %v, want the larger (3)", got.MinValues)
	}
	if !strings.Contains(got.String(), "(minValues 3)") {
		t.Errorf("String() = %s", got)
	}
}

func TestRequirementsCompatible(t *testing.T) {
	nodePool := NewRequirements(
		MustRequirement(corev1.LabelArchStable, in, "arm64"),
		MustRequirement("team", in, "a"),
	)
	cases := []struct {
		name string
		pod  Requirements
		err  string
	}{
		{"same arch", NewRequirements(MustRequirement(corev1.LabelArchStable, in, "arm64", "amd64")), ""},
		{"other arch", NewRequirements(MustRequirement(corev1.LabelArchStable, in, "amd64")), "requirement kubernetes.io/arch In [amd64] not compatible with kubernetes.io/arch In [arm64]"},
		{"well-known key only the pod sets", NewRequirements(MustRequirement(corev1.LabelTopologyZone, in, "z1")), ""},
		{"custom key only the pod sets", NewRequirements(MustRequirement("gpu", in, "yes")), "requirement gpu In [yes] cannot be met: the label is not defined"},
		{"custom key NotIn only on the pod", NewRequirements(MustRequirement("gpu", notIn, "yes")), ""},
		{"custom key DoesNotExist on a defined label", NewRequirements(MustRequirement("team", doesNotExist)), "requirement team DoesNotExist not compatible with team In [a]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.pod.Compatible(nodePool, IsWellKnownLabel)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
}

func TestRequirementsMatchesAndLabels(t *testing.T) {
	rs := NewRequirements(
		MustRequirement("a", in, "1"),
		MustRequirement("b", notIn, "x"),
		MustRequirement("c", doesNotExist),
		MustRequirement("a", in, "1", "2"),
	)
	if err := rs.Matches(map[string]string{"a": "1"}); err != nil {
		t.Error(err)
	}
	if err := rs.Matches(map[string]string{"a": "1", "c": "z"}); err == nil {
		t.Error("label c should violate DoesNotExist")
	}
	if err := rs.Matches(map[string]string{"b": "y"}); err == nil || !strings.Contains(err.Error(), "label a is missing") {
		t.Errorf("got %v", err)
	}
	if got := rs.Labels(); len(got) != 1 || got["a"] != "1" {
		t.Errorf("Labels = %v", got)
	}
	if got := rs.Keys(); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("Keys = %v", got)
	}
}

func TestNodeSelectorRequirementsRoundTrip(t *testing.T) {
	for _, r := range []Requirement{
		MustRequirement("k", in, "a", "b"),
		MustRequirement("k", notIn, "a"),
		MustRequirement("k", exists),
		MustRequirement("k", doesNotExist),
		MustRequirement("k", gt, "3"),
		MustRequirement("k", notIn, "a").Intersect(MustRequirement("k", exists)),
		MustRequirement("k", gt, "3").Intersect(MustRequirement("k", lt, "9")).Intersect(MustRequirement("k", notIn, "5")),
		MustRequirement("k", gte, "4"),
		MustRequirement("k", lte, "-4"),
		MustRequirement("k", gte, "3").Intersect(MustRequirement("k", lt, "9")).Intersect(MustRequirement("k", notIn, "5")),
		MustRequirement("k", gt, "3").Intersect(MustRequirement("k", lte, "3")),
	} {
		var written []karpv1.NodeSelectorRequirementWithMinValues
		for _, s := range r.NodeSelectorRequirements() {
			written = append(written, karpv1.NodeSelectorRequirementWithMinValues{Key: s.Key, Operator: s.Operator, Values: s.Values})
		}
		back, err := FromNodePoolRequirements(written...)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := back.Get("k")
		assertSameSet(t, r, got)
	}
}

// samples are values that exercise every kind of set.
var samples = []string{"", "a", "b", "c", "x", "0", "1", "2", "3", "5", "7", "10", "-1", "100"}

func assertSameSet(t *testing.T, want, got Requirement) {
	t.Helper()
	for _, v := range samples {
		if want.Has(v) != got.Has(v) {
			t.Errorf("%s and %s disagree on %q", want, got, v)
		}
	}
	if want.AllowsAbsent() != got.AllowsAbsent() {
		t.Errorf("%s and %s disagree on absence", want, got)
	}
}

// TestFingerprint: requirements share a fingerprint exactly when they print the same, whatever
// order they were combined in.
func TestFingerprint(t *testing.T) {
	r := func(key string, op corev1.NodeSelectorOperator, values ...string) Requirement {
		t.Helper()
		req, err := NewRequirement(key, op, values...)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	two := 2
	withMin := r("type", in, "a", "b")
	withMin.MinValues = &two
	sets := []Requirements{
		{},
		NewRequirements(r("zone", in, "a")),
		NewRequirements(r("zone", notIn, "a")),
		NewRequirements(r("zone", in, "a", "b")),
		NewRequirements(r("zone", exists)),
		NewRequirements(r("zone", doesNotExist)),
		NewRequirements(r("cpu", gt, "4")),
		NewRequirements(r("cpu", gte, "5")),
		NewRequirements(r("cpu", gt, "4"), r("cpu", lt, "9")),
		NewRequirements(r("zone", in, "a"), r("arch", in, "arm64")),
		NewRequirements(withMin),
		NewRequirements(r("type", in, "a", "b")),
	}
	for i, a := range sets {
		for j, b := range sets {
			if same := a.Fingerprint() == b.Fingerprint(); same != (i == j) {
				t.Errorf("%q and %q: fingerprints equal %v", a, b, same)
			}
		}
	}
	x := NewRequirements(r("zone", in, "a"), r("arch", in, "arm64"), r("cpu", gt, "2"))
	y := NewRequirements(r("cpu", gt, "2"), r("arch", in, "arm64"), r("zone", in, "a"))
	if x.Fingerprint() != y.Fingerprint() {
		t.Errorf("the same requirements in another order: %q and %q", x.Fingerprint(), y.Fingerprint())
	}
}
