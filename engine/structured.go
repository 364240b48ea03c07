package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// structuredAttempts bounds the tries of a structured answer: the first and two corrected ones.
const structuredAttempts = 3

// parseStructured reads a structured answer: a JSON object (a Markdown code fence around it is
// tolerated), validated against the prompt's output schema with its defaults applied.
func (r *run) parseStructured(p *weft.Prompt, text string) (any, error) {
	raw := strings.TrimSpace(text)
	if strings.HasPrefix(raw, "```") {
		raw = strings.TrimPrefix(raw, "```json")
		raw = strings.TrimPrefix(raw, "```")
		raw = strings.TrimSuffix(strings.TrimSpace(raw), "```")
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return nil, fmt.Errorf("the answer has text after its JSON value")
	}
	val, err := r.e.validator(p.OutputSchema)
	if err != nil {
		return nil, err
	}
	// Strict structured output (OpenAI) sends optional properties as null: they are absent.
	v = schema.DropNulls(p.OutputSchema, v)
	out, err := val.Validate(v)
	if err != nil {
		return nil, fmt.Errorf("the answer does not match the output schema: %w", err)
	}
	return out, nil
}

// structuredNote is the corrective note an invalid structured answer is retried with.
func structuredNote(err error) string {
	return "Your answer was not accepted: " + err.Error() + ". Answer again with only a JSON object that matches the output schema."
}

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
