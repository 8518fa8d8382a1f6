package validation

import (
	"encoding/json"
	"fmt"
	"math"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// jsonObject deep-copies obj into the values the API server gets when it decodes a JSON body:
// maps, slices, strings, booleans, nil, int64 for whole numbers and float64 for the others.
// Objects read from YAML (sigs.k8s.io/yaml turns every number into a float64) or built by hand
// (int, []string, ...) thus validate as they would once sent: the schema, the CEL rules and the
// scale subresource all tell integers from floats.
func jsonObject(obj map[string]any) (map[string]any, error) {
	out, err := jsonValue(obj)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

func jsonValue(v any) (any, error) {
	switch t := v.(type) {
	case nil, string, bool, int64:
		return t, nil
	case float64:
		return wholeToInt(t), nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, err := jsonValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			c, err := jsonValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = c
		}
		return out, nil
	case int:
		return int64(t), nil
	case int32:
		return int64(t), nil
	case float32:
		return wholeToInt(float64(t)), nil
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i, nil
		}
		f, err := t.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %q: %w", t, err)
		}
		return f, nil
	default:
		// Anything else ([]string, map[string]string, structs, other integer types): through
		// JSON, as a client would send it.
		data, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("encoding a %T: %w", t, err)
		}
		var out any
		if err := utiljson.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("decoding a %T: %w", t, err)
		}
		return out, nil
	}
}

// wholeToInt returns f as an int64 when it is a whole number int64 holds exactly, as the
// server's JSON decoder reads such a number.
func wholeToInt(f float64) any {
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		return int64(f)
	}
	return f
}
