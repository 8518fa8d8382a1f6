// Package eventlog is a record.EventRecorder for tests that keeps every Event with the object
// it is about, so that tests can check an Event's object as well as its type, reason and
// message (client-go's FakeRecorder keeps neither the object's kind nor its name), and the
// check of each package's events table test (CheckTable), which holds the Events the package
// builds to docs/events.md.
package eventlog

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openkarpenter/karpenter/pkg/events"
)

// Event is one recorded Event.
type Event struct {
	// Kind and Name are the involved object's; Kind is its Go type's name (Pod, Node,
	// NodeClaim…) when the object carries no TypeMeta.
	Kind, Name string
	// Type, Reason and Message are the Event's.
	Type, Reason, Message string
}

// String is "Kind/Name Type Reason Message".
func (e Event) String() string {
	return fmt.Sprintf("%s/%s %s %s %s", e.Kind, e.Name, e.Type, e.Reason, e.Message)
}

// Log records Events; it is safe for concurrent use. The zero value is ready.
type Log struct {
	mu     sync.Mutex
	events []Event
}

// Event records an event about object.
func (l *Log) Event(object runtime.Object, eventType, reason, message string) {
	e := Event{Kind: kindOf(object), Name: nameOf(object), Type: eventType, Reason: reason, Message: message}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// Eventf records an event about object with a formatted message.
func (l *Log) Eventf(object runtime.Object, eventType, reason, messageFmt string, args ...any) {
	l.Event(object, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf records an event about object with a formatted message; the annotations are
// not kept.
func (l *Log) AnnotatedEventf(object runtime.Object, _ map[string]string, eventType, reason, messageFmt string, args ...any) {
	l.Eventf(object, eventType, reason, messageFmt, args...)
}

// Events returns the Events recorded so far, oldest first.
func (l *Log) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// Find returns the Events with the reason whose String contains every one of parts.
func (l *Log) Find(reason events.Reason, parts ...string) []Event {
	var out []Event
	for _, e := range l.Events() {
		if e.Reason != string(reason) {
			continue
		}
		s, all := e.String(), true
		for _, p := range parts {
			all = all && strings.Contains(s, p)
		}
		if all {
			out = append(out, e)
		}
	}
	return out
}

// kindOf is the object's kind: its TypeMeta's, else its Go type's name.
func kindOf(object runtime.Object) string {
	if k := object.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := fmt.Sprintf("%T", object)
	return t[strings.LastIndex(t, ".")+1:]
}

// nameOf is the object's name, "" when it has no ObjectMeta.
func nameOf(object runtime.Object) string {
	if m, err := meta.Accessor(object); err == nil {
		return m.GetName()
	}
	return ""
}
