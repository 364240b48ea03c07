package engine

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
)

// canonicalJSON encodes a structured value compactly (the form a sub-prompt returns it in).
func canonicalJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// redactValue returns a JSON value with the thread's secrets replaced in every string.
func (r *run) redactValue(v any) any {
	switch x := v.(type) {
	case string:
		return r.red.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.red.String(k)] = r.redactValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.redactValue(e)
		}
		return out
	}
	return v
}

// redactCalls returns the calls as they are stored: arguments with the thread's secrets replaced
// (a model that was shown a secret must not get it written to disk). The calls run with the
// arguments as the model sent them; calls is returned as is when nothing needs replacing.
func (r *run) redactCalls(calls []weft.ToolCall) []weft.ToolCall {
	var out []weft.ToolCall
	for i, c := range calls {
		if red := r.red.String(c.Arguments); red != c.Arguments {
			if out == nil {
				out = slices.Clone(calls)
			}
			out[i].Arguments = red
		}
	}
	if out == nil {
		return calls
	}
	return out
}
