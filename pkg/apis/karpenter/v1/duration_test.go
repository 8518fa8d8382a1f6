package v1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestNillableDurationRoundTrip(t *testing.T) {
	for _, text := range []string{`"1h"`, `"720h"`, `"30s"`, `"1h30m"`, `"Never"`, `"0s"`} {
		var d NillableDuration
		if err := json.Unmarshal([]byte(text), &d); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != text {
			t.Errorf("%s came back as %s", text, out)
		}
	}
}

func TestNillableDurationChangedAfterRead(t *testing.T) {
	var d NillableDuration
	if err := json.Unmarshal([]byte(`"1h"`), &d); err != nil {
		t.Fatal(err)
	}
	two := 2 * time.Hour
	d.Duration = &two
	if out, _ := json.Marshal(d); string(out) != `"2h0m0s"` {
		t.Errorf("changed duration marshalled as %s, want the new value", out)
	}
	d.Duration = nil
	if out, _ := json.Marshal(d); string(out) != `"Never"` {
		t.Errorf("cleared duration marshalled as %s, want Never", out)
	}
}

func TestNillableDurationErrors(t *testing.T) {
	for _, text := range []string{`"forever"`, `3600`, `"10d"`} {
		var d NillableDuration
		if err := json.Unmarshal([]byte(text), &d); err == nil {
			t.Errorf("%s accepted as %v", text, d)
		}
	}
}

func TestNillableDurationZeroIsOmitted(t *testing.T) {
	out, err := json.Marshal(Disruption{ConsolidationPolicy: ConsolidationPolicyWhenEmpty})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"consolidationPolicy":"WhenEmpty"}` {
		t.Errorf("unset consolidateAfter written as %s; it must be omitted so the default applies", out)
	}
	out, _ = json.Marshal(Disruption{ConsolidateAfter: NeverDuration()})
	if string(out) != `{"consolidateAfter":"Never"}` {
		t.Errorf("NeverDuration written as %s", out)
	}
}

// TestDurationErrorsNameTheFieldAndTheFix: a duration that does not parse, a NillableDuration's
// or a metav1.Duration's, is reported with its field's path and what to write instead.
func TestDurationErrorsNameTheFieldAndTheFix(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"spec: {disruption: {consolidateAfter: 1 minute}}",
			`spec.disruption.consolidateAfter: "1 minute" is not a duration: write a Go duration such as 30s, 5m or 720h (units h, m, s, ms; no days), or Never`},
		{"spec: {template: {spec: {expireAfter: 3 days}}}",
			`spec.template.spec.expireAfter: "3 days" is not a duration: write a Go duration such as 30s, 5m or 720h (units h, m, s, ms; no days), or Never`},
		{"spec: {template: {spec: {terminationGracePeriod: 1 minute}}}",
			`spec.template.spec.terminationGracePeriod: "1 minute" is not a duration: write a Go duration such as 30s, 5m or 720h (units h, m, s, ms; no days)`},
		{"spec: {disruption: {budgets: [{nodes: '1', schedule: '@daily', duration: 10 days}]}}",
			`spec.disruption.budgets[0].duration: "10 days" is not a duration`},
		// The same text at two paths: the field cannot be told, the fix still is.
		{"metadata: {labels: {a: 3 days}}\nspec: {template: {spec: {expireAfter: 3 days}}}",
			`"3 days" is not a duration: write a Go duration`},
	} {
		var raw map[string]any
		if err := yaml.Unmarshal([]byte(tc.doc), &raw); err != nil {
			t.Fatal(err)
		}
		var pool NodePool
		err := yaml.UnmarshalStrict([]byte(tc.doc), &pool)
		if err == nil {
			t.Fatalf("%s accepted", tc.doc)
		}
		if got := NameDurationField(err, raw).Error(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.doc, got, tc.want)
		}
	}
}
