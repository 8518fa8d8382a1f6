package memory

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// checkPatchType refuses the patch types the store does not apply, with kube-apiserver's errors
// where it has one.
func checkPatchType(info *kindInfo, pt types.PatchType) error {
	switch pt {
	case types.MergePatchType, types.JSONPatchType:
		return nil
	case types.StrategicMergePatchType:
		if !info.custom {
			return nil
		}
	case types.ApplyPatchType, types.ApplyCBORPatchType:
		return apierrors.NewMethodNotSupported(info.gr, "server-side apply")
	}
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
}

// applyPatch returns a new object: cur with the patch applied. Only patches pay for JSON.
func applyPatch(info *kindInfo, cur client.Object, pt types.PatchType, data []byte) (client.Object, error) {
	if pt == types.MergePatchType {
		if out, ok, err := applyMergePatch(info, cur, data); ok {
			return out, err
		}
	}
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("encoding %s: %w", info, err))
	}
	var patched []byte
	switch pt {
	case types.MergePatchType:
		var doc, patch any
		if err := utiljson.Unmarshal(orig, &doc); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if err := utiljson.Unmarshal(data, &patch); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		patched, err = json.Marshal(mergePatch(doc, patch))
	case types.JSONPatchType:
		var doc any
		if err := utiljson.Unmarshal(orig, &doc); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if doc, err = jsonPatch(doc, data); err != nil {
			return nil, statusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, fmt.Sprintf("applying the JSON patch: %v", err))
		}
		patched, err = json.Marshal(doc)
	case types.StrategicMergePatchType:
		if patched, err = strategicpatch.StrategicMergePatch(orig, data, info.newObject()); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("applying the strategic merge patch: %v", err))
		}
	default:
		return nil, checkPatchType(info, pt)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out := info.newObject()
	if err := utiljson.Unmarshal(patched, out); err != nil {
		return nil, undecodablePatch(info, err)
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, nil
}

// applyMergePatch applies a JSON merge patch that is an object (as every merge patch of a
// whole object is) to cur through the unstructured form of cur, which is the JSON document's
// without encoding it to text and decoding it back (a merge patch is most of the writes of a
// large simulation: pods marked running and nominated); ok is false for any other patch,
// which applyPatch applies through JSON.
func applyMergePatch(info *kindInfo, cur client.Object, data []byte) (client.Object, bool, error) {
	var patch any
	if err := utiljson.Unmarshal(data, &patch); err != nil {
		return nil, true, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	fields, isObject := patch.(map[string]any)
	if !isObject {
		return nil, false, nil
	}
	if out, ok, err := mergePatchFields(info, cur, fields); ok {
		return out, true, err
	}
	doc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil, true, apierrors.NewInternalError(fmt.Errorf("encoding %s: %w", info, err))
	}
	out := info.newObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(mergePatch(doc, patch).(map[string]any), out); err != nil {
		return nil, true, undecodablePatch(info, err)
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, true, nil
}

// undecodablePatch is kube-apiserver's answer to a patch whose result is not an object of the
// kind (a member of the wrong type): 422 Invalid.
func undecodablePatch(info *kindInfo, err error) error {
	return statusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, fmt.Sprintf("the patched %s does not decode: %v", info, err))
}

// mergePatchFields applies a merge patch whose every member names one of the kind's
// struct-typed top-level fields (metadata, spec, status) and is an object or null, one field at
// a time: a merge patch changes each member independently, so only the fields it names go
// through the unstructured form, and the new object shares the others with cur (stored objects
// are never changed in place). A status patch of a pod so costs its status, not the pod. ok is
// false for any other patch.
func mergePatchFields(info *kindInfo, cur client.Object, patch map[string]any) (client.Object, bool, error) {
	for name, member := range patch {
		if _, known := info.structFields[name]; !known {
			return nil, false, nil
		}
		if _, isObject := member.(map[string]any); !isObject && member != nil {
			return nil, false, nil
		}
	}
	out := shallowClone(cur)
	v := reflect.ValueOf(out).Elem()
	for name, member := range patch {
		f := v.Field(info.structFields[name])
		if member == nil {
			f.SetZero()
			continue
		}
		doc, err := runtime.DefaultUnstructuredConverter.ToUnstructured(f.Addr().Interface())
		if err != nil {
			return nil, true, apierrors.NewInternalError(fmt.Errorf("encoding %s: %w", info, err))
		}
		patched := reflect.New(f.Type())
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(mergePatch(doc, member).(map[string]any), patched.Interface()); err != nil {
			return nil, true, undecodablePatch(info, err)
		}
		f.Set(patched.Elem())
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, true, nil
}

// mergePatch applies an RFC 7386 JSON merge patch to target: objects merge recursively, null
// removes a member, anything else replaces.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// jsonPatch applies an RFC 6902 JSON patch to doc.
func jsonPatch(doc any, data []byte) (any, error) {
	var ops []map[string]any
	if err := utiljson.Unmarshal(data, &ops); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	for i, op := range ops {
		name, _ := op["op"].(string)
		path, err := pointer(op["path"])
		if err != nil {
			return nil, fmt.Errorf("operation %d: %w", i, err)
		}
		value, hasValue := op["value"]
		switch name {
		case "add", "replace", "test":
			if !hasValue {
				return nil, fmt.Errorf("operation %d (%s) has no value", i, name)
			}
		case "move", "copy":
			from, err := pointer(op["from"])
			if err != nil {
				return nil, fmt.Errorf("operation %d: from: %w", i, err)
			}
			if value, err = valueAt(doc, from); err != nil {
				return nil, fmt.Errorf("operation %d: %w", i, err)
			}
			if name == "move" {
				if doc, err = patchAt(doc, from, "remove", nil); err != nil {
					return nil, fmt.Errorf("operation %d: %w", i, err)
				}
			} else {
				value = deepCopyJSON(value)
			}
			name = "add"
		case "remove":
		default:
			return nil, fmt.Errorf("operation %d: unknown op %q", i, name)
		}
		if name == "test" {
			got, err := valueAt(doc, path)
			if err != nil {
				return nil, fmt.Errorf("operation %d: %w", i, err)
			}
			if !reflect.DeepEqual(got, value) {
				return nil, fmt.Errorf("operation %d: test failed at %s", i, op["path"])
			}
			continue
		}
		if doc, err = patchAt(doc, path, name, value); err != nil {
			return nil, fmt.Errorf("operation %d (%s %s): %w", i, name, op["path"], err)
		}
	}
	return doc, nil
}

// pointer splits an RFC 6901 JSON pointer into unescaped tokens.
func pointer(v any) ([]string, error) {
	p, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("path %v is not a string", v)
	}
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q does not start with /", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// valueAt returns the value at tokens.
func valueAt(doc any, tokens []string) (any, error) {
	for _, t := range tokens {
		switch c := doc.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, fmt.Errorf("missing member %q", t)
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("bad index %q", t)
			}
			doc = c[i]
		default:
			return nil, fmt.Errorf("cannot descend into %q", t)
		}
	}
	return doc, nil
}

// patchAt returns doc with op ("add", "replace" or "remove") applied at tokens.
func patchAt(doc any, tokens []string, op string, value any) (any, error) {
	if len(tokens) == 0 {
		if op == "remove" {
			return nil, nil
		}
		return value, nil
	}
	head, rest := tokens[0], tokens[1:]
	switch c := doc.(type) {
	case map[string]any:
		if len(rest) > 0 {
			child, ok := c[head]
			if !ok {
				return nil, fmt.Errorf("missing member %q", head)
			}
			nc, err := patchAt(child, rest, op, value)
			if err != nil {
				return nil, err
			}
			c[head] = nc
			return c, nil
		}
		_, exists := c[head]
		switch {
		case op == "add":
			c[head] = value
		case !exists:
			return nil, fmt.Errorf("missing member %q", head)
		case op == "replace":
			c[head] = value
		default:
			delete(c, head)
		}
		return c, nil
	case []any:
		if len(rest) == 0 && op == "add" {
			i := len(c)
			if head != "-" {
				var err error
				if i, err = strconv.Atoi(head); err != nil || i < 0 || i > len(c) {
					return nil, fmt.Errorf("bad index %q", head)
				}
			}
			return slices.Insert(c, i, value), nil
		}
		i, err := strconv.Atoi(head)
		if err != nil || i < 0 || i >= len(c) {
			return nil, fmt.Errorf("bad index %q", head)
		}
		if len(rest) > 0 {
			if c[i], err = patchAt(c[i], rest, op, value); err != nil {
				return nil, err
			}
			return c, nil
		}
		if op == "replace" {
			c[i] = value
			return c, nil
		}
		return slices.Delete(c, i, i+1), nil
	default:
		return nil, fmt.Errorf("cannot descend into %q", head)
	}
}

// deepCopyJSON copies JSON-like data.
func deepCopyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopyJSON(e)
		}
		return out
	default:
		return v
	}
}
