package modelcall

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// structuredAttempts bounds the tries of a structured answer: the first and two corrected ones.
const structuredAttempts = 3

// parseStructured reads a structured answer: a JSON object (a Markdown code fence around it is
// tolerated), validated against the prompt's output schema with its defaults applied.
func (ms *Models) parseStructured(p *weft.Prompt, text string) (any, error) {
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
	val, err := ms.Validator(p.OutputSchema)
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
