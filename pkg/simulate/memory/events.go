package memory

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var eventGVK = corev1.SchemeGroupVersion.WithKind("Event")

// EventRecorderFor returns a record.EventRecorder that writes core/v1 Events into the store
// synchronously, as component: in the involved object's namespace ("default" for cluster-scoped
// objects), named like client-go's recorder names them (<object>.<hex of the clock's
// nanoseconds>), timestamped from the clock. An event identical to an earlier one of the same
// component (same object, type, reason and message) increments that Event's count and
// lastTimestamp instead, as client-go's event correlator does. Events the store cannot take (an
// object the scheme does not know, a namespace being deleted) are dropped, as a broadcaster
// drops them.
func (c *Client) EventRecorderFor(component string) record.EventRecorder {
	return &recorder{c: c, component: component}
}

// recorder writes Events into a Client.
type recorder struct {
	c         *Client
	component string
}

// eventKey identifies identical events, to count them on one Event.
type eventKey struct {
	component                            string
	apiVersion, kind, namespace, name    string
	uid                                  types.UID
	eventType, reason, message, fieldRef string
}

// Event records an event about object.
func (r *recorder) Event(object runtime.Object, eventType, reason, message string) {
	r.record(object, nil, eventType, reason, message)
}

// Eventf records an event about object with a formatted message.
func (r *recorder) Eventf(object runtime.Object, eventType, reason, messageFmt string, args ...any) {
	r.record(object, nil, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf records an event about object, with annotations, with a formatted message.
func (r *recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventType, reason, messageFmt string, args ...any) {
	r.record(object, annotations, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

func (r *recorder) record(object runtime.Object, annotations map[string]string, eventType, reason, message string) {
	ref, err := reference.GetReference(r.c.scheme, object)
	if err != nil {
		return
	}
	info := r.c.byGVK[eventGVK]
	if info == nil {
		return
	}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	key := eventKey{
		component: r.component, apiVersion: ref.APIVersion, kind: ref.Kind, namespace: ref.Namespace, name: ref.Name,
		uid: ref.UID, eventType: eventType, reason: reason, message: message, fieldRef: ref.FieldPath,
	}
	c := r.c
	c.mu.Lock()
	defer c.unlockAndNotify()
	now := c.now()
	ks := c.storeLocked(info)
	if k, ok := c.events[key]; ok {
		if s := ks.get(k); s != nil {
			next := shallowClone(s.obj).(*corev1.Event)
			next.Count++
			next.LastTimestamp = now
			c.commitLocked(ks, s, next)
			return
		}
	}
	nanos := c.clock.Now().UnixNano()
	name := fmt.Sprintf("%v.%x", ref.Name, nanos)
	for ks.get(client.ObjectKey{Namespace: namespace, Name: name}) != nil {
		nanos++
		name = fmt.Sprintf("%v.%x", ref.Name, nanos)
	}
	event := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: maps.Clone(annotations)},
		InvolvedObject:      *ref,
		Reason:              reason,
		Message:             message,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                eventType,
		Source:              corev1.EventSource{Component: r.component},
		ReportingController: r.component,
	}
	if stored, err := c.createLocked(info, event, false); err == nil {
		c.events[key] = client.ObjectKeyFromObject(stored)
	}
}
