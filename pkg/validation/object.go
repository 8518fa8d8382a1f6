package validation

import (
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateObject validates a project object (typed, such as a *karpv1.NodePool, or
// *unstructured.Unstructured) as the API server would on create: converted to unstructured,
// pruned, defaulted and validated, without modifying obj. It returns nil when the server would
// accept it and otherwise the server's error, an Invalid *StatusError
// (apierrors.IsInvalid) whose message lists every problem, e.g.
//
//	NodePool.karpenter.sh "default" is invalid: spec.weight: Invalid value: 101: spec.weight in body should be less than or equal to 100
//
// and whose Status().Details.Causes hold one field and message each. Objects of other kinds
// fail with an error wrapping ErrUnsupportedKind.
func (v *Validator) ValidateObject(obj runtime.Object) error {
	return v.validateObject(obj, false)
}

// ValidateObjectForUser is ValidateObject for showing to people: the same error, without the
// note the server adds when schema errors stop its CEL rules from running ("<nil>: Invalid
// value: null: some validation rules were not checked because the object was invalid; ..."),
// which names no field and asks nothing the field errors beside it do not.
func (v *Validator) ValidateObjectForUser(obj runtime.Object) error {
	return v.validateObject(obj, true)
}

func (v *Validator) validateObject(obj runtime.Object, forUser bool) error {
	u, k, err := v.unstructuredFor(obj)
	if err != nil {
		return err
	}
	errs := v.Validate(u)
	if forUser {
		errs = errs.Filter(func(err error) bool {
			var fe *field.Error
			return errors.As(err, &fe) && fe.Type == field.ErrorTypeInvalid && fe.Detail == rulesSkipped
		})
		// The schema's checks come in no fixed order: a user sees them by field, the same
		// every time.
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(k.gvk.GroupKind(), u.GetName(), errs)
}

// DefaultObject applies the CRD's defaults to a project object in place (see Default); for a
// typed object, the defaulted fields are written back into it. Objects of other kinds fail with
// an error wrapping ErrUnsupportedKind.
func (v *Validator) DefaultObject(obj runtime.Object) error {
	u, _, err := v.unstructuredFor(obj)
	if err != nil {
		return err
	}
	v.Default(u)
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return nil
	}
	typeMeta := obj.GetObjectKind().GroupVersionKind()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("writing the defaults back into the %s: %w", u.GetKind(), err)
	}
	// Leave apiVersion and kind as the caller had them (often empty on typed objects).
	obj.GetObjectKind().SetGroupVersionKind(typeMeta)
	return nil
}

// unstructuredFor returns obj as unstructured (itself when it already is) with apiVersion and
// kind set, and its schema. Typed objects get their kind from the project's scheme.
func (v *Validator) unstructuredFor(obj runtime.Object) (*unstructured.Unstructured, *kindSchema, error) {
	if obj == nil {
		return nil, nil, fmt.Errorf("%w: nil object", ErrUnsupportedKind)
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		gvk, err := v.kindOf(obj)
		if err != nil {
			return nil, nil, err
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, nil, fmt.Errorf("converting the %s to unstructured: %w", gvk.Kind, err)
		}
		u = &unstructured.Unstructured{Object: content}
		u.SetGroupVersionKind(gvk)
	}
	k, ok := v.kinds[u.GroupVersionKind()]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s", ErrUnsupportedKind, describeKind(u.GroupVersionKind()))
	}
	return u, k, nil
}

// kindOf names a typed object's kind from its Go type, whatever its TypeMeta says.
func (v *Validator) kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := v.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
			return schema.GroupVersionKind{}, fmt.Errorf("%w: %s", ErrUnsupportedKind, describeKind(gvk))
		}
		return schema.GroupVersionKind{}, fmt.Errorf("%w: %T", ErrUnsupportedKind, obj)
	}
	for _, gvk := range gvks {
		if _, ok := v.kinds[gvk]; ok {
			return gvk, nil
		}
	}
	return schema.GroupVersionKind{}, fmt.Errorf("%w: %s", ErrUnsupportedKind, describeKind(gvks[0]))
}

// describeKind names a kind as "Pod (v1)" or "NodePool (karpenter.sh/v1beta1)".
func describeKind(gvk schema.GroupVersionKind) string {
	return fmt.Sprintf("%s (%s)", gvk.Kind, gvk.GroupVersion())
}
