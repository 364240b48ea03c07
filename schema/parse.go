package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Parse decodes a schema from JSON. Property order is kept as written (PropertyOrder), so the model
// sees the properties in the author's order. Parse does not judge the schema; Check does.
func Parse(data []byte) (*Schema, error) {
	var s Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("schema: invalid JSON Schema: %w", err)
	}
	keepOrder(&s, data, 0)
	return &s, nil
}

// FromMap converts a decoded JSON or YAML value (a map of strings to JSON-like values) into a
// schema. A Go map has no order, so properties end up sorted by name; to keep the author's order,
// convert YAML to JSON bytes and use Parse.
func FromMap(m map[string]any) (*Schema, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("schema: not a JSON value: %w", err)
	}
	return Parse(data)
}

// maxOrderDepth bounds how deep keepOrder looks, so hostile nesting cannot make Parse quadratic.
const maxOrderDepth = 64

// keepOrder sets PropertyOrder on s and its subschemas from the key order in raw.
func keepOrder(s *Schema, raw []byte, depth int) {
	if s == nil || depth > maxOrderDepth {
		return
	}
	_, vals := entries(raw)
	if vals == nil {
		return
	}
	if p, ok := vals["properties"]; ok && s.Properties != nil {
		keys, pvals := entries(p)
		s.PropertyOrder = nil
		for _, k := range keys {
			if !contains(s.PropertyOrder, k) {
				s.PropertyOrder = append(s.PropertyOrder, k)
			}
		}
		for k, v := range pvals {
			keepOrder(s.Properties[k], v, depth+1)
		}
	}
	if v, ok := vals["items"]; ok {
		keepOrder(s.Items, v, depth+1)
	}
	if v, ok := vals["additionalProperties"]; ok {
		keepOrder(s.AdditionalProperties, v, depth+1)
	}
	for _, kw := range [...]string{"anyOf", "oneOf"} {
		v, ok := vals[kw]
		if !ok {
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil {
			continue
		}
		branches := s.AnyOf
		if kw == "oneOf" {
			branches = s.OneOf
		}
		for i, b := range list {
			if i < len(branches) {
				keepOrder(branches[i], b, depth+1)
			}
		}
	}
	for _, kw := range [...]string{"$defs", "definitions"} {
		if v, ok := vals[kw]; ok {
			defs := s.Defs
			if kw == "definitions" {
				defs = s.Definitions
			}
			_, dvals := entries(v)
			for k, d := range dvals {
				keepOrder(defs[k], d, depth+1)
			}
		}
	}
}

// entries returns the keys of a JSON object in document order and its values by key (nil if raw is
// not an object).
func entries(raw []byte) ([]string, map[string]json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, nil
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil
		}
		k, ok := tok.(string)
		if !ok {
			return nil, nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil
		}
		keys = append(keys, k)
		vals[k] = v
	}
	return keys, vals
}
