package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	sj "github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL names the one resource each compiler holds.
const schemaURL = "urn:weft:schema"

// Validator validates argument values against one compiled schema, applying defaults first.
// Compile once and call Validate many times; it is safe for concurrent use.
type Validator struct {
	sch   *sj.Schema
	plan  *plan  // where defaults go; nil when the schema has none
	quick *quick // accepts the common tool schema's valid instances alone; nil for other schemas
}

// Compile prepares a Validator for s. $refs are inlined where possible (recursive schemas are
// compiled as they are), `format` is an annotation only, and `pattern` uses Go's RE2 like Check.
// Compile does not enforce Weft's subset — Check does — but fails when s cannot be compiled.
func Compile(s *Schema) (*Validator, error) {
	if s == nil {
		return nil, errors.New("schema: Compile of a nil schema")
	}
	in, err := Inline(s)
	if err != nil {
		in = clone(s)
	}
	in.Schema = "" // always the 2020-12 dialect, whatever the document declares
	data, sch, err := compileRaw(in)
	if err != nil {
		return nil, err
	}
	p, err := buildPlan(in, 0)
	if err != nil {
		return nil, err
	}
	v := &Validator{sch: sch, plan: p}
	if p == nil {
		v.quick = quickOf(data)
	}
	return v, nil
}

// compileRaw compiles s with the santhosh validator, draft 2020-12; it returns the JSON it
// compiled too.
func compileRaw(s *Schema) ([]byte, *sj.Schema, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, nil, fmt.Errorf("schema: cannot encode schema: %w", err)
	}
	doc, err := sj.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("schema: cannot decode schema: %w", err)
	}
	c := sj.NewCompiler()
	c.DefaultDraft(sj.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, nil, fmt.Errorf("schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, nil, fmt.Errorf("schema: cannot compile schema: %w", err)
	}
	return data, sch, nil
}

// Validate checks args, the decoded JSON arguments (map[string]any and friends, float64 or
// json.Number numbers; nil means absent, i.e. {}; other Go values are converted through JSON),
// after applying defaults: every absent property with a `default` gets it, recursively into
// objects that are present or defaulted, record values and array items (a null property is not
// absent; union branches get no defaults). args is not changed; the defaulted value is returned.
// On failure the error is a *ValidationError listing every failure.
func (v *Validator) Validate(args any) (any, error) {
	if args == nil {
		args = map[string]any{}
	} else if m, ok := args.(map[string]any); ok && m == nil {
		args = map[string]any{}
	}
	if !isJSON(args, 0) {
		var err error
		if args, err = normalize(args); err != nil {
			return nil, &ValidationError{Failures: []Failure{{Path: rootPath, Message: "not a JSON value: " + err.Error()}}}
		}
	}
	if v.plan != nil {
		args, _ = v.plan.apply(args)
	}
	if v.quick != nil && v.quick.accepts(args) {
		return args, nil
	}
	if err := v.sch.Validate(args); err != nil {
		var ve *sj.ValidationError
		if errors.As(err, &ve) {
			return nil, &ValidationError{Failures: failures(ve)}
		}
		return nil, err
	}
	return args, nil
}

// isJSON reports whether v holds only the Go types the validator understands.
func isJSON(v any, depth int) bool {
	if depth > 10_000 {
		return false
	}
	switch v := v.(type) {
	case nil, bool, string, json.Number, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, float32:
		return true
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	case map[string]any:
		for _, e := range v {
			if !isJSON(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !isJSON(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// normalize turns any JSON-encodable Go value (structs, typed slices and maps) into the plain form.
func normalize(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// plan says where defaults go in an instance of one object schema.
type plan struct {
	props    []propPlan
	declared map[string]bool // property names, which record values skip
	record   *plan           // for the values of a record (additionalProperties schema)
	items    *plan           // for array items
}

// propPlan is one property with a default or with defaults below it.
type propPlan struct {
	name   string
	def    any
	hasDef bool
	sub    *plan
}

// buildPlan returns the defaults plan of s, nil when nothing under s has a default.
func buildPlan(s *Schema, depth int) (*plan, error) {
	if s == nil || depth > 64 {
		return nil, nil
	}
	p := &plan{}
	for _, name := range sortedKeys(s.Properties) {
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		pp := propPlan{name: name}
		if ps.Default != nil {
			if err := json.Unmarshal(ps.Default, &pp.def); err != nil {
				return nil, fmt.Errorf("schema: default of %q is not valid JSON: %w", name, err)
			}
			pp.hasDef = true
		}
		sub, err := buildPlan(ps, depth+1)
		if err != nil {
			return nil, err
		}
		pp.sub = sub
		if pp.hasDef || pp.sub != nil {
			p.props = append(p.props, pp)
		}
	}
	var err error
	if ap := s.AdditionalProperties; ap != nil && !isFalse(ap) {
		if p.record, err = buildPlan(ap, depth+1); err != nil {
			return nil, err
		}
		if p.record != nil {
			p.declared = make(map[string]bool, len(s.Properties))
			for name := range s.Properties {
				p.declared[name] = true
			}
		}
	}
	if p.items, err = buildPlan(s.Items, depth+1); err != nil {
		return nil, err
	}
	if p.props == nil && p.record == nil && p.items == nil {
		return nil, nil
	}
	return p, nil
}

// apply returns v with defaults filled in, copying only what changes.
func (p *plan) apply(v any) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		var out map[string]any
		set := func(k string, x any) {
			if out == nil {
				out = make(map[string]any, len(v)+len(p.props))
				for k, e := range v {
					out[k] = e
				}
			}
			out[k] = x
		}
		for _, pp := range p.props {
			cur, present := v[pp.name]
			switch {
			case !present && pp.hasDef:
				d := deepCopy(pp.def)
				if pp.sub != nil {
					d, _ = pp.sub.apply(d)
				}
				set(pp.name, d)
			case present && pp.sub != nil:
				if nv, changed := pp.sub.apply(cur); changed {
					set(pp.name, nv)
				}
			}
		}
		if p.record != nil {
			for k, e := range v {
				if p.declared[k] {
					continue
				}
				if nv, changed := p.record.apply(e); changed {
					set(k, nv)
				}
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		if p.items == nil {
			return v, false
		}
		var out []any
		for i, e := range v {
			if nv, changed := p.items.apply(e); changed {
				if out == nil {
					out = append([]any(nil), v...)
				}
				out[i] = nv
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// deepCopy copies a decoded JSON value so each call gets its own default.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
