package events

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
)

// Fields are an Event's columns in docs/events.md: its involved object's kind (the Go type's
// name) and name, its type, reason and message.
func Fields(e Event) [5]string {
	var kind, name string
	if !isNil(e.InvolvedObject) {
		t := fmt.Sprintf("%T", e.InvolvedObject)
		kind = t[strings.LastIndex(t, ".")+1:]
		if m, err := meta.Accessor(e.InvolvedObject); err == nil {
			name = m.GetName()
		}
	}
	return [5]string{kind, name, e.Type, e.Reason, e.Message}
}

// FieldsOf are the Fields of each of evts.
func FieldsOf(evts ...Event) [][5]string {
	out := make([][5]string, len(evts))
	for i, e := range evts {
		out[i] = Fields(e)
	}
	return out
}
