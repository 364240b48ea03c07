package dispatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/schema"
)

// StructuredAttempts bounds the tries of a structured answer: the first and two corrected ones.
const StructuredAttempts = 3

// ParseStructured reads a structured answer: a JSON object (a Markdown code fence around it is
// tolerated), validated against out (the prompt's output schema, compiled by compile) with its
// defaults applied.
func ParseStructured(compile func(*schema.Schema) (*schema.Validator, error), out *schema.Schema, text string) (any, error) {
	raw := strings.TrimSpace(text)
	if strings.HasPrefix(raw, "```") {
		raw = strings.TrimPrefix(raw, "```json")
		raw = strings.TrimPrefix(raw, "```")
		raw = strings.TrimSuffix(strings.TrimSpace(raw), "```")
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var val any
	if err := dec.Decode(&val); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return nil, fmt.Errorf("the answer has text after its JSON value")
	}
	v, err := compile(out)
	if err != nil {
		return nil, err
	}
	// Strict structured output (OpenAI) sends optional properties as null: they are absent.
	val = schema.DropNulls(out, val)
	got, err := v.Validate(val)
	if err != nil {
		return nil, fmt.Errorf("the answer does not match the output schema: %w", err)
	}
	return got, nil
}

// StructuredNote is the corrective note an invalid structured answer is retried with.
func StructuredNote(err error) string {
	return "Your answer was not accepted: " + err.Error() + ". Answer again with only a JSON object that matches the output schema."
}

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

// RedactCalls returns the calls as they are stored: arguments with red's secrets replaced (a model
// that was shown a secret must not get it written to disk). The calls run with the arguments as
// the model sent them; calls is returned as is when nothing needs replacing.
func RedactCalls(red *redact.Redactor, calls []weft.ToolCall) []weft.ToolCall {
	var out []weft.ToolCall
	for i, c := range calls {
		if r := red.String(c.Arguments); r != c.Arguments {
			if out == nil {
				out = slices.Clone(calls)
			}
			out[i].Arguments = r
		}
	}
	if out == nil {
		return calls
	}
	return out
}
