// Package schema holds Weft's argument schemas: the JSON Schema (2020-12 subset) that tools and
// prompts called as tools declare for their arguments. It builds schemas (from Go structs or with
// small builder functions), checks them against Weft's subset, validates arguments (applying
// defaults first) and exports the strict forms providers want.
//
// The schema type is google's jsonschema.Schema; validation runs on santhosh-tekuri/jsonschema.
package schema

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema is a JSON Schema. It is an alias of google's type so that schemas move freely between
// Weft, the MCP SDK and anything else built on it.
type Schema = jsonschema.Schema

// MaxDepth is the deepest nesting Check accepts (as Depth counts it): deep enough for any real tool
// (depth 7 must work), shallow enough to keep hostile schemas cheap.
const MaxDepth = 16

// Problem is one defect in a schema definition, found by Check.
type Problem struct {
	// Path is a dotted path relative to the schema root, e.g. "properties.query.type" or
	// "properties.tags.items"; "" is the root itself.
	Path string
	// Message says what is wrong, naming the keyword or value.
	Message string
}

// String renders the problem as "path: message" ("(root)" for the root) for error texts.
func (p Problem) String() string {
	path := p.Path
	if path == "" {
		path = "(root)"
	}
	return path + ": " + p.Message
}

// NoArgs is the schema offered for a tool without arguments, which itself has no args schema:
// {"type":"object","properties":{}}.
func NoArgs() *Schema {
	return &Schema{Type: "object", Properties: map[string]*Schema{}}
}

// isEmpty reports whether s is the empty schema (JSON `true` or `{}`), which accepts anything.
func isEmpty(s *Schema) bool {
	return s != nil && reflect.ValueOf(s).Elem().IsZero()
}

// isFalse reports whether s is the schema that accepts nothing (JSON `false`), which google's type
// represents as {"not": {}}.
func isFalse(s *Schema) bool {
	if s == nil || s.Not == nil || !isEmpty(s.Not) {
		return false
	}
	c := *s
	c.Not = nil
	return isEmpty(&c)
}

// falseSchema returns a new schema that accepts nothing.
func falseSchema() *Schema { return &Schema{Not: &Schema{}} }

// isRecord reports whether an object schema's additionalProperties makes it a record: a schema
// (or explicit `true`) for the values of keys not declared in properties.
func isRecord(s *Schema) bool {
	return s.AdditionalProperties != nil && !isFalse(s.AdditionalProperties)
}

// hasType reports whether s's type (single or list) names t.
func hasType(s *Schema, t string) bool {
	if s.Type != "" {
		return s.Type == t
	}
	for _, x := range s.Types {
		if x == t {
			return true
		}
	}
	return false
}

// isObject reports whether s describes objects: type object (possibly nullable) or, untyped, with
// properties or a record value schema.
func isObject(s *Schema) bool {
	if s.Type != "" || len(s.Types) > 0 {
		return hasType(s, "object")
	}
	return s.Properties != nil || (s.AdditionalProperties != nil && !isFalse(s.AdditionalProperties))
}

// defsOf returns the root definitions ($defs, or draft-07 definitions).
func defsOf(root *Schema) map[string]*Schema {
	if root == nil {
		return nil
	}
	if root.Defs != nil {
		return root.Defs
	}
	return root.Definitions
}

// refName returns the definition named by a local $ref ("#/$defs/x" or "#/definitions/x").
func refName(ref string) (string, bool) {
	var name string
	switch {
	case strings.HasPrefix(ref, "#/$defs/"):
		name = ref[len("#/$defs/"):]
	case strings.HasPrefix(ref, "#/definitions/"):
		name = ref[len("#/definitions/"):]
	default:
		return "", false
	}
	if name == "" || strings.Contains(name, "/") {
		return "", false
	}
	if strings.Contains(name, "~") {
		name = strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
	}
	if strings.Contains(name, "%") {
		if u, err := unescapePercent(name); err == nil {
			name = u
		}
	}
	return name, true
}

// unescapePercent decodes %XX escapes of a URI fragment.
func unescapePercent(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("bad escape")
		}
		var v byte
		for _, c := range []byte{s[i+1], s[i+2]} {
			switch {
			case c >= '0' && c <= '9':
				v = v<<4 | (c - '0')
			case c >= 'a' && c <= 'f':
				v = v<<4 | (c - 'a' + 10)
			case c >= 'A' && c <= 'F':
				v = v<<4 | (c - 'A' + 10)
			default:
				return "", fmt.Errorf("bad escape")
			}
		}
		b.WriteByte(v)
		i += 2
	}
	return b.String(), nil
}

// resolver follows local $refs through the root definitions, with a bound so that recursive
// definitions cannot loop.
type resolver struct{ defs map[string]*Schema }

// resolve follows s's $ref chain to a schema without $ref (or the last one it can reach).
func (r resolver) resolve(s *Schema) *Schema {
	for i := 0; s != nil && s.Ref != "" && i < 64; i++ {
		name, ok := refName(s.Ref)
		if !ok {
			return s
		}
		t := r.defs[name]
		if t == nil {
			return s
		}
		s = t
	}
	return s
}
