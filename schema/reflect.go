package schema

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// For infers the argument schema of the Go struct type T (as `weft.NewTool[Args]` does):
//   - property names come from `json` tags ("-" skips a field; embedded structs are flattened);
//   - a field is optional when it is a pointer or tagged omitempty/omitzero, required otherwise;
//     a pointer does not make the property nullable;
//   - string, bool, ints (integer; unsigned ones get minimum 0), floats (number), slices and
//     arrays (array; []byte is a base64 string), maps with string keys (records), nested structs
//     (objects), interfaces and json.RawMessage (any value), time.Time (string, format date-time),
//     other encoding.TextMarshaler types (string);
//   - a `jsonschema` tag adds keywords as comma-separated key=value pairs (`\,` escapes a comma):
//     description, title, enum (values separated by |), default, minimum, maximum,
//     exclusiveMinimum, exclusiveMaximum, multipleOf, pattern, format, minLength, maxLength,
//     minItems, maxItems, uniqueItems, nullable. On a slice field, enum, the number bounds and the
//     string keywords apply to its items.
//
// Properties keep the field order; objects are left open (Strict closes them). For fails on
// channels, funcs, complex numbers, maps without string keys, recursive types, bad tags, and a
// result that Check rejects.
func For[T any]() (*Schema, error) {
	return ForType(reflect.TypeFor[T]())
}

// ForType is For for a reflect.Type, for callers that only have the type at run time.
func ForType(t reflect.Type) (*Schema, error) {
	if t == nil {
		return nil, errors.New("schema: ForType of a nil type")
	}
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if base.Kind() != reflect.Struct && !(base.Kind() == reflect.Map && base.Key().Kind() == reflect.String) {
		return nil, fmt.Errorf("schema: %s: arguments must be a struct (or a map with string keys), not %s", t, base.Kind())
	}
	r := reflector{active: map[reflect.Type]bool{}}
	s, err := r.typ(base, base.String())
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if problems := Check(s); len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.String()
		}
		return nil, fmt.Errorf("schema: %s: %s", t, strings.Join(msgs, "; "))
	}
	return s, nil
}

// reflector builds schemas from types; active holds the struct types being built (recursion).
type reflector struct {
	active map[reflect.Type]bool
}

// implements reports whether T or *T implements the interface I.
func implements[I any](t reflect.Type) bool {
	iface := reflect.TypeFor[I]()
	return t.Implements(iface) || reflect.PointerTo(t).Implements(iface)
}

// typ returns the schema of t; path names the type or field for errors.
func (r reflector) typ(t reflect.Type, path string) (*Schema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
		return &Schema{Type: "string", Format: "date-time"}, nil
	case t == reflect.TypeFor[json.RawMessage]():
		return &Schema{}, nil
	case implements[json.Marshaler](t):
		return &Schema{}, nil // its JSON form is its own business
	case implements[encoding.TextMarshaler](t):
		return &Schema{Type: "string"}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return Boolean(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return Integer(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		zero := 0.0
		return &Schema{Type: "integer", Minimum: &zero}, nil
	case reflect.Float32, reflect.Float64:
		return Number(), nil
	case reflect.String:
		return String(), nil
	case reflect.Interface:
		return &Schema{}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !implements[json.Marshaler](t.Elem()) && !implements[encoding.TextMarshaler](t.Elem()) {
			return String(), nil // encoding/json writes base64
		}
		items, err := r.typ(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return Array(items), nil
	case reflect.Array:
		items, err := r.typ(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		s := Array(items)
		n := t.Len()
		s.MinItems, s.MaxItems = &n, &n
		return s, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%s: map keys must be strings, not %s", path, t.Key())
		}
		values, err := r.typ(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return Record(values), nil
	case reflect.Struct:
		return r.object(t, path)
	}
	return nil, fmt.Errorf("%s: %s values cannot be arguments (no JSON form)", path, t.Kind())
}

// field is one property found in a struct, with the embedding depth that decides conflicts.
type field struct {
	name     string
	schema   *Schema
	optional bool
	depth    int
}

// object builds the schema of a struct type.
func (r reflector) object(t reflect.Type, path string) (*Schema, error) {
	if r.active[t] {
		return nil, fmt.Errorf("%s: recursive type %s is not supported (argument schemas are not recursive)", path, t)
	}
	r.active[t] = true
	defer delete(r.active, t)
	var fields []field
	if err := r.fields(t, path, 0, false, &fields); err != nil {
		return nil, err
	}
	s := &Schema{Type: "object", Properties: map[string]*Schema{}}
	for _, f := range fields {
		if _, dup := s.Properties[f.name]; dup {
			continue // the shallower (earlier) field wins, as in encoding/json
		}
		s.Properties[f.name] = f.schema
		s.PropertyOrder = append(s.PropertyOrder, f.name)
		if !f.optional {
			s.Required = append(s.Required, f.name)
		}
	}
	return s, nil
}

// fields appends t's properties, flattening embedded structs.
func (r reflector) fields(t reflect.Type, path string, depth int, optional bool, out *[]field) error {
	var own, embeds []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if sf.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && et != reflect.TypeFor[time.Time]() && !implements[json.Marshaler](et) {
				var sub []field
				if err := r.fields(et, path, depth+1, optional || ft.Kind() == reflect.Pointer, &sub); err != nil {
					return err
				}
				embeds = append(embeds, sub...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fpath := path + "." + sf.Name
		s, err := r.typ(ft, fpath)
		if err != nil {
			return err
		}
		if hasOpt(opts, "string") && (s.Type == "integer" || s.Type == "number" || s.Type == "boolean") {
			s = &Schema{Type: "string"} // encoding/json quotes the value
		}
		if tag := sf.Tag.Get("jsonschema"); tag != "" {
			if s, err = applyTag(s, tag, fpath); err != nil {
				return err
			}
		}
		opt := optional || ft.Kind() == reflect.Pointer || hasOpt(opts, "omitempty") || hasOpt(opts, "omitzero")
		own = append(own, field{name: name, schema: s, optional: opt, depth: depth})
	}
	// Own fields shadow promoted ones; among promoted ones the shallowest wins.
	*out = append(*out, own...)
	for _, e := range embeds {
		shadowed := false
		for _, o := range *out {
			if o.name == e.name && o.depth <= e.depth {
				shadowed = true
				break
			}
		}
		if !shadowed {
			*out = append(*out, e)
		}
	}
	return nil
}

func hasOpt(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// splitTag splits a jsonschema tag on commas not escaped as `\,`.
func splitTag(tag string) []string {
	var parts []string
	var b strings.Builder
	for i := 0; i < len(tag); i++ {
		switch {
		case tag[i] == '\\' && i+1 < len(tag) && (tag[i+1] == ',' || tag[i+1] == '\\'):
			b.WriteByte(tag[i+1])
			i++
		case tag[i] == ',':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(tag[i])
		}
	}
	return append(parts, b.String())
}

// applyTag returns a copy of s with the keywords of a `jsonschema` tag.
func applyTag(s *Schema, tag, path string) (*Schema, error) {
	s = shallow(s)
	target := s // value keywords go to the items of an array
	if s.Type == "array" && s.Items != nil {
		target = shallow(s.Items)
		s.Items = target
	}
	bad := func(key string, err error) error {
		return fmt.Errorf("%s: jsonschema tag %q: %w", path, key, err)
	}
	var nullable bool
	for _, part := range splitTag(tag) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, hasVal := strings.Cut(part, "=")
		key = strings.TrimSpace(key)
		switch key {
		case "description":
			s.Description = val
		case "title":
			s.Title = val
		case "format":
			target.Format = val
		case "pattern":
			target.Pattern = val
		case "enum":
			for _, item := range strings.Split(val, "|") {
				v, err := parseValue(target, item)
				if err != nil {
					return nil, bad(key, err)
				}
				target.Enum = append(target.Enum, v)
			}
		case "default":
			v, err := parseValue(s, val)
			if err != nil {
				return nil, bad(key, err)
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, bad(key, err)
			}
			s.Default = raw
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
			f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil {
				return nil, bad(key, err)
			}
			*map[string]**float64{
				"minimum": &target.Minimum, "maximum": &target.Maximum,
				"exclusiveMinimum": &target.ExclusiveMinimum, "exclusiveMaximum": &target.ExclusiveMaximum,
				"multipleOf": &target.MultipleOf,
			}[key] = &f
		case "minLength", "maxLength", "minItems", "maxItems":
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil {
				return nil, bad(key, err)
			}
			dst := map[string]**int{"minLength": &target.MinLength, "maxLength": &target.MaxLength,
				"minItems": &s.MinItems, "maxItems": &s.MaxItems}[key]
			*dst = &n
		case "uniqueItems", "nullable":
			b := true
			if hasVal {
				var err error
				if b, err = strconv.ParseBool(strings.TrimSpace(val)); err != nil {
					return nil, bad(key, err)
				}
			}
			if key == "uniqueItems" {
				s.UniqueItems = b
			} else {
				nullable = b
			}
		default:
			return nil, fmt.Errorf("%s: unknown jsonschema tag key %q (want key=value pairs such as description=...)", path, key)
		}
	}
	if nullable {
		s = Nullable(s)
	}
	return s, nil
}

// parseValue reads a tag value as a value of s's type: strings as written, anything else as JSON.
func parseValue(s *Schema, val string) (any, error) {
	switch {
	case s.Type == "string":
		return val, nil
	case s.Type == "integer":
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", val)
		}
		return n, nil
	}
	var v any
	if err := json.Unmarshal([]byte(val), &v); err != nil {
		if s.Type == "" {
			return val, nil // untyped: a bare word is a string
		}
		return nil, fmt.Errorf("%q is not a JSON %s", val, s.Type)
	}
	return v, nil
}
