package schema

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
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
	// bits numbers the properties (one bit each, up to 64), requiredBits the required ones: what
	// AcceptsJSON checks a member off against.
	bits         map[string]uint64
	requiredBits uint64
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
	if len(q.props) <= 64 {
		q.bits = make(map[string]uint64, len(q.props))
		for name := range q.props {
			q.bits[name] = 1 << len(q.bits)
		}
		for _, name := range q.required {
			bit, ok := q.bits[name]
			if !ok {
				// Required but not declared: any value of any type satisfies it; leave such
				// objects to the decoding path (AcceptsJSON takes declared names only).
				bit = 1 << 63
				if len(q.bits) == 64 {
					q.bits = nil
					break
				}
			}
			q.requiredBits |= bit
		}
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

// AcceptsJSON reports whether raw, the arguments as the model wrote them, is certainly valid
// against the schema and says exactly what its decoding says: a JSON object whose every member is
// a declared property of the quick shape, each named once, without escapes in the names, with a
// value of the property's type — strings of valid UTF-8, finite numbers, integers without a
// fraction or exponent — and every required property present. Such raw can be handed to the tool
// as it is, without decoding, validating and encoding it again. false means nothing: Validate
// decides. It is false for every schema without a quick form.
func (v *Validator) AcceptsJSON(raw string) bool {
	q := v.quick
	if q == nil || q.bits == nil {
		return false
	}
	var seen uint64
	flat := ScanFlatObject(raw, func(name, value string) bool {
		bit, ok := q.bits[name]
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return q.props[name].acceptsText(value)
	})
	return flat && seen&q.requiredBits == q.requiredBits
}

// acceptsText reports whether a scalar's JSON text (as ScanFlatObject gives it) is certainly a
// valid instance of kind k, decoded exactly: any string; true or false; an integer of at most 15
// digits without fraction or exponent (exact in the float64 encoding/json decodes it to); a number
// within float64's range.
func (k quickKind) acceptsText(value string) bool {
	switch k {
	case quickString:
		return value[0] == '"'
	case quickBoolean:
		return value == "true" || value == "false"
	case quickInteger:
		return isNumberText(value) && !strings.ContainsAny(value, ".eE") && len(strings.TrimPrefix(value, "-")) <= 15
	case quickNumber:
		if !isNumberText(value) {
			return false
		}
		f, err := strconv.ParseFloat(value, 64)
		return err == nil && !math.IsInf(f, 0) // out of float64's range: encoding/json refuses it
	}
	return false
}
