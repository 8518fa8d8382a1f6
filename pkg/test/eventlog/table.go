package eventlog

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openkarpenter/karpenter/pkg/events"
)

// Fields are an Event's columns in docs/events.md, as a Log records them: its involved
// object's kind and name (both empty when it has none), its type, reason and message.
func Fields(e events.Event) [5]string {
	var kind, name string
	if !isNil(e.InvolvedObject) {
		kind, name = kindOf(e.InvolvedObject), nameOf(e.InvolvedObject)
	}
	return [5]string{kind, name, e.Type, string(e.Reason), e.Message}
}

// Case is one row of a package's events table test, which holds the package's Events to
// docs/events.md.
type Case struct {
	// Name names the row in failures.
	Name string
	// Events are what one of the package's Event builders returned.
	Events []events.Event
	// Want are the Fields of each of Events, in order.
	Want [][5]string
	// Dedupe, when not nil, are the DedupeValues of each of Events, in order; each of Events
	// must then have DedupeTimeout (zero: the Recorder's default).
	Dedupe [][]string
	// DedupeTimeout is the DedupeTimeout each of Events has when Dedupe is set.
	DedupeTimeout time.Duration
}

// CheckTable fails t for each case whose Events do not have the case's Fields and, when it
// sets them, its dedupe values and timeout.
func CheckTable(t testing.TB, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		got := make([][5]string, len(tc.Events))
		for i, e := range tc.Events {
			got[i] = Fields(e)
		}
		if !reflect.DeepEqual(got, tc.Want) {
			t.Errorf("%s:\n got  %q\n want %q", tc.Name, got, tc.Want)
		}
		if tc.Dedupe == nil {
			continue
		}
		dedupe := make([][]string, len(tc.Events))
		for i, e := range tc.Events {
			dedupe[i] = e.DedupeValues
			if e.DedupeTimeout != tc.DedupeTimeout {
				t.Errorf("%s: %q deduped for %s, want %s (0: the default)", tc.Name, got[i], e.DedupeTimeout, tc.DedupeTimeout)
			}
		}
		if !reflect.DeepEqual(dedupe, tc.Dedupe) {
			t.Errorf("%s: dedupe values %q, want %q", tc.Name, dedupe, tc.Dedupe)
		}
	}
}

// isNil reports whether obj is nil or a typed nil pointer.
func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
