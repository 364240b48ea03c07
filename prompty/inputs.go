package prompty

import (
	"errors"
	"fmt"
	"strings"

	weft "github.com/weft-agents/weft"
)

// propSpec is one entry of `inputs` or `outputs`: a spec mapping, or a `name: value` shorthand.
type propSpec struct {
	name  string
	path  keyPath
	spec  map[string]any
	short bool
	value any
}

// propertyList reads the map form (`name: spec`) or the list form (`- name: …`) of inputs/outputs.
func propertyList(fm *frontMatter, path keyPath, v any) ([]propSpec, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		out := make([]propSpec, 0, len(t))
		for _, name := range sortedKeys(t) {
			ps := propSpec{name: name, path: path.with(name)}
			if m, ok := t[name].(map[string]any); ok {
				ps.spec = m
			} else {
				ps.short, ps.value = true, t[name]
			}
			out = append(out, ps)
		}
		return out, nil
	case []any:
		out := make([]propSpec, 0, len(t))
		seen := map[string]bool{}
		for i, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fm.errAt(path.with(i), "must be a mapping with a name", nil)
			}
			name, _ := m["name"].(string)
			if name == "" {
				return nil, fm.errAt(path.with(i), "needs a name", nil)
			}
			if seen[name] {
				return nil, fm.errAt(path.with(i), fmt.Sprintf("duplicate name %q", name), nil)
			}
			seen[name] = true
			out = append(out, propSpec{name: name, path: path.with(i), spec: m})
		}
		return out, nil
	}
	return nil, fm.errAt(path, "must be a list or a mapping of properties", nil)
}

// canonicalKind maps the accepted spellings of a property kind to the canonical one.
func canonicalKind(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "string", "str", "text":
		return "string", true
	case "number", "float", "double":
		return "number", true
	case "integer", "int":
		return "integer", true
	case "boolean", "bool":
		return "boolean", true
	case "array", "list":
		return "array", true
	case "object", "dict", "map":
		return "object", true
	case "thread", "image", "file", "audio":
		return strings.ToLower(s), true
	}
	return "", false
}

// kindOf infers a kind from a value.
func kindOf(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case int:
		return "integer"
	case float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "string"
}

// property reads one property spec into an Input and its JSON Schema.
func property(fm *frontMatter, ps propSpec, depth int) (Input, map[string]any, error) {
	in := Input{Name: ps.name}
	if depth > 16 {
		return in, nil, fm.errAt(ps.path, "properties nested too deeply", nil)
	}
	if ps.short {
		in.Default, in.HasDefault = ps.value, ps.value != nil
		in.Kind = kindOf(ps.value)
		schema := map[string]any{"type": in.Kind}
		if in.HasDefault {
			schema["default"] = in.Default
		}
		return in, schema, nil
	}
	s := ps.spec
	for _, k := range []string{"kind", "type"} {
		if v, ok := s[k]; ok && v != nil {
			str, _ := v.(string)
			kind, known := canonicalKind(str)
			if !known {
				return in, nil, fm.errAt(ps.path.with(k), fmt.Sprintf("unknown kind %q", fmt.Sprint(v)), nil)
			}
			in.Kind = kind
			break
		}
	}
	// Prompty v1 / prompt flow mark the chat history with `is_chat_history: true`: it is the thread.
	if b, _ := s["is_chat_history"].(bool); b {
		in.Kind = "thread"
	}
	if v, ok := s["description"]; ok && v != nil {
		d, ok := v.(string)
		if !ok {
			return in, nil, fm.errAt(ps.path.with("description"), "must be a string", nil)
		}
		in.Description = d
	}
	if v, ok := s["default"]; ok && v != nil {
		in.Default, in.HasDefault = v, true
	}
	for _, k := range []string{"required", "strict"} {
		v, ok := s[k]
		if !ok || v == nil {
			continue
		}
		b, isBool := v.(bool)
		if !isBool {
			return in, nil, fm.errAt(ps.path.with(k), "must be true or false", nil)
		}
		if k == "required" {
			in.Required = b
		} else {
			in.Strict = b
		}
	}
	for _, k := range []string{"enumValues", "enum"} {
		if v, ok := s[k]; ok && v != nil {
			l, ok := v.([]any)
			if !ok {
				return in, nil, fm.errAt(ps.path.with(k), "must be a list", nil)
			}
			in.EnumValues = l
			break
		}
	}
	if v, ok := s["json_schema"]; ok && v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return in, nil, fm.errAt(ps.path.with("json_schema"), "must be a JSON Schema mapping", nil)
		}
		in.JSONSchema = m
	}
	for _, k := range []string{"sample", "example"} {
		if v, ok := s[k]; ok {
			in.Sample, in.HasSample = v, true
			break
		}
	}
	if in.Kind == "" {
		switch {
		case in.HasDefault:
			in.Kind = kindOf(in.Default)
		case in.HasSample && in.Sample != nil:
			in.Kind = kindOf(in.Sample)
		case in.JSONSchema != nil:
			in.Kind = "object"
		default:
			in.Kind = "string"
		}
	}
	schema := map[string]any{}
	for k, v := range in.JSONSchema {
		schema[k] = v
	}
	if _, ok := schema["type"]; !ok && in.JSONSchema == nil {
		switch in.Kind {
		case "image", "file", "audio":
			schema["type"] = "string"
		case "thread":
		default:
			schema["type"] = in.Kind
		}
	}
	if in.Description != "" {
		if _, ok := schema["description"]; !ok {
			schema["description"] = in.Description
		}
	}
	if in.HasDefault {
		schema["default"] = in.Default
	}
	if in.EnumValues != nil {
		schema["enum"] = in.EnumValues
	}
	if in.JSONSchema == nil {
		if v, ok := s["properties"]; ok && in.Kind == "object" {
			specs, err := propertyList(fm, ps.path.with("properties"), v)
			if err != nil {
				return in, nil, err
			}
			sub, err := objectSchemaDepth(fm, specs, depth+1)
			if err != nil {
				return in, nil, err
			}
			for k, x := range sub {
				schema[k] = x
			}
		}
		if v, ok := s["items"].(map[string]any); ok && in.Kind == "array" {
			_, item, err := property(fm, propSpec{name: "items", path: ps.path.with("items"), spec: v}, depth+1)
			if err != nil {
				return in, nil, err
			}
			schema["items"] = item
		}
	}
	return in, schema, nil
}

// objectSchema builds `{type: object, properties, required}` from property specs.
func objectSchema(fm *frontMatter, specs []propSpec) (map[string]any, error) {
	return objectSchemaDepth(fm, specs, 0)
}

func objectSchemaDepth(fm *frontMatter, specs []propSpec, depth int) (map[string]any, error) {
	props := map[string]any{}
	var required []any
	for _, ps := range specs {
		in, schema, err := property(fm, ps, depth)
		if err != nil {
			return nil, err
		}
		props[ps.name] = schema
		if in.Required {
			required = append(required, ps.name)
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if required != nil {
		out["required"] = required
	}
	return out, nil
}

// inputs reads `inputs` into Inputs, InputSchema, the thread, media and strict input names.
func (f *File) inputs(fm *frontMatter, v any) error {
	specs, err := propertyList(fm, keyPath{"inputs"}, v)
	if err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	props := map[string]any{}
	var required []any
	for _, ps := range specs {
		in, schema, err := property(fm, ps, 0)
		if err != nil {
			return err
		}
		f.Inputs = append(f.Inputs, in)
		switch in.Kind {
		case "thread":
			f.ThreadInputs = append(f.ThreadInputs, in.Name)
			continue
		case "image", "file", "audio":
			if f.MediaInputs == nil {
				f.MediaInputs = map[string]weft.PartType{}
			}
			f.MediaInputs[in.Name] = weft.PartType(in.Kind)
		}
		props[in.Name] = schema
		if in.Required {
			required = append(required, in.Name)
		}
	}
	f.InputSchema = map[string]any{"type": "object", "properties": props}
	if required != nil {
		f.InputSchema["required"] = required
	}
	return nil
}

// strictInputs fills StrictInputs and the strict set (every input when the template is strict).
func (f *File) strictInputs() {
	f.strict = map[string]bool{}
	for _, in := range f.Inputs {
		if (in.Strict || f.TemplateStrict) && in.Kind != "thread" {
			f.StrictInputs = append(f.StrictInputs, in.Name)
			f.strict[in.Name] = true
		}
	}
}

// ParametersSchema returns the JSON Schema object of a tool's `parameters` as a Prompty file
// writes them: a list (`- name: location\n  kind: string`) or mapping of property specs, or a JSON
// Schema object (`{type: object, properties: …}`, the OpenAI function form) as is.
func ParametersSchema(v any) (map[string]any, error) {
	if m, ok := v.(map[string]any); ok {
		if _, isSchema := m["type"].(string); isSchema {
			return m, nil
		}
		if props, ok := m["properties"].(map[string]any); ok && len(m) <= 3 {
			s := map[string]any{"type": "object", "properties": props}
			if r, ok := m["required"]; ok {
				s["required"] = r
			}
			return s, nil
		}
	}
	fm := &frontMatter{}
	specs, err := propertyList(fm, keyPath{}, v)
	if err == nil {
		var s map[string]any
		if s, err = objectSchema(fm, specs); err == nil {
			return s, nil
		}
	}
	var e *Error
	if errors.As(err, &e) {
		return nil, errors.New(e.Msg)
	}
	return nil, err
}
