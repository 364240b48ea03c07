package dispatch

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// ArgumentsText returns a call's arguments as the model wrote them, trimmed ("{}" for none), or
// the error result's text when they are over weft.MaxToolArgumentsBytes.
func ArgumentsText(args string) (text, errText string) {
	text = strings.TrimSpace(args)
	if text == "" {
		text = "{}"
	}
	if len(text) > weft.MaxToolArgumentsBytes {
		return "", fmt.Sprintf("Tool arguments are %s; the limit is %s. Pass large content in a file instead.",
			weft.ByteSize(int64(len(text))), weft.ByteSize(weft.MaxToolArgumentsBytes))
	}
	return text, ""
}

// Arguments decodes a call of tool name's arguments text (ArgumentsText's) and validates them
// against params, compiled by compile. bindings, when set, name for parameters the prompt
// arguments (promptArgs) that give their values. strict: a null stands for an absent optional
// property. A non-empty errText is the call's error result.
func Arguments(name, text string, params *schema.Schema, compile func(*schema.Schema) (*schema.Validator, error),
	bindings map[string]string, promptArgs map[string]any, strict bool) (args map[string]any, errText string) {
	if d := weft.JSONDepth([]byte(text)); d > weft.MaxToolArgumentsDepth {
		return nil, fmt.Sprintf("Tool arguments nest %d levels deep; the limit is %d.", d, weft.MaxToolArgumentsDepth)
	}
	var decoded any
	if err := json.Unmarshal([]byte(text), &decoded); err != nil {
		return nil, "Tool arguments are not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
	}
	if decoded == nil {
		decoded = map[string]any{}
	}
	if obj, ok := decoded.(map[string]any); ok {
		for param, arg := range bindings {
			if val, ok := promptArgs[arg]; ok {
				obj[param] = val
			}
		}
	}
	if strict {
		decoded = schema.DropNulls(params, decoded)
	}
	v, err := compile(params)
	if err != nil {
		return nil, fmt.Sprintf("Tool %q has an invalid argument schema: %v", name, err)
	}
	out, err := v.Validate(decoded)
	if err != nil {
		return nil, "Tool argument validation failed: " + err.Error()
	}
	m, _ := out.(map[string]any)
	return m, ""
}
