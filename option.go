package weft

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Option returns a request option, falling back to the model's providerOptions.
func (r *Request) Option(key string) any {
	if v, ok := r.Options[key]; ok {
		return v
	}
	if r.Model != nil {
		if v, ok := r.Model.ProviderOptions[key]; ok {
			return v
		}
	}
	return nil
}

// OptionNumber reads the first present numeric option of keys: numbers of any Go type, JSON
// numbers and numeric strings.
func OptionNumber(opts map[string]any, keys ...string) (float64, bool) {
	for _, k := range keys {
		v, ok := opts[k]
		if !ok || v == nil {
			continue
		}
		switch x := v.(type) {
		case float64:
			return x, true
		case float32:
			return float64(x), true
		case int:
			return float64(x), true
		case int64:
			return float64(x), true
		case uint64:
			return float64(x), true
		case json.Number:
			if f, err := x.Float64(); err == nil {
				return f, true
			}
		case string:
			if f, err := strconv.ParseFloat(x, 64); err == nil && !math.IsNaN(f) {
				return f, true
			}
		}
	}
	return 0, false
}

// OptionStrings reads the first present option of keys that is a string or a list of strings
// (stop sequences and the like).
func OptionStrings(opts map[string]any, keys ...string) []string {
	for _, k := range keys {
		switch x := opts[k].(type) {
		case string:
			if x != "" {
				return []string{x}
			}
		case []string:
			return x
		case []any:
			out := make([]string, 0, len(x))
			for _, s := range x {
				out = append(out, fmt.Sprint(s))
			}
			return out
		}
	}
	return nil
}
