package scheduling

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const (
	in           = corev1.NodeSelectorOpIn
	notIn        = corev1.NodeSelectorOpNotIn
	exists       = corev1.NodeSelectorOpExists
	doesNotExist = corev1.NodeSelectorOpDoesNotExist
	gt           = corev1.NodeSelectorOpGt
	lt           = corev1.NodeSelectorOpLt
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
	} {
		back, err := FromNodeSelectorRequirements(r.NodeSelectorRequirements()...)
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
