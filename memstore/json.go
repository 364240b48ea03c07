package memstore

import (
	"encoding/json"
	"fmt"
	"math"
)

// normJSONMap returns a deep copy of m holding only what a JSON round trip yields (map[string]any,
// []any, string, float64, bool, nil), so that every back end returns the same values. nil stays nil.
func normJSONMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	v, err := normJSON(m)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func normJSON(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("unsupported JSON number %v", x)
		}
		return x, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case json.Number:
		return x.Float64()
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normJSON(e)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normJSON(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}
