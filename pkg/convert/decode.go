package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"

	"github.com/openkarpenter/karpenter/pkg/yamlpath"
)

// strict decodes JSON into objects directly (no scheme: nothing is registered, so the serializer
// fills the given object) and reports unknown and duplicate fields instead of dropping them
// silently.
var strict = serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory,
	runtime.NewScheme(), runtime.NewScheme(), serializerjson.SerializerOptions{Strict: true})

// UnknownField is a field of a decoded document that the type decoded into does not have.
type UnknownField struct {
	// Path is the field's path, such as spec.ttlSecondsAfterEmtpy.
	Path string
	// DidYouMean is the name of the type's field at the same place that the unknown one is
	// likely a misspelling of (see Suggest), such as ttlSecondsAfterEmpty; "" when none is.
	DidYouMean string
}

// String describes the field as the strict decoder does: `unknown field "spec.foo"`.
func (f UnknownField) String() string { return fmt.Sprintf("unknown field %q", f.Path) }

// strictUnknownField matches the strict decoder's report of an unknown field.
var strictUnknownField = regexp.MustCompile(`^unknown field "(.*)"$`)

// DecodeStrict decodes the JSON document data into obj. Fields obj's type does not know do not
// stop the decoding: they are returned (sorted by path) for the caller to report, each with the
// known field it likely misspells. A malformed document, a value of the wrong type, or a field
// given twice, is an error.
func DecodeStrict(data []byte, obj runtime.Object) (unknown []UnknownField, err error) {
	_, _, err = strict.Decode(data, nil, obj)
	if err == nil {
		return nil, nil
	}
	strictErr, ok := runtime.AsStrictDecodingError(err)
	if !ok {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	for _, e := range strictErr.Errors() {
		m := strictUnknownField.FindStringSubmatch(e.Error())
		if m == nil {
			return nil, fmt.Errorf("decoding: %w", e)
		}
		unknown = append(unknown, UnknownField{Path: m[1], DidYouMean: misspelledField(reflect.TypeOf(obj), m[1])})
	}
	sort.Slice(unknown, func(i, j int) bool { return unknown[i].Path < unknown[j].Path })
	return unknown, nil
}

// misspelledField returns the JSON name of the field of t, at the place path names, that the
// last name of path likely misspells; "" when there is none.
func misspelledField(t reflect.Type, path string) string {
	segments, ok := yamlpath.Split(path)
	if !ok || len(segments) == 0 {
		return ""
	}
	for _, seg := range segments[:len(segments)-1] {
		t = derefType(t)
		if seg.Bracketed {
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Map {
				return ""
			}
			t = t.Elem()
			continue
		}
		t = elemType(t) // a list or map whose index the path leaves out
		if t.Kind() != reflect.Struct {
			return ""
		}
		f, ok := jsonField(t, seg.Name)
		if !ok {
			return ""
		}
		t = f.Type
	}
	t = elemType(t)
	if t.Kind() != reflect.Struct {
		return ""
	}
	return Suggest(segments[len(segments)-1].Name, jsonFieldNames(t))
}

// elemType is t without pointers, and the type of its elements when it is a list or a map.
func elemType(t reflect.Type) reflect.Type {
	t = derefType(t)
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = derefType(t.Elem())
	}
	return t
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonFieldNames lists the JSON names of a struct's fields, those of inlined structs included.
func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || (!f.IsExported() && !f.Anonymous):
		case name == "" && f.Anonymous && derefType(f.Type).Kind() == reflect.Struct:
			names = append(names, jsonFieldNames(derefType(f.Type))...)
		case name == "":
			names = append(names, f.Name)
		default:
			names = append(names, name)
		}
	}
	return names
}

// jsonField finds a struct's field by its JSON name, in inlined structs too.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name || (tag == "" && f.Name == name) {
			return f, true
		}
		if tag == "" && f.Anonymous && derefType(f.Type).Kind() == reflect.Struct {
			if inner, ok := jsonField(derefType(f.Type), name); ok {
				return inner, true
			}
		}
	}
	return reflect.StructField{}, false
}

// jsonTypeError matches encoding/json's message for a value of the wrong type (also used by
// the fork behind the strict decoder): what was found, the field's path and the Go type.
var jsonTypeError = regexp.MustCompile(`json: cannot unmarshal (.+?) into Go (?:struct field [^.\s]+\.(\S+)|value) of type (\S+)`)

// maxDecodeErrors bounds the fields DecodeErrors names in one document.
const maxDecodeErrors = 20

// DecodeErrors returns err, from decoding data into obj, and the errors of every other field
// of data that decode refuses, each as DecodeError words it: while the error names a field (a
// value of the wrong type, or one its type parses itself), the field is dropped from the
// document and decode, into a fresh value of obj's type, runs again. An error that names no
// field ends the list. So a document with three wrong values gets three errors, not the first.
func (s Source) DecodeErrors(err error, obj any, data []byte, decode func(data []byte, into any) error) []error {
	var errs []error
	t := reflect.TypeOf(obj)
	for len(errs) < maxDecodeErrors && err != nil {
		described, path := s.decodeError(err, obj, data)
		errs = append(errs, described)
		if path == "" || t == nil || t.Kind() != reflect.Pointer {
			break
		}
		var doc any
		decoder := json.NewDecoder(bytes.NewReader(data))
		decoder.UseNumber()
		if decoder.Decode(&doc) != nil {
			break
		}
		segments, ok := yamlpath.Split(path)
		if !ok || !dropField(doc, segments) {
			break
		}
		if data, err = json.Marshal(doc); err != nil {
			break
		}
		obj = reflect.New(t.Elem()).Interface()
		err = decode(data, obj)
	}
	return errs
}

// dropField removes the field the path's steps name from doc (decoded JSON), from every item
// of a list the path passes without an index (encoding/json's paths name no index); it reports
// whether it removed anything.
func dropField(doc any, path []yamlpath.Segment) bool {
	if len(path) == 0 {
		return false
	}
	seg, rest := path[0], path[1:]
	switch v := doc.(type) {
	case map[string]any:
		child, ok := v[seg.Name]
		if !ok {
			return false
		}
		if len(rest) == 0 {
			delete(v, seg.Name)
			return true
		}
		return dropField(child, rest)
	case []any:
		if seg.Bracketed {
			i, err := strconv.Atoi(seg.Name)
			if err != nil || i < 0 || i >= len(v) {
				return false
			}
			if len(rest) == 0 {
				v[i] = nil
				return true
			}
			return dropField(v[i], rest)
		}
		dropped := false
		for _, item := range v {
			dropped = dropField(item, path) || dropped
		}
		return dropped
	}
	return false
}

// DecodeError returns err, from decoding data (the document's JSON, or what was made of it)
// into obj, as an error naming the file and line, the object and the field: for a value of the
// wrong type (a string for a number, 4.5 or 1e20 for a whole number that must fit 32 or 64
// bits, a list for an object), what the field takes and what it holds; for a value a type
// parses itself (a quantity, a duration), the field that holds it, found by parsing each such
// value of data again. Other errors are prefixed with the document and object.
func (s Source) DecodeError(err error, obj any, data []byte) error {
	described, _ := s.decodeError(err, obj, data)
	return described
}

// decodeError is DecodeError, with the path of the field it names ("" for none).
func (s Source) decodeError(err error, obj any, data []byte) (error, string) {
	if m := jsonTypeError.FindStringSubmatch(err.Error()); m != nil {
		found, path, goType := m[1], m[2], m[3]
		if path == "" {
			return fmt.Errorf("%s: %s: want %s, got %s", s.At(""), s.Object(), describeGoType(goType), describeJSONValue(found)), ""
		}
		return fmt.Errorf("%s: %s: %s: want %s, got %s", s.At(path), s.Object(), path, describeGoType(goType), describeJSONValue(found)), path
	}
	var doc any
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.UseNumber()
	if obj != nil && decoder.Decode(&doc) == nil {
		if path, perr := unparsableValue(reflect.TypeOf(obj), doc, ""); path != "" {
			return fmt.Errorf("%s: %s: %s: %s", s.At(path), s.Object(), path, describeParseError(perr)), path
		}
	}
	return fmt.Errorf("%s: %s: %w", s, s.Object(), err), ""
}

// unparsableValue finds the first value of doc (decoded JSON) that a type of t's fields parses
// itself (a json.Unmarshaler such as resource.Quantity) and refuses; it returns the value's
// path and the type's error, or "".
func unparsableValue(t reflect.Type, doc any, path string) (string, error) {
	t = derefType(t)
	if doc == nil {
		return "", nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		raw, err := json.Marshal(doc)
		if err != nil {
			return "", nil
		}
		if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			return path, err
		}
		return "", nil
	}
	join := func(name string) string { return strings.TrimPrefix(path+"."+name, ".") }
	switch t.Kind() {
	case reflect.Struct:
		m, ok := doc.(map[string]any)
		if !ok {
			return "", nil
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			var p string
			var err error
			switch {
			case name == "-" || !f.IsExported():
				continue
			case name == "" && f.Anonymous:
				p, err = unparsableValue(f.Type, m, path)
			case name == "":
				p, err = unparsableValue(f.Type, m[f.Name], join(f.Name))
			default:
				p, err = unparsableValue(f.Type, m[name], join(name))
			}
			if p != "" {
				return p, err
			}
		}
	case reflect.Slice:
		list, ok := doc.([]any)
		if !ok {
			return "", nil
		}
		for i, item := range list {
			if p, err := unparsableValue(t.Elem(), item, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p, err
			}
		}
	case reflect.Map:
		m, ok := doc.(map[string]any)
		if !ok {
			return "", nil
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, err := unparsableValue(t.Elem(), m[k], path+"["+k+"]"); p != "" {
				return p, err
			}
		}
	}
	return "", nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// describeParseError says what a field parsed by its type takes, for the types whose own
// messages do not (a quantity's shows a regular expression, a duration's not the bound).
func describeParseError(err error) string {
	switch {
	case errors.Is(err, resource.ErrFormatWrong) || errors.Is(err, resource.ErrNumeric) || errors.Is(err, resource.ErrSuffix):
		return fmt.Sprintf("want a quantity such as 500m, 2, 1.5 or 4Gi (%v)", err)
	case strings.HasPrefix(err.Error(), "time: "):
		return fmt.Sprintf("want a duration such as 30s, 5m or 720h (units h, m, s, ms), of at most %s (%v)", time.Duration(math.MaxInt64).Truncate(time.Second), err)
	}
	return err.Error()
}

// describeGoType says in words what values a Go type takes.
func describeGoType(t string) string {
	t = strings.TrimLeft(t, "*")
	switch t {
	case "int8", "int16", "int32", "int64", "int", "uint8", "uint16", "uint32", "uint64", "uint":
		bits := 64
		if n, err := strconv.Atoi(strings.TrimLeft(t, "uint")); err == nil {
			bits = n
		}
		if strings.HasPrefix(t, "u") {
			return fmt.Sprintf("a whole number from 0 to %d", uint64(math.MaxUint64)>>(64-bits))
		}
		return fmt.Sprintf("a whole number from %d to %d", int64(math.MinInt64)>>(64-bits), int64(math.MaxInt64)>>(64-bits))
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	if strings.HasPrefix(t, "[]") {
		return "a list"
	}
	return "an object"
}

// describeJSONValue says in words what encoding/json found ("number 4.5", "string", "array").
func describeJSONValue(v string) string {
	switch {
	case strings.HasPrefix(v, "number "):
		return strings.TrimPrefix(v, "number ")
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "bool":
		return "true or false"
	case v == "string", v == "number":
		return "a " + v
	}
	return v
}
