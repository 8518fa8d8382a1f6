package validation

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/openkarpenter/karpenter/config/crd"
	"github.com/openkarpenter/karpenter/pkg/apis"
)

// ErrUnsupportedKind is wrapped by the errors about objects whose kind no CRD of the project
// defines (or whose version it does not serve).
var ErrUnsupportedKind = errors.New("kind not defined by the project's CRDs")

// rulesSkipped is the server's note when CEL rules are not run because the schema already
// found a blocking error.
const rulesSkipped = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"

// Validator validates and defaults objects of the kinds defined by the project's CRDs. It is
// built once by New and is safe for concurrent use.
type Validator struct {
	kinds  map[schema.GroupVersionKind]*kindSchema
	order  []schema.GroupVersionKind
	scheme *runtime.Scheme
}

// kindSchema is everything the API server derives from one served version of a CRD.
type kindSchema struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	// status is true when the status subresource is on: create ignores status and update
	// keeps the old one.
	status bool
	scale  *apiextensionsv1.CustomResourceSubresourceScale
	// structural is the structural schema with its defaults pruned, as the server keeps it.
	structural *structuralschema.Structural
	schema     apiextensionsvalidation.SchemaValidator
	// rules validates the x-kubernetes-validations; nil when the schema has none.
	rules *cel.Validator
}

// New builds a Validator from the CRDs embedded in config/crd: for every served version, its
// structural schema, schema validator, defaults and compiled CEL rules.
func New() (*Validator, error) {
	crds, err := crd.All()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded crds: %w", err)
	}
	v := &Validator{kinds: map[schema.GroupVersionKind]*kindSchema{}, scheme: apis.NewScheme()}
	for _, c := range crds {
		for i := range c.Spec.Versions {
			version := &c.Spec.Versions[i]
			if !version.Served && !version.Storage {
				continue
			}
			k, err := newKindSchema(c, version)
			if err != nil {
				return nil, fmt.Errorf("crd %s version %s: %w", c.Name, version.Name, err)
			}
			v.kinds[k.gvk] = k
			v.order = append(v.order, k.gvk)
		}
	}
	sort.Slice(v.order, func(i, j int) bool { return v.order[i].String() < v.order[j].String() })
	return v, nil
}

func newKindSchema(c *apiextensionsv1.CustomResourceDefinition, version *apiextensionsv1.CustomResourceDefinitionVersion) (*kindSchema, error) {
	if version.Schema == nil || version.Schema.OpenAPIV3Schema == nil {
		return nil, errors.New("no openAPIV3Schema")
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(version.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("converting the schema to the internal version: %w", err)
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("building the structural schema: %w", err)
	}
	// The server does not own the defaults NewStructural shares with the input: copy first.
	structural = structural.DeepCopy()
	if err := defaulting.PruneDefaults(structural); err != nil {
		return nil, fmt.Errorf("pruning the defaults: %w", err)
	}
	schemaValidator, _, err := apiextensionsvalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("building the schema validator: %w", err)
	}
	k := &kindSchema{
		gvk:        schema.GroupVersionKind{Group: c.Spec.Group, Version: version.Name, Kind: c.Spec.Names.Kind},
		namespaced: c.Spec.Scope == apiextensionsv1.NamespaceScoped,
		structural: structural,
		schema:     schemaValidator,
		rules:      cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}
	if sub := version.Subresources; sub != nil {
		k.status = sub.Status != nil
		k.scale = sub.Scale
	}
	return k, nil
}

// Kinds returns the group, version and kind of every object the Validator covers, sorted.
func (v *Validator) Kinds() []schema.GroupVersionKind {
	return append([]schema.GroupVersionKind(nil), v.order...)
}

// lookup finds the schema for obj's apiVersion and kind; when there is none, it explains why
// with an error on the apiVersion (a kind of the project in a version not served) or the kind.
func (v *Validator) lookup(obj *unstructured.Unstructured) (*kindSchema, *field.Error) {
	if obj == nil || obj.Object == nil {
		return nil, field.Required(field.NewPath("kind"), "no object")
	}
	gvk := obj.GroupVersionKind()
	if k, ok := v.kinds[gvk]; ok {
		return k, nil
	}
	var versions, kinds []string
	for _, known := range v.order {
		if known.GroupKind() == gvk.GroupKind() {
			versions = append(versions, known.GroupVersion().String())
		}
		kinds = append(kinds, known.Kind)
	}
	if len(versions) > 0 {
		return nil, field.NotSupported(field.NewPath("apiVersion"), obj.GetAPIVersion(), versions)
	}
	return nil, field.Invalid(field.NewPath("kind"), gvk.Kind, fmt.Sprintf("%s: %s is none of %s", ErrUnsupportedKind, describeKind(gvk), strings.Join(kinds, ", ")))
}

// Validate validates obj as the API server validates a create request with that body: on a
// copy, which it decodes (unknown fields pruned, defaults applied) and prepares (status
// dropped, namespace cleared) first. It returns nil when the server would accept obj. obj is
// not modified.
func (v *Validator) Validate(obj *unstructured.Unstructured) field.ErrorList {
	k, ferr := v.lookup(obj)
	if ferr != nil {
		return field.ErrorList{ferr}
	}
	u, meta, errs := k.decode(obj.Object, nil)
	if len(errs) > 0 {
		return errs
	}
	k.prepareForCreate(u, meta)
	if err := k.finishDecode(u, meta); err != nil {
		return field.ErrorList{err}
	}
	return k.validateCreate(u)
}

// ValidateUpdate validates the change from old to obj as the API server validates an update
// request with obj's body of an object stored as old: transition rules (oldSelf) and immutable
// metadata are checked, status is kept from old, and errors in parts of obj unchanged from old
// are ratcheted (not reported). Unlike the server, it does not require obj to carry a
// resourceVersion: one missing is taken as an unconditional update, as a patch would be.
// Neither object is modified.
func (v *Validator) ValidateUpdate(obj, old *unstructured.Unstructured) field.ErrorList {
	k, ferr := v.lookup(obj)
	if ferr != nil {
		return field.ErrorList{ferr}
	}
	if old == nil || old.Object == nil {
		return field.ErrorList{field.Required(field.NewPath("metadata"), "no old object to update")}
	}
	if oldGVK := old.GroupVersionKind(); oldGVK != k.gvk {
		return field.ErrorList{field.Invalid(field.NewPath("kind"), oldGVK.String(), fmt.Sprintf("the old object must be a %s", k.gvk))}
	}
	oldU, oldMeta, errs := k.decode(old.Object, nil)
	if len(errs) > 0 {
		return errs
	}
	if err := k.finishDecode(oldU, oldMeta); err != nil {
		return field.ErrorList{err}
	}
	u, meta, errs := k.decode(obj.Object, nil)
	if len(errs) > 0 {
		return errs
	}
	k.prepareForUpdate(u, meta, oldU, oldMeta)
	if err := k.finishDecode(u, meta); err != nil {
		return field.ErrorList{err}
	}
	return k.validateUpdate(u, oldU)
}

// Default applies the CRD's defaults to obj in place, as the server does when it decodes a
// request: nulls in non-nullable fields are replaced by their default or dropped, and missing
// fields with a default are set. Objects of kinds the Validator does not cover are left as
// they are (see Kinds).
func (v *Validator) Default(obj *unstructured.Unstructured) {
	k, ferr := v.lookup(obj)
	if ferr != nil {
		return
	}
	defaulting.PruneNonNullableNullsWithoutDefaults(obj.Object, k.structural)
	defaulting.Default(obj.Object, k.structural)
}

// UnknownFields returns the paths of the fields in obj that the schema does not define
// (for example "spec.template.spec.nodeClasRef"), sorted: the server drops them silently, warns
// about them, or refuses the object with fieldValidation=Strict (`kubectl apply` does by
// default). obj is not modified.
func (v *Validator) UnknownFields(obj *unstructured.Unstructured) ([]string, error) {
	k, ferr := v.lookup(obj)
	if ferr != nil {
		if obj == nil || obj.Object == nil {
			return nil, fmt.Errorf("%w: nil object", ErrUnsupportedKind)
		}
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedKind, describeKind(obj.GroupVersionKind()))
	}
	var unknown []string
	if _, _, errs := k.decode(obj.Object, &unknown); len(errs) > 0 {
		return nil, fmt.Errorf("decoding: %w", errs.ToAggregate())
	}
	sort.Strings(unknown)
	return unknown, nil
}

// decode copies in and does what the server's decoder does to a request body: ObjectMeta read
// (and its unknown fields dropped), unknown fields pruned and non-nullable nulls without a
// default dropped, embedded ObjectMeta coerced. When unknown is not nil, the paths of the
// dropped fields are appended to it. The caller finishes with finishDecode.
func (k *kindSchema) decode(in map[string]any, unknown *[]string) (map[string]any, *metav1.ObjectMeta, field.ErrorList) {
	u, err := jsonObject(in)
	if err != nil {
		return nil, nil, field.ErrorList{field.Invalid(field.NewPath(""), field.OmitValueType{}, err.Error())}
	}
	track := unknown != nil
	meta, found, metaUnknown, err := objectmeta.GetObjectMetaWithOptions(u, objectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: track})
	if err != nil {
		return nil, nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), field.OmitValueType{}, err.Error())}
	}
	if !found {
		meta = &metav1.ObjectMeta{}
	}
	pruned := pruning.PruneWithOptions(u, k.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: track})
	defaulting.PruneNonNullableNullsWithoutDefaults(u, k.structural)
	coerceErr, coerced := objectmeta.CoerceWithOptions(nil, u, k.structural, false, objectmeta.CoerceOptions{ReturnUnknownFieldPaths: track})
	if coerceErr != nil {
		return nil, nil, field.ErrorList{coerceErr}
	}
	if track {
		*unknown = append(append(append(*unknown, metaUnknown...), pruned...), coerced...)
	}
	return u, meta, nil
}

// finishDecode writes meta back into u, with apiVersion and kind, and applies the defaults.
func (k *kindSchema) finishDecode(u map[string]any, meta *metav1.ObjectMeta) *field.Error {
	u["apiVersion"], u["kind"] = k.gvk.GroupVersion().String(), k.gvk.Kind
	if err := objectmeta.SetObjectMeta(u, meta); err != nil {
		return field.Invalid(field.NewPath("metadata"), field.OmitValueType{}, err.Error())
	}
	defaulting.Default(u, k.structural)
	return nil
}

// prepareForCreate does what the server does to a new object before validating it.
func (k *kindSchema) prepareForCreate(u map[string]any, meta *metav1.ObjectMeta) {
	if !k.namespaced {
		meta.Namespace = metav1.NamespaceNone
	}
	if meta.GenerateName != "" && meta.Name == "" {
		meta.Name = names.SimpleNameGenerator.GenerateName(meta.GenerateName)
	}
	if k.status {
		delete(u, "status")
	}
	meta.Generation = 1
}

// prepareForUpdate does what the server does to an updated object before validating it.
func (k *kindSchema) prepareForUpdate(u map[string]any, meta *metav1.ObjectMeta, old map[string]any, oldMeta *metav1.ObjectMeta) {
	if !k.namespaced {
		meta.Namespace = metav1.NamespaceNone
	}
	meta.Generation = oldMeta.Generation
	if k.status {
		if status, ok := old["status"]; ok {
			u["status"] = status
		} else {
			delete(u, "status")
		}
	}
	if meta.UID == "" {
		meta.UID = oldMeta.UID
	}
	// Offline objects seldom carry a resourceVersion, which the server requires of an update
	// (a patch or `kubectl apply` takes the stored one): treat its absence as an unconditional
	// update rather than report it.
	if meta.ResourceVersion == "" {
		meta.ResourceVersion = oldMeta.ResourceVersion
	}
	if meta.ResourceVersion == "" {
		meta.ResourceVersion = "0"
	}
	if !oldMeta.CreationTimestamp.IsZero() {
		meta.CreationTimestamp = oldMeta.CreationTimestamp
	}
	if oldMeta.DeletionTimestamp != nil {
		meta.DeletionTimestamp = oldMeta.DeletionTimestamp
	}
	if oldMeta.DeletionGracePeriodSeconds != nil && meta.DeletionGracePeriodSeconds == nil {
		meta.DeletionGracePeriodSeconds = oldMeta.DeletionGracePeriodSeconds
	}
}

// validateCreate is the custom resource strategy's validation of a new object.
func (k *kindSchema) validateCreate(u map[string]any) field.ErrorList {
	obj := &unstructured.Unstructured{Object: u}
	metaPath := field.NewPath("metadata")
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateObjectMetaAccessor(obj, k.namespaced, apivalidation.NameIsDNSSubdomain, metaPath)...)
	errs = append(errs, apiextensionsvalidation.ValidateCustomResource(nil, u, k.schema)...)
	errs = append(errs, k.validateScale(u)...)
	errs = append(errs, objectmeta.Validate(nil, u, k.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, k.structural, u)...)
	errs = append(errs, k.validateRules(errs, u, nil, nil)...)
	if len(errs) > 0 {
		return errs
	}
	// The generic registry checks ObjectMeta once more after the strategy passes.
	return apivalidation.ValidateObjectMetaAccessor(obj, k.namespaced, path.ValidatePathSegmentName, metaPath)
}

// validateUpdate is the generic registry's and the custom resource strategy's validation of an
// update, with ratcheting.
func (k *kindSchema) validateUpdate(u, old map[string]any) field.ErrorList {
	obj, oldObj := &unstructured.Unstructured{Object: u}, &unstructured.Unstructured{Object: old}
	metaPath := field.NewPath("metadata")
	correlated := common.NewCorrelatedObject(u, old, &model.Structural{Structural: k.structural})
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateObjectMetaAccessor(obj, k.namespaced, path.ValidatePathSegmentName, metaPath)...)
	errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(obj, oldObj, metaPath)...)
	errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(obj, oldObj, metaPath)...)
	errs = append(errs, apiextensionsvalidation.ValidateCustomResourceUpdate(nil, u, old, k.schema, apiextensionsvalidation.WithRatcheting(correlated))...)
	errs = append(errs, k.validateScale(u)...)
	errs = append(errs, objectmeta.Validate(nil, u, k.structural, false)...)
	if oldErrs := listtype.ValidateListSetsAndMaps(nil, k.structural, old); len(oldErrs) == 0 {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, k.structural, u)...)
	}
	errs = append(errs, k.validateRules(errs, u, old, correlated)...)
	return errs
}

// validateRules runs the CEL rules, unless errs already holds an error the server considers
// blocking (a wrong type, a missing field, a value out of an enum, too long or too many), in
// which case it returns the server's note that rules were skipped.
func (k *kindSchema) validateRules(errs field.ErrorList, u, old map[string]any, correlated *common.CorrelatedObject) field.ErrorList {
	if k.rules == nil {
		return nil
	}
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.ErrorList{field.Invalid(nil, nil, rulesSkipped)}
		}
	}
	var opts []cel.Option
	if correlated != nil {
		opts = append(opts, cel.WithRatcheting(correlated))
	}
	var oldObj any
	if old != nil {
		oldObj = old
	}
	ruleErrs, _ := k.rules.Validate(context.Background(), nil, k.structural, u, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	return ruleErrs
}

// validateScale checks the replica paths of the scale subresource, as the server does on
// every write.
func (k *kindSchema) validateScale(u map[string]any) field.ErrorList {
	if k.scale == nil {
		return nil
	}
	var errs field.ErrorList
	replicas := func(jsonPath string) {
		fldPath := field.NewPath(jsonPath)
		n, _, err := unstructured.NestedInt64(u, strings.Split(strings.TrimPrefix(jsonPath, "."), ".")...)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(fldPath, n, err.Error()))
		case n < 0:
			errs = append(errs, field.Invalid(fldPath, n, "should be a non-negative integer"))
		case n > math.MaxInt32:
			errs = append(errs, field.Invalid(fldPath, n, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32)))
		}
	}
	replicas(k.scale.SpecReplicasPath)
	replicas(k.scale.StatusReplicasPath)
	if selector := k.scale.LabelSelectorPath; selector != nil {
		s, _, err := unstructured.NestedString(u, strings.Split(strings.TrimPrefix(*selector, "."), ".")...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*selector), s, err.Error()))
		}
	}
	return errs
}
