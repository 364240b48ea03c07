package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
)

// Builders for schemas made in Go at run time (`weft.Schema`). They are plain
// functions because Schema is an alias of a foreign type and cannot carry methods. Each returns a
// new schema; the wrappers (Nullable, Describe, WithDefault) copy their input rather than change it.

// Prop is one property of an Object: its name, its schema and whether it may be absent.
type Prop struct {
	// Name is the JSON property name.
	Name string
	// Schema is the property's schema; nil means any value.
	Schema *Schema
	// Optional leaves the property out of `required`; properties are required by default.
	Optional bool
}

// Field declares a required property.
func Field(name string, s *Schema) Prop { return Prop{Name: name, Schema: s} }

// OptionalField declares a property that may be absent (Zod's .optional()).
func OptionalField(name string, s *Schema) Prop {
	return Prop{Name: name, Schema: s, Optional: true}
}

// Object builds an object schema whose properties keep the given order when marshalled.
func Object(props ...Prop) *Schema {
	s := &Schema{Type: "object", Properties: make(map[string]*Schema, len(props))}
	for _, p := range props {
		ps := p.Schema
		if ps == nil {
			ps = &Schema{}
		}
		if _, dup := s.Properties[p.Name]; !dup {
			s.PropertyOrder = append(s.PropertyOrder, p.Name)
		}
		s.Properties[p.Name] = ps
		if !p.Optional && !contains(s.Required, p.Name) {
			s.Required = append(s.Required, p.Name)
		}
	}
	return s
}

// String builds a string schema.
func String() *Schema { return &Schema{Type: "string"} }

// Number builds a number schema (any JSON number).
func Number() *Schema { return &Schema{Type: "number"} }

// Integer builds an integer schema.
func Integer() *Schema { return &Schema{Type: "integer"} }

// Boolean builds a boolean schema.
func Boolean() *Schema { return &Schema{Type: "boolean"} }

// Null builds a schema accepting only null (Zod's z.null()).
func Null() *Schema { return &Schema{Type: "null"} }

// Array builds an array schema whose items match items (nil: any items).
func Array(items *Schema) *Schema {
	if items == nil {
		items = &Schema{}
	}
	return &Schema{Type: "array", Items: items}
}

// Record builds an object with arbitrary keys whose values match values (Zod's z.record()).
func Record(values *Schema) *Schema {
	if values == nil {
		values = &Schema{}
	}
	return &Schema{Type: "object", AdditionalProperties: values}
}

// Enum builds a schema accepting exactly the given values (Zod's z.enum()); the type is set when
// all values share one JSON type, which providers' strict modes want.
func Enum(values ...any) *Schema {
	s := &Schema{Enum: append([]any{}, values...)}
	s.Type = commonType(values)
	return s
}

// Literal builds a schema accepting exactly v (Zod's z.literal()).
func Literal(v any) *Schema {
	s := &Schema{Const: &v}
	s.Type = commonType([]any{v})
	return s
}

// Union builds a schema accepting any of the branches (Zod's z.union(), JSON Schema anyOf).
func Union(branches ...*Schema) *Schema {
	return &Schema{AnyOf: append([]*Schema{}, branches...)}
}

// Nullable returns a copy of s that also accepts null (Zod's .nullable()): "null" joins the type
// list when s has a simple type, otherwise s is wrapped in anyOf with {"type":"null"}.
func Nullable(s *Schema) *Schema {
	if s == nil {
		return &Schema{}
	}
	return nullable(s, resolver{})
}

// Describe returns a copy of s with its description set (Zod's .describe()); descriptions reach
// the model with the tool definition.
func Describe(s *Schema, d string) *Schema {
	c := shallow(s)
	c.Description = d
	return c
}

// WithDefault returns a copy of s with a default value (Zod's .default()), applied by Validate when
// the property is absent. It panics if v cannot be encoded as JSON, as that is a programming error.
func WithDefault(s *Schema, v any) *Schema {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("schema.WithDefault: %v", err))
	}
	c := shallow(s)
	c.Default = raw
	return c
}

// shallow copies s's top level (a nil s becomes the empty schema).
func shallow(s *Schema) *Schema {
	if s == nil {
		return &Schema{}
	}
	c := *s
	return &c
}

// nullable returns a schema accepting what s accepts and null, sharing s's children.
func nullable(s *Schema, r resolver) *Schema {
	if acceptsNull(s, r) {
		return s
	}
	c := *s
	switch {
	case s.Const != nil || s.Ref != "":
		// wrap below
	case s.Type != "":
		c.Types = []string{s.Type, "null"}
		c.Type = ""
		if c.Enum != nil {
			c.Enum = append(append([]any{}, c.Enum...), nil)
		}
		return &c
	case len(s.Types) > 0:
		c.Types = append(append([]string{}, s.Types...), "null")
		if c.Enum != nil {
			c.Enum = append(append([]any{}, c.Enum...), nil)
		}
		return &c
	case s.Enum != nil && len(s.AnyOf) == 0 && len(s.OneOf) == 0:
		c.Enum = append(append([]any{}, c.Enum...), nil)
		return &c
	case len(s.AnyOf) > 0 && len(s.OneOf) == 0 && s.Enum == nil:
		c.AnyOf = append(append([]*Schema{}, s.AnyOf...), Null())
		return &c
	}
	// Wrap, moving the annotations to the wrapper where the model reads them.
	inner := c
	inner.Description, inner.Title, inner.Default = "", "", nil
	return &Schema{
		AnyOf:       []*Schema{&inner, Null()},
		Description: s.Description,
		Title:       s.Title,
		Default:     s.Default,
	}
}

// acceptsNull reports whether null is a valid instance of s (for the subset's keywords).
func acceptsNull(s *Schema, r resolver) bool {
	s = r.resolve(s)
	if s == nil {
		return true
	}
	if isFalse(s) || s.Ref != "" {
		return false
	}
	if (s.Type != "" || len(s.Types) > 0) && !hasType(s, "null") {
		return false
	}
	if s.Enum != nil && !contains(s.Enum, nil) {
		return false
	}
	if s.Const != nil && *s.Const != nil {
		return false
	}
	if len(s.AnyOf) > 0 && !anyAccepts(s.AnyOf, r) {
		return false
	}
	if len(s.OneOf) > 0 && !anyAccepts(s.OneOf, r) {
		return false
	}
	return true
}

func anyAccepts(branches []*Schema, r resolver) bool {
	for _, b := range branches {
		if acceptsNull(b, r) {
			return true
		}
	}
	return false
}

// commonType returns the JSON type shared by all values, or "" if they differ (or there are none).
func commonType(values []any) string {
	t := ""
	for i, v := range values {
		vt := jsonType(v)
		if vt == "" {
			return ""
		}
		switch {
		case i == 0:
			t = vt
		case t == vt:
		case t == "integer" && vt == "number", t == "number" && vt == "integer":
			t = "number"
		default:
			return ""
		}
	}
	return t
}

// jsonType returns the JSON type of a Go value ("integer" for whole numbers), or "" if unknown.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		return floatType(v)
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		f, err := v.Float64()
		if err != nil {
			return "number"
		}
		return floatType(f)
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return floatType(rv.Float())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return ""
}

// floatType returns "integer" for whole numbers and "number" otherwise.
func floatType(f float64) string {
	if !math.IsInf(f, 0) && f == math.Trunc(f) {
		return "integer"
	}
	return "number"
}

// contains reports whether x is in list (== comparison; fine for JSON scalars and nil).
func contains[T comparable](list []T, x T) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}
