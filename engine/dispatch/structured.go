package dispatch

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/weft-agents/weft/engine/redact"
)

// CanonicalJSON encodes a structured value compactly (the form a sub-prompt returns it in).
func CanonicalJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// RedactValue returns a JSON value with red's secrets replaced in every string.
func RedactValue(red *redact.Redactor, v any) any {
	switch x := v.(type) {
	case string:
		return red.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[red.String(k)] = RedactValue(red, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = RedactValue(red, e)
		}
		return out
	}
	return v
}
