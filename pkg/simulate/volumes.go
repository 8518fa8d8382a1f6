package simulate

import (
	"cmp"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Storage in a workload: StorageClasses, PersistentVolumes and PersistentVolumeClaims are
// created as they are written (claims in the namespaces they name), a StatefulSet's
// volumeClaimTemplates give each of its pods its own claims, and the kube-scheduler stand-in
// (pkg/simulate/binder) binds them, so stateful pods land in their volumes' zones.

// defaultClassAnnotations mark the StorageClass a claim without storageClassName gets.
var defaultClassAnnotations = []string{"storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"}

// isStorageKind reports whether a document's apiVersion and kind are one of the storage kinds a
// workload may hold.
func isStorageKind(apiVersion, kind string) bool {
	switch apiVersion + "/" + kind {
	case "v1/PersistentVolumeClaim", "v1/PersistentVolume", "storage.k8s.io/v1/StorageClass":
		return true
	}
	return false
}

// decodeStorage decodes a StorageClass, PersistentVolume or PersistentVolumeClaim document
// strictly; a claim stays in the namespace it names (default "default").
func decodeStorage(doc document) (client.Object, []error) {
	var obj client.Object
	gvk := corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
	switch doc.raw["kind"] {
	case "PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	case "PersistentVolume":
		obj, gvk = &corev1.PersistentVolume{}, corev1.SchemeGroupVersion.WithKind("PersistentVolume")
	default:
		obj, gvk = &storagev1.StorageClass{}, storagev1.SchemeGroupVersion.WithKind("StorageClass")
	}
	if errs := doc.decode(obj); len(errs) > 0 {
		return nil, errs
	}
	if obj.GetName() == "" {
		return nil, []error{doc.errorf("metadata.name", "Required value")}
	}
	if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		pvc.Namespace = cmp.Or(pvc.Namespace, defaultNamespace)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// storageObjects decodes the storage documents of a workload, in order: each named once per
// kind, a claim without storageClassName given the default StorageClass (as the API server's
// DefaultStorageClass admission does), and the same for the StatefulSets' claim templates.
// Errors name the document and field.
func storageObjects(docs []document, w *Workload) ([]client.Object, []error) {
	var out []client.Object
	var errs []error
	seen := map[string]document{} // kind/namespace/name -> the first
	for _, doc := range docs {
		u := &unstructured.Unstructured{Object: doc.raw}
		kind, name := u.GetKind(), u.GetName()
		obj, decodeErrs := decodeStorage(doc)
		if len(decodeErrs) > 0 {
			errs = append(errs, decodeErrs...)
			continue
		}
		if problems := builtinProblems(obj, u.GroupVersionKind()); len(problems) > 0 {
			errs = append(errs, doc.src.FieldErrors(problems)...)
			continue
		}
		id := kind + "/" + obj.GetNamespace() + "/" + name
		if earlier, dup := seen[id]; dup {
			errs = append(errs, duplicate(doc, earlier))
			continue
		}
		seen[id] = doc
		out = append(out, obj)
	}
	// The newest default class wins, as in Kubernetes: here the last one written.
	var defaultClass string
	for _, o := range out {
		if sc, ok := o.(*storagev1.StorageClass); ok {
			for _, a := range defaultClassAnnotations {
				if sc.Annotations[a] == "true" {
					defaultClass = sc.Name
				}
			}
		}
	}
	if defaultClass == "" {
		return out, errs
	}
	for _, o := range out {
		if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok && pvc.Spec.StorageClassName == nil && pvc.Spec.VolumeName == "" {
			pvc.Spec.StorageClassName = &defaultClass
		}
	}
	if w != nil {
		for _, e := range w.Timeline {
			if e.Deploy == nil || e.Deploy.stateful == nil {
				continue
			}
			for i := range e.Deploy.stateful.claims {
				if c := &e.Deploy.stateful.claims[i]; c.Spec.StorageClassName == nil && c.Spec.VolumeName == "" {
					c.Spec.StorageClassName = &defaultClass
				}
			}
		}
	}
	return out, errs
}

// statefulSet is what a Deployment read from a StatefulSet keeps of it: its pods are named
// <name>-<ordinal> and keep their ordinal when replaced; each gets its own claims
// <template>-<name>-<ordinal>, made from the volumeClaimTemplates when it is first created and
// kept when it is deleted, as the StatefulSet controller does.
type statefulSet struct {
	// claims are the volumeClaimTemplates.
	claims []corev1.PersistentVolumeClaim
	// selector is the StatefulSet's spec.selector.matchLabels, which its claims are labelled
	// with too.
	selector map[string]string
	// ordered is podManagementPolicy OrderedReady (the default): a pod is created once those of
	// lower ordinals run and are Ready.
	ordered bool
}

// newStatefulSet reads what a simulation needs of a StatefulSet, or says which field is wrong.
func newStatefulSet(s *appsv1.StatefulSet) (*statefulSet, error) {
	out := &statefulSet{ordered: s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement}
	if s.Spec.Selector != nil {
		out.selector = s.Spec.Selector.MatchLabels
	}
	names := map[string]bool{}
	for i, c := range s.Spec.VolumeClaimTemplates {
		if c.Name == "" {
			return nil, fmt.Errorf("spec.volumeClaimTemplates[%d].metadata.name: required; it names the pods' volume and their claims", i)
		}
		if names[c.Name] {
			return nil, fmt.Errorf("spec.volumeClaimTemplates[%d].metadata.name: %q is used by an earlier template", i, c.Name)
		}
		names[c.Name] = true
		out.claims = append(out.claims, *c.DeepCopy())
	}
	return out, nil
}

// claimName is the name of the claim of a StatefulSet's pod from a template.
func claimName(template, statefulSet string, ordinal int) string {
	return template + "-" + statefulSet + "-" + strconv.Itoa(ordinal)
}

// podClaims are the claims the pod of a StatefulSet at ordinal gets, and sets the pod's
// volumes of the templates' names to them (adding those it lacks), as the StatefulSet
// controller does.
func (s *statefulSet) podClaims(pod *corev1.Pod, name string, ordinal int) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, t := range s.claims {
		pvc := t.DeepCopy()
		pvc.Name, pvc.Namespace = claimName(t.Name, name, ordinal), pod.Namespace
		pvc.ResourceVersion, pvc.UID = "", ""
		if len(s.selector) > 0 {
			if pvc.Labels == nil {
				pvc.Labels = map[string]string{}
			}
			for k, v := range s.selector {
				pvc.Labels[k] = v
			}
		}
		pvc.Status = corev1.PersistentVolumeClaimStatus{}
		out = append(out, pvc)
		volume := corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}
		replaced := false
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == t.Name {
				pod.Spec.Volumes[i], replaced = volume, true
			}
		}
		if !replaced {
			pod.Spec.Volumes = append(pod.Spec.Volumes, volume)
		}
	}
	return out
}
