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
	_ "k8s.io/kubernetes/pkg/apis/node/install"    // the node.k8s.io/v1 defaults and conversions
	_ "k8s.io/kubernetes/pkg/apis/policy/install"  // the policy/v1 defaults and conversions
	_ "k8s.io/kubernetes/pkg/apis/storage/install" // the storage.k8s.io/v1 defaults and conversions
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/podtemplate"
	"k8s.io/kubernetes/pkg/registry/node/runtimeclass"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/storage/storageclass"
)

// builtinKind is a built-in kind's create strategy in the API server and its resource.
type builtinKind struct {
	strategy rest.RESTCreateStrategy
	resource string
}

// builtinKinds are the built-in kinds the simulator reads, by group and kind.
var builtinKinds = map[schema.GroupKind]builtinKind{
	{Kind: "Pod"}:                                   {pod.Strategy, "pods"},
	{Kind: "PersistentVolumeClaim"}:                 {persistentvolumeclaim.Strategy, "persistentvolumeclaims"},
	{Kind: "PersistentVolume"}:                      {persistentvolume.Strategy, "persistentvolumes"},
	{Kind: "PodTemplate"}:                           {podtemplate.Strategy, "podtemplates"},
	{Group: "apps", Kind: "Deployment"}:             {deployment.Strategy, "deployments"},
	{Group: "apps", Kind: "StatefulSet"}:            {statefulset.Strategy, "statefulsets"},
	{Group: "apps", Kind: "DaemonSet"}:              {daemonset.Strategy, "daemonsets"},
	{Group: "apps", Kind: "ReplicaSet"}:             {replicaset.Strategy, "replicasets"},
	{Group: "batch", Kind: "Job"}:                   {job.Strategy, "jobs"},
	{Group: "policy", Kind: "PodDisruptionBudget"}:  {poddisruptionbudget.Strategy, "poddisruptionbudgets"},
	{Group: "storage.k8s.io", Kind: "StorageClass"}: {storageclass.Strategy, "storageclasses"},
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:    {runtimeclass.Strategy, "runtimeclasses"},
}

// IsBuiltin reports whether ValidateBuiltin checks objects of gk.
func IsBuiltin(gk schema.GroupKind) bool {
	_, ok := builtinKinds[gk]
	return ok
}

// ValidateBuiltin checks a built-in object (a Pod, PodTemplate, PersistentVolumeClaim,
// PersistentVolume, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, PodDisruptionBudget,
// StorageClass or RuntimeClass, as its k8s.io/api type with its kind set) as the API server
// checks it on create, with the server's own code from k8s.io/kubernetes: the version's
// defaults, the conversion to the internal type, then the kind's registry strategy
// (PrepareForCreate, Validate) and the ObjectMeta checks, the steps of the server's create
// path (admission plugins aside: PodCreation runs the RuntimeClass plugin on pods). An object
// without a namespace is checked in "default". obj itself is not changed. The errors carry the
// server's field paths, relative to the object.
func ValidateBuiltin(obj runtime.Object) (field.ErrorList, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	kind, ok := builtinKinds[gvk.GroupKind()]
	strategy := kind.strategy
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
	// The request as the server sees a create (declarative validation reads it).
	ctx := genericapirequest.WithNamespace(context.Background(), objectMeta.GetNamespace())
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIGroup: gvk.Group, APIVersion: gvk.Version,
		Resource: kind.resource, Namespace: objectMeta.GetNamespace(), Name: objectMeta.GetName(),
	})
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
