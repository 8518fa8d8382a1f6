package simulate

import (
	"cmp"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
)

// CapacityBuffers in a workload: CapacityBuffer (autoscaling.x-k8s.io/v1beta1) and PodTemplate
// documents among the manifests, each in the namespace it names (default "default"), with the
// CapacityBuffer feature gate on.

// isPodTemplate reports whether a document is a PodTemplate.
func isPodTemplate(apiVersion, kind string) bool { return apiVersion == "v1" && kind == "PodTemplate" }

// decodePodTemplates decodes PodTemplate documents strictly and checks them as the API server
// would; errors name the document and field.
func decodePodTemplates(docs []document) ([]client.Object, []error) {
	var out []client.Object
	var errs []error
	seen := map[string]document{}
	for _, doc := range docs {
		pt := &corev1.PodTemplate{}
		if decodeErrs := doc.decode(pt); len(decodeErrs) > 0 {
			errs = append(errs, decodeErrs...)
			continue
		}
		pt.Namespace = cmp.Or(pt.Namespace, defaultNamespace)
		gvk := corev1.SchemeGroupVersion.WithKind("PodTemplate")
		pt.SetGroupVersionKind(gvk)
		if pt.Name == "" {
			errs = append(errs, doc.errorf("metadata.name", "Required value"))
			continue
		}
		if problems := builtinProblems(pt, gvk); len(problems) > 0 {
			errs = append(errs, doc.src.FieldErrors(problems)...)
			continue
		}
		if earlier, dup := seen[pt.Namespace+"/"+pt.Name]; dup {
			errs = append(errs, duplicate(doc, earlier))
			continue
		}
		seen[pt.Namespace+"/"+pt.Name] = doc
		out = append(out, pt)
	}
	return out, errs
}

// bufferProblems says what a simulation cannot run of the workload's CapacityBuffers: any
// buffer without the CapacityBuffer feature gate (Karpenter would ignore it, so the run would
// show nothing of it), a scalableRef (a workload's deployments are timeline events here, not
// Deployment objects a buffer could follow), and a podTemplateRef naming no PodTemplate of the
// manifests in the buffer's namespace (the buffer would never be ready).
func bufferProblems(objs []client.Object, gate bool) []string {
	templates := map[string]bool{}
	for _, o := range objs {
		if pt, ok := o.(*corev1.PodTemplate); ok {
			templates[pt.Namespace+"/"+pt.Name] = true
		}
	}
	var out []string
	for _, o := range objs {
		cb, ok := o.(*autoscalingv1beta1.CapacityBuffer)
		if !ok {
			continue
		}
		cb.Namespace = cmp.Or(cb.Namespace, defaultNamespace)
		switch {
		case !gate:
			out = append(out, fmt.Sprintf("CapacityBuffer %s needs the CapacityBuffer feature gate: add featureGates: {CapacityBuffer: true}, or remove the buffer", cb.Name))
		case cb.Spec.ScalableRef != nil:
			out = append(out, fmt.Sprintf("CapacityBuffer %s: spec.scalableRef: the simulator's deployments are timeline events, not %s objects a buffer can follow; put the pods' template in a PodTemplate among the manifests, name it in spec.podTemplateRef and set spec.replicas (or spec.limits)", cb.Name, cb.Spec.ScalableRef.Kind))
		case cb.Spec.PodTemplateRef != nil && !templates[cb.Namespace+"/"+cb.Spec.PodTemplateRef.Name]:
			out = append(out, fmt.Sprintf("CapacityBuffer %s: spec.podTemplateRef: no PodTemplate %q among the manifests%s; add it, or the buffer is never ready", qualified(cb.Namespace, cb.Name), cb.Spec.PodTemplateRef.Name, inNamespace(cb.Namespace)))
		}
	}
	return out
}
