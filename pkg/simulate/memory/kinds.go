package memory

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kindInfo is what the store knows about one kind: where its objects live, which parts of them
// the server owns and how to copy them fast. It is built once, in New, and never changes.
type kindInfo struct {
	gvk schema.GroupVersionKind
	// gr names the kind's resource in error messages and the REST mapper ("pods", "nodeclaims").
	gr       schema.GroupResource
	singular string
	// typ is the Go struct (not pointer) type of the kind.
	typ reflect.Type
	// namespaced is true when objects live in a namespace.
	namespaced bool
	// custom is true when the kind is served through a CustomResourceDefinition rather than
	// built into kube-apiserver (which changes generation, create-time status and patch rules).
	custom bool
	// statusField is the index of the struct's Status field, -1 when it has none.
	statusField int
	// statusSubresource is true when status is written only through the status subresource.
	statusSubresource bool
	// statusResetsMetadata is true when a status write changes nothing but the status (custom
	// resources and a few built-in kinds); other built-in kinds let metadata changes through.
	statusResetsMetadata bool
	// keepStatusOnCreate is true when Create stores the status it is given (Nodes).
	keepStatusOnCreate bool
	// generation is true when the server maintains metadata.generation.
	generation bool
	// annotationsBumpGeneration is true when an annotation change bumps the generation too
	// (Deployments, for their legacy rollback annotations).
	annotationsBumpGeneration bool
	// specFields are the indexes of the fields other than TypeMeta, ObjectMeta and Status: a
	// change to any of them bumps the generation.
	specFields []int
	// structFields maps the JSON names of the kind's struct-typed top-level fields (metadata,
	// spec, status) to their indexes, for merge patches applied one field at a time.
	structFields map[string]int
	// defaults are the structural defaults of the kind's CRD schema, nil when none.
	defaults *apiextensionsv1.JSONSchemaProps
	// copyInto deep-copies src into dst, both of this kind's Go type.
	copyInto func(dst, src client.Object)
	// fillList deep-copies objs into a new slice of the kind's Go type and returns it as a
	// reflect.Value ready to be assigned to a typed list's Items; nil means use reflection.
	fillList func(objs []client.Object, deep bool) reflect.Value
}

// statusOf returns the Status field of obj (a pointer to this kind's struct) as an
// addressable value; it must only be called when statusField >= 0.
func (k *kindInfo) statusOf(obj client.Object) reflect.Value {
	return reflect.ValueOf(obj).Elem().Field(k.statusField)
}

// newObject returns a new, empty object of the kind.
func (k *kindInfo) newObject() client.Object {
	return reflect.New(k.typ).Interface().(client.Object)
}

// String names the kind for messages, as "NodeClaim.karpenter.sh" or "Pod".
func (k *kindInfo) String() string {
	if k.gvk.Group == "" {
		return k.gvk.Kind
	}
	return k.gvk.Kind + "." + k.gvk.Group
}

// clusterScoped lists the built-in kinds that are not namespaced.
var clusterScoped = map[schema.GroupKind]bool{
	{Group: "", Kind: "Namespace"}:                                                    true,
	{Group: "", Kind: "Node"}:                                                         true,
	{Group: "", Kind: "PersistentVolume"}:                                             true,
	{Group: "", Kind: "ComponentStatus"}:                                              true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:                               true,
	{Group: "authentication.k8s.io", Kind: "TokenReview"}:                             true,
	{Group: "authentication.k8s.io", Kind: "SelfSubjectReview"}:                       true,
	{Group: "authorization.k8s.io", Kind: "SubjectAccessReview"}:                      true,
	{Group: "authorization.k8s.io", Kind: "SelfSubjectAccessReview"}:                  true,
	{Group: "authorization.k8s.io", Kind: "SelfSubjectRulesReview"}:                   true,
	{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}:               true,
	{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}:                      true,
}

// withGeneration lists the built-in kinds whose metadata.generation kube-apiserver maintains;
// custom resources always have one.
var withGeneration = map[schema.GroupKind]bool{
	{Group: "", Kind: "Pod"}:                                                          true,
	{Group: "", Kind: "ReplicationController"}:                                        true,
	{Group: "apps", Kind: "Deployment"}:                                               true,
	{Group: "apps", Kind: "ReplicaSet"}:                                               true,
	{Group: "apps", Kind: "StatefulSet"}:                                              true,
	{Group: "apps", Kind: "DaemonSet"}:                                                true,
	{Group: "batch", Kind: "Job"}:                                                     true,
	{Group: "batch", Kind: "CronJob"}:                                                 true,
	{Group: "policy", Kind: "PodDisruptionBudget"}:                                    true,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:                           true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:                               true,
	{Group: "networking.k8s.io", Kind: "Ingress"}:                                     true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:                                true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
}

// statusResetsMetadata lists the built-in kinds whose status writes keep all metadata as stored.
var statusResetsMetadata = map[schema.GroupKind]bool{
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}: true,
	{Group: "resource.k8s.io", Kind: "ResourceClaim"}:                          true,
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:                        true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                          true,
	{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}:               true,
	{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}:        true,
	{Group: "certificates.k8s.io", Kind: "PodCertificateRequest"}:              true,
}

// crdInfo is what a CustomResourceDefinition says about one of its versions.
type crdInfo struct {
	plural, singular string
	namespaced       bool
	status           bool
	schema           *apiextensionsv1.JSONSchemaProps
}

// crdInfos indexes CRDs by the group, version and kind they serve.
func crdInfos(crds []*apiextensionsv1.CustomResourceDefinition) map[schema.GroupVersionKind]crdInfo {
	out := map[schema.GroupVersionKind]crdInfo{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			info := crdInfo{
				plural:     crd.Spec.Names.Plural,
				singular:   crd.Spec.Names.Singular,
				namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
				status:     v.Subresources != nil && v.Subresources.Status != nil,
			}
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil && hasDefaults(v.Schema.OpenAPIV3Schema) {
				info.schema = v.Schema.OpenAPIV3Schema
			}
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = info
		}
	}
	return out
}

// buildKinds describes every object kind of the scheme: each registered type that has object
// metadata and a matching List kind.
func buildKinds(scheme *runtime.Scheme, crds map[schema.GroupVersionKind]crdInfo) (map[schema.GroupVersionKind]*kindInfo, map[reflect.Type]*kindInfo) {
	byGVK := map[schema.GroupVersionKind]*kindInfo{}
	byType := map[reflect.Type]*kindInfo{}
	ambiguous := map[reflect.Type]bool{}
	objectType := reflect.TypeFor[client.Object]()
	for gvk, typ := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") ||
			typ.Kind() != reflect.Struct || !reflect.PointerTo(typ).Implements(objectType) {
			continue
		}
		if _, ok := typ.FieldByName("ObjectMeta"); !ok {
			continue
		}
		if !scheme.Recognizes(gvk.GroupVersion().WithKind(gvk.Kind + "List")) {
			continue
		}
		info := describe(gvk, typ, crds)
		byGVK[gvk] = info
		if _, seen := byType[typ]; seen {
			ambiguous[typ] = true
		}
		byType[typ] = info
	}
	for typ := range ambiguous {
		delete(byType, typ)
	}
	return byGVK, byType
}

// describe works out one kind's kindInfo.
func describe(gvk schema.GroupVersionKind, typ reflect.Type, crds map[schema.GroupVersionKind]crdInfo) *kindInfo {
	plural, singular := meta.UnsafeGuessKindToResource(gvk)
	info := &kindInfo{
		gvk:         gvk,
		gr:          plural.GroupResource(),
		singular:    singular.Resource,
		typ:         typ,
		statusField: -1,
		custom:      !clientgoscheme.Scheme.Recognizes(gvk),
	}
	info.structFields = map[string]int{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" && f.Type.Kind() == reflect.Struct {
			info.structFields[name] = i
		}
		switch f.Name {
		case "TypeMeta", "ObjectMeta":
		case "Status":
			info.statusField = i
		default:
			info.specFields = append(info.specFields, i)
		}
	}
	gk := gvk.GroupKind()
	if crd, ok := crds[gvk]; ok {
		info.custom = true
		info.gr.Resource = crd.plural
		info.singular = crd.singular
		info.namespaced = crd.namespaced
		info.statusSubresource = crd.status && info.statusField >= 0
		info.defaults = crd.schema
	} else {
		info.namespaced = !clusterScoped[gk]
		info.statusSubresource = info.statusField >= 0
	}
	info.generation = info.custom || withGeneration[gk]
	info.statusResetsMetadata = info.custom || statusResetsMetadata[gk]
	info.keepStatusOnCreate = gk == schema.GroupKind{Kind: "Node"}
	info.annotationsBumpGeneration = gk == schema.GroupKind{Group: "apps", Kind: "Deployment"}
	if fast, ok := fastCopiers[typ]; ok {
		info.copyInto, info.fillList = fast.copyInto, fast.fillList
	}
	return info
}

// hasDefaults reports whether any property of a schema has a default.
func hasDefaults(s *apiextensionsv1.JSONSchemaProps) bool {
	if s == nil {
		return false
	}
	if s.Default != nil {
		return true
	}
	for _, p := range s.Properties {
		if hasDefaults(&p) {
			return true
		}
	}
	if s.Items != nil && hasDefaults(s.Items.Schema) {
		return true
	}
	return s.AdditionalProperties != nil && hasDefaults(s.AdditionalProperties.Schema)
}

// applyDefaults fills the absent fields of v (JSON-like data) that schema s gives a default, as
// kube-apiserver's structural defaulting does for custom resources.
func applyDefaults(v any, s *apiextensionsv1.JSONSchemaProps) error {
	switch x := v.(type) {
	case map[string]any:
		for name, prop := range s.Properties {
			if _, present := x[name]; !present && prop.Default != nil {
				var d any
				if err := json.Unmarshal(prop.Default.Raw, &d); err != nil {
					return fmt.Errorf("decoding the default of %s: %w", name, err)
				}
				x[name] = d
			}
			if child, ok := x[name]; ok && child != nil {
				if err := applyDefaults(child, &prop); err != nil {
					return err
				}
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			for name, child := range x {
				if _, known := s.Properties[name]; !known && child != nil {
					if err := applyDefaults(child, s.AdditionalProperties.Schema); err != nil {
						return err
					}
				}
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for _, item := range x {
				if item != nil {
					if err := applyDefaults(item, s.Items.Schema); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// objectMeta returns the ObjectMeta embedded in a typed object.
func objectMeta(obj client.Object) *metav1.ObjectMeta {
	return obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}
