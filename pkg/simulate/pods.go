package simulate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/validation"
)

// Pods as the API server stores them: before any scheduler sees a workload's pods, their
// template is made what the API server stores for each pod created from it (with the
// server's own code, validation.PodCreation): the v1 defaults (limits-only containers request
// their limits, a hostNetwork pod's container ports are host ports, …), the RuntimeClass
// admission plugin (a RuntimeClass's overhead and scheduling, from the RuntimeClasses among the
// manifests), and the pod strategy's PrepareForCreate (matchLabelKeys and mismatchLabelKeys
// merged into pod (anti-)affinity selectors). That is done once per template, not per pod:
// nothing of it depends on what differs between the pods of a template (their names), and it
// costs about 50 µs. Pods taken in from a cluster (--from-cluster) were stored by a real API
// server already and are not made again.

// isRuntimeClass reports whether a document is a RuntimeClass.
func isRuntimeClass(apiVersion, kind string) bool {
	return apiVersion == "node.k8s.io/v1" && kind == "RuntimeClass"
}

// decodeRuntimeClasses decodes RuntimeClass documents strictly and checks them as the API
// server would, each name once; errors name the document and field.
func decodeRuntimeClasses(docs []document) ([]client.Object, []error) {
	return decodeBuiltins(docs, nodev1.SchemeGroupVersion.WithKind("RuntimeClass"), func() client.Object { return &nodev1.RuntimeClass{} })
}

// decodeBuiltins decodes documents of one built-in kind (gvk, made by newObject) strictly and
// checks them as the API server would, each name once; errors name the document and field.
func decodeBuiltins(docs []document, gvk schema.GroupVersionKind, newObject func() client.Object) ([]client.Object, []error) {
	var out []client.Object
	var errs []error
	seen := map[string]document{}
	for _, doc := range docs {
		obj := newObject()
		if decodeErrs := doc.decode(obj); len(decodeErrs) > 0 {
			errs = append(errs, decodeErrs...)
			continue
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		if problems := builtinProblems(obj, gvk); len(problems) > 0 {
			errs = append(errs, doc.src.FieldErrors(problems)...)
			continue
		}
		if earlier, dup := seen[obj.GetName()]; dup {
			errs = append(errs, duplicate(doc, earlier))
			continue
		}
		seen[obj.GetName()] = doc
		out = append(out, obj)
	}
	return out, errs
}

// podCreation is the API server's creation of pods in a cluster holding the RuntimeClasses
// among objs.
func podCreation(objs []client.Object) (*validation.PodCreation, error) {
	var classes []*nodev1.RuntimeClass
	for _, o := range objs {
		if rc, ok := o.(*nodev1.RuntimeClass); ok {
			classes = append(classes, rc)
		}
	}
	return validation.NewPodCreation(classes)
}

// storedTemplate returns the template of owner's pods as the API server stores each of them:
// its metadata as written (with the annotations the server sets) and the spec of a pod made of
// it, labelled as createPod labels it, once created. A Job's pods without a restartPolicy
// never restart, as the simulator runs them; a StatefulSet's (stateful set) have the volumes of
// their claims, as its controller gives them (createPod names each pod's own). A refusal is
// returned as field errors with paths relative to the template (spec.runtimeClassName, …).
func storedTemplate(c *validation.PodCreation, owner string, tmpl *corev1.PodTemplateSpec, job bool, stateful *statefulSet) (*corev1.PodTemplateSpec, field.ErrorList) {
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Name, pod.Namespace = owner+"-1", defaultNamespace // the namespace changes nothing the server stores
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[ownerLabel] = owner
	if job && pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	if stateful != nil {
		stateful.podClaims(pod, owner, 0)
	}
	stored, errs := c.Stored(pod)
	for _, fe := range errs {
		if fe.Field == "spec.runtimeClassName" {
			fe.Detail += fmt.Sprintf("; add RuntimeClass %q (node.k8s.io/v1) to the manifests", *pod.Spec.RuntimeClassName)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	out := &corev1.PodTemplateSpec{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: stored.Spec}
	out.Annotations = stored.Annotations
	return out, nil
}

// underTemplate is errs, relative to a pod template, relative to the object holding it at
// spec.template (a Deployment, a Job) instead; for a Pod (template false) they stay.
func underTemplate(errs field.ErrorList, template bool) field.ErrorList {
	if !template {
		return errs
	}
	out := make(field.ErrorList, 0, len(errs))
	for _, fe := range errs {
		moved := *fe
		moved.Field = "spec.template." + fe.Field
		out = append(out, &moved)
	}
	return out
}
