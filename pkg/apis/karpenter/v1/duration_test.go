package v1

import (
	"encoding/json"
	"testing"
	"time"
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
