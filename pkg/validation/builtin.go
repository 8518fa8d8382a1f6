package validation

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"    // the apps/v1 defaults and conversions
	_ "k8s.io/kubernetes/pkg/apis/batch/install"   // the batch/v1 defaults and conversions
	_ "k8s.io/kubernetes/pkg/apis/core/install"    // the v1 defaults and conversions
	_ "k8s.io/kubernetes/pkg/apis/policy/install"  // the policy/v1 defaults and conversions
	_ "k8s.io/kubernetes/pkg/apis/storage/install" // the storage.k8s.io/v1 defaults and conversions
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/storage/storageclass"
)

// builtinStrategies are the API server's create strategies of the built-in kinds the
// simulator reads, by group and kind.
var builtinStrategies = map[schema.GroupKind]rest.RESTCreateStrategy{
	{Kind: "Pod"}:                                   pod.Strategy,
	{Kind: "PersistentVolumeClaim"}:                 persistentvolumeclaim.Strategy,
	{Kind: "PersistentVolume"}:                      persistentvolume.Strategy,
	{Group: "apps", Kind: "Deployment"}:             deployment.Strategy,
	{Group: "apps", Kind: "StatefulSet"}:            statefulset.Strategy,
	{Group: "apps", Kind: "DaemonSet"}:              daemonset.Strategy,
	{Group: "batch", Kind: "Job"}:                   job.Strategy,
	{Group: "policy", Kind: "PodDisruptionBudget"}:  poddisruptionbudget.Strategy,
	{Group: "storage.k8s.io", Kind: "StorageClass"}: storageclass.Strategy,
}

// IsBuiltin reports whether ValidateBuiltin checks objects of gk.
func IsBuiltin(gk schema.GroupKind) bool {
	_, ok := builtinStrategies[gk]
	return ok
}

// ValidateBuiltin checks a built-in object (a Pod, PersistentVolumeClaim, PersistentVolume,
// Deployment, StatefulSet, DaemonSet, Job, PodDisruptionBudget or StorageClass, as its
// k8s.io/api type with its kind set) as the API server checks it on create, with the server's
// own code from k8s.io/kubernetes: the version's defaults, the conversion to the internal
// type, then the kind's registry strategy (PrepareForCreate, Validate) and the ObjectMeta
// checks, the steps of the server's create path. An object without a namespace is checked in
// "default". obj itself is not changed. The errors carry the server's field paths, relative
// to the object.
func ValidateBuiltin(obj runtime.Object) (field.ErrorList, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	strategy, ok := builtinStrategies[gvk.GroupKind()]
	if !ok {
		return nil, fmt.Errorf("%s %s: %w", gvk.GroupVersion(), gvk.Kind, ErrUnsupportedKind)
	}
	external := obj.DeepCopyObject()
	legacyscheme.Scheme.Default(external)
	internal, err := legacyscheme.Scheme.ConvertToVersion(external, runtime.InternalGroupVersioner)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", gvk.Kind, nameOf(obj), err)
	}
	objectMeta, err := meta.Accessor(internal)
	if err != nil {
		return nil, err
	}
	rest.FillObjectMetaSystemFields(objectMeta)
	if strategy.NamespaceScoped() && objectMeta.GetNamespace() == "" {
		objectMeta.SetNamespace("default")
	}
	if !strategy.NamespaceScoped() {
		objectMeta.SetNamespace("")
	}
	ctx := genericapirequest.WithNamespace(context.Background(), objectMeta.GetNamespace())
	strategy.PrepareForCreate(ctx, internal)
	errs := strategy.Validate(ctx, internal)
	if len(errs) > 0 {
		// As the server: the ObjectMeta checks only once the kind's own passed.
		return errs, nil
	}
	return apivalidation.ValidateObjectMetaAccessor(objectMeta, strategy.NamespaceScoped(), path.ValidatePathSegmentName, field.NewPath("metadata")), nil
}

// nameOf is an object's name, for messages.
func nameOf(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetName()
	}
	return ""
}
