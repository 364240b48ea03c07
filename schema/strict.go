package schema

// StrictMode selects how far Strict tightens a schema for a provider.
type StrictMode int

const (
	// Closed gives every object schema additionalProperties: false (records stay open).
	Closed StrictMode = iota
	// OpenAIStrict is Closed plus OpenAI's strict function calling rules: every property is
	// required, formerly optional ones become nullable, and `default` is dropped (OpenAI rejects
	// it). Use DropNulls on the model's arguments to turn those nulls back into absent properties.
	OpenAIStrict
)

// Strict returns a copy of s in the strict form mode asks for, with local $refs inlined (kept
// when recursive) and $schema dropped. Descriptions are kept: the model needs them. s is not changed.
func Strict(s *Schema, mode StrictMode) *Schema {
	if s == nil {
		return nil
	}
	out, err := Inline(s)
	if err != nil {
		out = clone(s)
	}
	out.Schema = ""
	st := strictener{mode: mode, r: resolver{defs: defsOf(out)}}
	st.node(out)
	return out
}

type strictener struct {
	mode StrictMode
	r    resolver
}

// node tightens s (a private copy) and everything below it.
func (st strictener) node(s *Schema) {
	each(s, func(p **Schema) {
		if *p != nil && !isFalse(*p) {
			st.node(*p)
		}
	}, false)
	if st.mode == OpenAIStrict {
		s.Default = nil
	}
	if !isObject(s) {
		return
	}
	if s.AdditionalProperties == nil {
		s.AdditionalProperties = falseSchema()
	}
	if st.mode != OpenAIStrict || len(s.Properties) == 0 {
		return
	}
	required := make([]string, 0, len(s.Properties))
	for _, name := range s.PropertyOrder {
		if s.Properties[name] != nil && !contains(required, name) {
			required = append(required, name)
		}
	}
	for _, name := range sortedKeys(s.Properties) {
		if !contains(required, name) {
			required = append(required, name)
		}
	}
	for _, name := range required {
		if !contains(s.Required, name) {
			s.Properties[name] = nullable(s.Properties[name], st.r)
		}
	}
	s.Required = required
}

// DropNulls returns args without the nulls a strict model sends for absent properties: an object
// property whose value is null is removed when the original (non-strict) schema s has it optional
// and not nullable: a returned null counts as absent. It recurses into present
// objects, record values, array items and the one object (or array) branch of a union. args is not
// changed; parts that change are copied.
func DropNulls(s *Schema, args any) any {
	if s == nil {
		return args
	}
	d := dropper{r: resolver{defs: defsOf(s)}}
	out, _ := d.drop(s, args, 0)
	return out
}

type dropper struct{ r resolver }

func (d dropper) drop(s *Schema, v any, depth int) (any, bool) {
	s = d.r.resolve(s)
	if s == nil || depth > 1000 {
		return v, false
	}
	switch v := v.(type) {
	case map[string]any:
		if !isObject(s) {
			if b := d.branch(s, "object"); b != nil {
				return d.drop(b, v, depth+1)
			}
			return v, false
		}
		var out map[string]any
		edit := func() {
			if out == nil {
				out = make(map[string]any, len(v))
				for k, e := range v {
					out[k] = e
				}
			}
		}
		for name, ps := range s.Properties {
			e, present := v[name]
			if !present || ps == nil {
				continue
			}
			if e == nil {
				if !contains(s.Required, name) && !acceptsNull(ps, d.r) {
					edit()
					delete(out, name)
				}
				continue
			}
			if ne, changed := d.drop(ps, e, depth+1); changed {
				edit()
				out[name] = ne
			}
		}
		if ap := s.AdditionalProperties; ap != nil && !isFalse(ap) {
			for k, e := range v {
				if _, declared := s.Properties[k]; declared || e == nil {
					continue
				}
				if ne, changed := d.drop(ap, e, depth+1); changed {
					edit()
					out[k] = ne
				}
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		items := s.Items
		if items == nil {
			if b := d.branch(s, "array"); b != nil {
				return d.drop(b, v, depth+1)
			}
			return v, false
		}
		var out []any
		for i, e := range v {
			if ne, changed := d.drop(items, e, depth+1); changed {
				if out == nil {
					out = append([]any(nil), v...)
				}
				out[i] = ne
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// branch returns the only anyOf/oneOf branch of s describing type t, or nil.
func (d dropper) branch(s *Schema, t string) *Schema {
	var found *Schema
	for _, list := range [][]*Schema{s.AnyOf, s.OneOf} {
		for _, b := range list {
			rb := d.r.resolve(b)
			if rb == nil || !(hasType(rb, t) || t == "object" && isObject(rb) || t == "array" && rb.Items != nil) {
				continue
			}
			if found != nil {
				return nil
			}
			found = rb
		}
	}
	return found
}
