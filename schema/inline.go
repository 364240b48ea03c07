package schema

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// maxInlineNodes bounds the size of an inlined schema: definitions referencing each other several
// times each would otherwise grow exponentially.
const maxInlineNodes = 100_000

// Inline returns a copy of s with every local $ref replaced by a copy of the definition it names
// and no $defs left, the form providers and the validator get. Keywords beside a
// $ref are laid over the copied definition. It fails on a recursive, dangling or non-local $ref.
// s is not changed.
func Inline(s *Schema) (*Schema, error) {
	if s == nil {
		return nil, errors.New("schema: Inline of a nil schema")
	}
	in := inliner{defs: defsOf(s), resolve: true}
	out, err := in.copy(s, nil)
	if err != nil {
		return nil, err
	}
	out.Defs, out.Definitions = nil, nil
	return out, nil
}

// clone returns a deep copy of s's schema tree ($refs and $defs kept).
func clone(s *Schema) *Schema {
	in := inliner{}
	out, _ := in.copy(s, nil)
	return out
}

// inliner copies schema trees, optionally replacing $refs by their definitions.
type inliner struct {
	defs    map[string]*Schema
	resolve bool
	nodes   int
}

// copy returns a deep copy of s; stack holds the definitions being expanded (recursion check).
func (in *inliner) copy(s *Schema, stack []string) (*Schema, error) {
	if s == nil {
		return nil, nil
	}
	if in.nodes++; in.nodes > maxInlineNodes {
		return nil, fmt.Errorf("schema: more than %d subschemas after inlining $refs", maxInlineNodes)
	}
	c := *s
	c.Required = slices.Clone(s.Required)
	c.Types = slices.Clone(s.Types)
	c.Enum = slices.Clone(s.Enum)
	c.PropertyOrder = slices.Clone(s.PropertyOrder)
	c.Default = slices.Clone(s.Default)
	c.Extra = maps.Clone(s.Extra)
	if in.resolve {
		c.Defs, c.Definitions = nil, nil // inlined where used
	}
	var err error
	each(&c, func(p **Schema) {
		if err == nil && *p != nil {
			*p, err = in.copy(*p, stack)
		}
	}, true)
	if err != nil {
		return nil, err
	}
	if !in.resolve || s.Ref == "" {
		return &c, nil
	}
	name, ok := refName(s.Ref)
	if !ok {
		return nil, fmt.Errorf(`schema: $ref %q is not supported: only local "#/$defs/<name>" references are`, s.Ref)
	}
	target := in.defs[name]
	if target == nil {
		return nil, fmt.Errorf("schema: $ref %q names no definition in $defs", s.Ref)
	}
	if slices.Contains(stack, name) {
		return nil, fmt.Errorf("schema: $ref %q is recursive; recursive schemas are not supported", s.Ref)
	}
	t, err := in.copy(target, append(stack, name))
	if err != nil {
		return nil, err
	}
	c.Ref = ""
	overlay(t, &c)
	return t, nil
}

// overlay sets on dst every keyword that src has (src's non-zero fields win).
func overlay(dst, src *Schema) {
	dv, sv := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := range sv.NumField() {
		if f := sv.Field(i); !f.IsZero() {
			dv.Field(i).Set(f)
		}
	}
}

// each calls f with a pointer to every direct subschema slot of s (nil slots included for single
// fields, so f can fill them). With fresh, the slices and maps holding subschemas are replaced by
// copies first, so f may store new schemas without touching the original containers.
func each(s *Schema, f func(**Schema), fresh bool) {
	one := func(p **Schema) { f(p) }
	list := func(l *[]*Schema) {
		if *l == nil {
			return
		}
		if fresh {
			*l = slices.Clone(*l)
		}
		for i := range *l {
			f(&(*l)[i])
		}
	}
	dict := func(m *map[string]*Schema) {
		if *m == nil {
			return
		}
		if fresh {
			*m = maps.Clone(*m)
		}
		for _, k := range sortedKeys(*m) {
			v := (*m)[k]
			if f(&v); v != (*m)[k] {
				(*m)[k] = v
			}
		}
	}
	dict(&s.Defs)
	dict(&s.Definitions)
	dict(&s.DependencySchemas)
	list(&s.PrefixItems)
	one(&s.Items)
	list(&s.ItemsArray)
	one(&s.AdditionalItems)
	one(&s.Contains)
	one(&s.UnevaluatedItems)
	dict(&s.Properties)
	dict(&s.PatternProperties)
	one(&s.AdditionalProperties)
	one(&s.PropertyNames)
	one(&s.UnevaluatedProperties)
	list(&s.AllOf)
	list(&s.AnyOf)
	list(&s.OneOf)
	one(&s.Not)
	one(&s.If)
	one(&s.Then)
	one(&s.Else)
	dict(&s.DependentSchemas)
	one(&s.ContentSchema)
	if fresh && s.DependencyStrings != nil {
		s.DependencyStrings = maps.Clone(s.DependencyStrings)
	}
}

// walk calls f on s and every schema below it (pre-order, not following $refs).
func walk(s *Schema, f func(*Schema)) {
	if s == nil {
		return
	}
	f(s)
	each(s, func(p **Schema) { walk(*p, f) }, false)
}
