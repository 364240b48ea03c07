package schema

import (
	"encoding/json"
	"math"
)

// quick accepts instances of the schema most tools have — an object whose properties are
// strings, integers, numbers or booleans, some required, others perhaps closed off — without the
// general validator, which costs a tool call about ten times as much. It only ever accepts: a
// value it does not accept, and every schema outside that shape, goes to the general validator,
// which alone decides failures and words them. So a quick acceptance must be one the general
// validator makes too (TestQuickAgrees, FuzzQuickAgrees).
type quick struct {
	props    map[string]quickKind
	required []string
	closed   bool // additionalProperties: false
}

type quickKind uint8

const (
	quickString quickKind = iota + 1
	quickInteger
	quickNumber
	quickBoolean
)

// quickAnnotations are keywords that never affect validation (format is an annotation in the
// 2020-12 dialect Compile uses).
var quickAnnotations = map[string]bool{"title": true, "description": true, "$comment": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "format": true}

// quickOf returns the quick form of a schema's JSON encoding, nil when the schema is not of that
// shape.
func quickOf(doc []byte) *quick {
	var root map[string]any
	if json.Unmarshal(doc, &root) != nil {
		return nil
	}
	q := &quick{props: map[string]quickKind{}}
	for k, v := range root {
		switch k {
		case "type":
			if v != "object" {
				return nil
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, p := range props {
				kind := quickLeaf(p)
				if kind == 0 {
					return nil
				}
				q.props[name] = kind
			}
		case "required":
			names, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, n := range names {
				s, ok := n.(string)
				if !ok {
					return nil
				}
				q.required = append(q.required, s)
			}
		case "additionalProperties":
			switch v {
			case false:
				q.closed = true
			case true:
			default:
				return nil
			}
		default:
			if !quickAnnotations[k] {
				return nil
			}
		}
	}
	if root["type"] != "object" {
		return nil
	}
	return q
}

// quickLeaf returns the kind of a property schema, 0 when it is not a plain typed leaf.
func quickLeaf(v any) quickKind {
	m, ok := v.(map[string]any)
	if !ok {
		return 0
	}
	var kind quickKind
	for k, x := range m {
		if k == "type" {
			switch x {
			case "string":
				kind = quickString
			case "integer":
				kind = quickInteger
			case "number":
				kind = quickNumber
			case "boolean":
				kind = quickBoolean
			default:
				return 0
			}
		} else if !quickAnnotations[k] {
			return 0
		}
	}
	return kind
}

// accepts reports whether args (plain JSON values, as Validate has them) is certainly valid.
// Numbers are float64 (as encoding/json decodes them) or Go integers.
func (q *quick) accepts(args any) bool {
	m, ok := args.(map[string]any)
	if !ok {
		return false
	}
	for _, name := range q.required {
		if _, ok := m[name]; !ok {
			return false
		}
	}
	for name, v := range m {
		kind, ok := q.props[name]
		if !ok {
			if q.closed {
				return false
			}
			continue
		}
		if !kind.accepts(v) {
			return false
		}
	}
	return true
}

func (k quickKind) accepts(v any) bool {
	switch k {
	case quickString:
		_, ok := v.(string)
		return ok
	case quickBoolean:
		_, ok := v.(bool)
		return ok
	case quickInteger, quickNumber:
		switch n := v.(type) {
		case float64: // finite, and for an integer without a fractional part
			return !math.IsInf(n, 0) && !math.IsNaN(n) && (k == quickNumber || n == math.Trunc(n))
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			return true
		}
	}
	return false // json.Number too: the general validator decides it as before
}
