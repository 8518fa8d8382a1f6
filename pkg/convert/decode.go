package convert

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// strict decodes JSON into objects directly (no scheme: nothing is registered, so the serializer
// fills the given object) and reports unknown and duplicate fields instead of dropping them
// silently.
var strict = serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory,
	runtime.NewScheme(), runtime.NewScheme(), serializerjson.SerializerOptions{Strict: true})

// DecodeStrict decodes the JSON document data into obj. Fields obj's type does not know, and
// fields given twice, do not stop the decoding: they are returned as problems (such as
// `unknown field "spec.foo"`, sorted) for the caller to report. A malformed document, or a value
// of the wrong type, is an error.
func DecodeStrict(data []byte, obj runtime.Object) (problems []string, err error) {
	_, _, err = strict.Decode(data, nil, obj)
	if err == nil {
		return nil, nil
	}
	if strictErr, ok := runtime.AsStrictDecodingError(err); ok {
		for _, e := range strictErr.Errors() {
			problems = append(problems, e.Error())
		}
		sort.Strings(problems)
		return problems, nil
	}
	return nil, fmt.Errorf("decoding: %w", err)
}
