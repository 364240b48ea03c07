package gemini

import (
	"encoding/json"

	"github.com/weft-agents/weft"
)

// schemaKeys are the JSON Schema keywords Gemini's OpenAPI-subset Schema accepts; other keywords
// (additionalProperties, $schema, $ref, const, oneOf, patternProperties, …) are dropped or
// rewritten.
var schemaKeys = map[string]bool{"type": true, "format": true, "title": true, "description": true,
	"nullable": true, "enum": true, "properties": true, "required": true, "items": true,
	"minItems": true, "maxItems": true, "minimum": true, "maximum": true, "minLength": true,
	"maxLength": true, "pattern": true, "minProperties": true, "maxProperties": true,
	"anyOf": true, "default": true, "propertyOrdering": true}

// maxSchemaDepth bounds the translation of hostile schemas.
const maxSchemaDepth = 32

// translateSchema turns a tool's JSON Schema into Gemini's parameter schema. A root object without
// properties yields nil: Gemini rejects an OBJECT with empty properties, and a function without
// parameters simply omits them.
func translateSchema(s *weft.Schema) (map[string]any, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	out := translateNode(m, 0)
	if out == nil {
		return nil, nil
	}
	if props, ok := out["properties"].(map[string]any); (!ok || len(props) == 0) && (out["type"] == "object" || out["type"] == nil) {
		return nil, nil
	}
	return out, nil
}

// translateNode translates one schema object.
func translateNode(in map[string]any, depth int) map[string]any {
	if in == nil || depth > maxSchemaDepth {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				if t == "null" {
					out["nullable"] = true
				} else {
					out["type"] = t
				}
			case []any:
				var types []string
				for _, x := range t {
					if s, ok := x.(string); ok {
						if s == "null" {
							out["nullable"] = true
						} else {
							types = append(types, s)
						}
					}
				}
				switch len(types) {
				case 0:
				case 1:
					out["type"] = types[0]
				default:
					alts := make([]any, len(types))
					for i, s := range types {
						alts[i] = map[string]any{"type": s}
					}
					out["anyOf"] = alts
				}
			}
		case "properties":
			if props, ok := v.(map[string]any); ok {
				tp := make(map[string]any, len(props))
				for name, p := range props {
					pm, _ := p.(map[string]any)
					if t := translateNode(pm, depth+1); t != nil {
						tp[name] = t
					} else {
						tp[name] = map[string]any{}
					}
				}
				if len(tp) > 0 {
					out["properties"] = tp
				}
			}
		case "items":
			switch it := v.(type) {
			case map[string]any:
				if t := translateNode(it, depth+1); t != nil {
					out["items"] = t
				}
			case []any: // tuple form: the first schema stands for all
				if len(it) > 0 {
					if pm, ok := it[0].(map[string]any); ok {
						if t := translateNode(pm, depth+1); t != nil {
							out["items"] = t
						}
					}
				}
			}
		case "anyOf", "oneOf":
			list, _ := v.([]any)
			var alts []any
			for _, a := range list {
				am, _ := a.(map[string]any)
				if am["type"] == "null" && len(am) == 1 {
					out["nullable"] = true
					continue
				}
				if t := translateNode(am, depth+1); t != nil {
					alts = append(alts, t)
				}
			}
			switch len(alts) {
			case 0:
			case 1: // {anyOf: [X, null]} is a nullable X
				for ak, av := range alts[0].(map[string]any) {
					if _, set := out[ak]; !set {
						out[ak] = av
					}
				}
			default:
				out["anyOf"] = alts
			}
		case "enum":
			// Gemini enums are strings only; other enums are dropped.
			list, _ := v.([]any)
			strs := make([]any, 0, len(list))
			for _, e := range list {
				if s, ok := e.(string); ok {
					strs = append(strs, s)
				} else if e == nil {
					out["nullable"] = true
				} else {
					strs = nil
					break
				}
			}
			if len(strs) > 0 {
				out["enum"] = strs
			}
		case "const":
			if s, ok := v.(string); ok {
				out["enum"] = []any{s}
			}
		default:
			if schemaKeys[k] {
				out[k] = v
			}
		}
	}
	if _, ok := out["enum"]; ok && out["type"] == nil {
		out["type"] = "string"
	}
	if req, ok := out["required"].([]any); ok {
		props, _ := out["properties"].(map[string]any)
		kept := make([]any, 0, len(req))
		for _, r := range req {
			if s, ok := r.(string); ok && props[s] != nil {
				kept = append(kept, r)
			}
		}
		if len(kept) > 0 {
			out["required"] = kept
		} else {
			delete(out, "required")
		}
	}
	return out
}
