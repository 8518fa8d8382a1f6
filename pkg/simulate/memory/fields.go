package memory

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldFunc reads one field of an object for a field selector.
type fieldFunc func(client.Object) string

// builtinFields are the field selectors kube-apiserver supports for built-in kinds beyond
// metadata.name and metadata.namespace, plus Node spec.providerID, which the API server does
// not support but the simulator's controllers look Nodes up by.
var builtinFields = map[schema.GroupKind]map[string]fieldFunc{
	{Kind: "Pod"}: {
		"spec.nodeName":           pod(func(p *corev1.Pod) string { return p.Spec.NodeName }),
		"spec.restartPolicy":      pod(func(p *corev1.Pod) string { return string(p.Spec.RestartPolicy) }),
		"spec.schedulerName":      pod(func(p *corev1.Pod) string { return p.Spec.SchedulerName }),
		"spec.serviceAccountName": pod(func(p *corev1.Pod) string { return p.Spec.ServiceAccountName }),
		"spec.hostNetwork":        pod(func(p *corev1.Pod) string { return strconv.FormatBool(p.Spec.HostNetwork) }),
		"status.phase":            pod(func(p *corev1.Pod) string { return string(p.Status.Phase) }),
		"status.podIP":            pod(func(p *corev1.Pod) string { return p.Status.PodIP }),
		"status.nominatedNodeName": pod(func(p *corev1.Pod) string {
			return p.Status.NominatedNodeName
		}),
	},
	{Kind: "Node"}: {
		"spec.unschedulable": node(func(n *corev1.Node) string { return strconv.FormatBool(n.Spec.Unschedulable) }),
		"spec.providerID":    node(func(n *corev1.Node) string { return n.Spec.ProviderID }),
	},
	{Kind: "Event"}: {
		"involvedObject.kind":            event(func(e *corev1.Event) string { return e.InvolvedObject.Kind }),
		"involvedObject.namespace":       event(func(e *corev1.Event) string { return e.InvolvedObject.Namespace }),
		"involvedObject.name":            event(func(e *corev1.Event) string { return e.InvolvedObject.Name }),
		"involvedObject.uid":             event(func(e *corev1.Event) string { return string(e.InvolvedObject.UID) }),
		"involvedObject.apiVersion":      event(func(e *corev1.Event) string { return e.InvolvedObject.APIVersion }),
		"involvedObject.resourceVersion": event(func(e *corev1.Event) string { return e.InvolvedObject.ResourceVersion }),
		"involvedObject.fieldPath":       event(func(e *corev1.Event) string { return e.InvolvedObject.FieldPath }),
		"reason":                         event(func(e *corev1.Event) string { return e.Reason }),
		"reportingComponent":             event(func(e *corev1.Event) string { return e.ReportingController }),
		"source":                         event(func(e *corev1.Event) string { return e.Source.Component }),
		"type":                           event(func(e *corev1.Event) string { return e.Type }),
	},
	{Kind: "Namespace"}: {
		"status.phase": func(o client.Object) string {
			if n, ok := o.(*corev1.Namespace); ok {
				return string(n.Status.Phase)
			}
			return ""
		},
	},
	{Kind: "Secret"}: {
		"type": func(o client.Object) string {
			if s, ok := o.(*corev1.Secret); ok {
				return string(s.Type)
			}
			return ""
		},
	},
}

// builtinIndexes are the built-in fields the store keeps an index of, because controllers
// look them up constantly: the pods of a node and the Node of a provider ID.
var builtinIndexes = map[schema.GroupKind]map[string]client.IndexerFunc{
	{Kind: "Pod"}:  {"spec.nodeName": single(builtinFields[schema.GroupKind{Kind: "Pod"}]["spec.nodeName"])},
	{Kind: "Node"}: {"spec.providerID": single(builtinFields[schema.GroupKind{Kind: "Node"}]["spec.providerID"])},
}

func single(f fieldFunc) client.IndexerFunc {
	return func(o client.Object) []string { return []string{f(o)} }
}

func pod(f func(*corev1.Pod) string) fieldFunc {
	return func(o client.Object) string {
		if p, ok := o.(*corev1.Pod); ok {
			return f(p)
		}
		return ""
	}
}

func node(f func(*corev1.Node) string) fieldFunc {
	return func(o client.Object) string {
		if n, ok := o.(*corev1.Node); ok {
			return f(n)
		}
		return ""
	}
}

func event(f func(*corev1.Event) string) fieldFunc {
	return func(o client.Object) string {
		if e, ok := o.(*corev1.Event); ok {
			return f(e)
		}
		return ""
	}
}

// fieldMatcher is a parsed field selector bound to one kind.
type fieldMatcher struct {
	ks   *kindStore
	reqs []fieldRequirement
}

// fieldRequirement is one requirement of a field selector, with how its field is read.
type fieldRequirement struct {
	fields.Requirement
	// index is the field's index, nil for a field read from the object.
	index *fieldIndex
	// answered marks the requirement the candidates came from: every candidate meets it.
	answered bool
}

// newFieldMatcher checks that every field of sel is supported for the kind: an index
// registered with IndexField, metadata.name, metadata.namespace or a built-in field selector.
func newFieldMatcher(ks *kindStore, sel fields.Selector) (*fieldMatcher, error) {
	if sel == nil || sel.Empty() {
		return nil, nil
	}
	m := &fieldMatcher{ks: ks}
	for _, r := range sel.Requirements() {
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals, selection.NotEquals:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unsupported operator %q in field selector %q", r.Operator, sel))
		}
		if !m.supports(r.Field) {
			return nil, apierrors.NewBadRequest("field label not supported: " + r.Field)
		}
		m.reqs = append(m.reqs, fieldRequirement{Requirement: r, index: ks.indexes[r.Field]})
	}
	return m, nil
}

func (m *fieldMatcher) supports(field string) bool {
	if m.ks.indexes[field] != nil || field == "metadata.name" || field == "metadata.namespace" {
		return true
	}
	_, ok := builtinFields[m.ks.info.gvk.GroupKind()][field]
	return ok
}

// has reports whether the object in s holds value in the requirement's field.
func (m *fieldMatcher) has(s *slot, r *fieldRequirement) bool {
	if r.index != nil {
		return slices.Contains(s.indexed[r.Field], r.Value)
	}
	switch r.Field {
	case "metadata.name":
		return s.key.Name == r.Value
	case "metadata.namespace":
		return s.key.Namespace == r.Value
	}
	return builtinFields[m.ks.info.gvk.GroupKind()][r.Field](s.obj) == r.Value
}

// matches reports whether the object in s satisfies every requirement not answered by the
// candidates. An indexed field with several values equals a value when any of them does.
func (m *fieldMatcher) matches(s *slot) bool {
	if m == nil {
		return true
	}
	for i := range m.reqs {
		r := &m.reqs[i]
		if r.answered {
			continue
		}
		if m.has(s, r) == (r.Operator == selection.NotEquals) {
			return false
		}
	}
	return true
}

// needsMatching reports whether a candidate may still fail a requirement.
func (m *fieldMatcher) needsMatching() bool {
	if m == nil {
		return false
	}
	for _, r := range m.reqs {
		if !r.answered {
			return true
		}
	}
	return false
}

// candidates returns, when an equality requirement can be answered by an index or by the
// object's name, the slots that may match, in List's order, and ok=false otherwise. The
// requirement answered is not checked again by matches.
func (m *fieldMatcher) candidates(namespace string) (slots []*slot, ok bool) {
	if m == nil {
		return nil, false
	}
	for i := range m.reqs {
		r := &m.reqs[i]
		if r.Operator == selection.NotEquals || r.index == nil {
			continue
		}
		r.answered = true
		if set := r.index.values[r.Value]; set != nil {
			return slotsOf(set), true
		}
		return nil, true
	}
	for i := range m.reqs {
		r := &m.reqs[i]
		if r.Operator != selection.NotEquals && r.Field == "metadata.name" {
			if !m.ks.info.namespaced {
				namespace = ""
			}
			if !m.ks.info.namespaced || namespace != "" {
				if s := m.ks.get(client.ObjectKey{Namespace: namespace, Name: r.Value}); s != nil {
					return []*slot{s}, true
				}
				return nil, true
			}
		}
	}
	return nil, false
}
