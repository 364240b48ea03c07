package schema

import "sync"

// Validators compiles schemas once each and keeps their Validators, by the schema's pointer: for
// the schemas of definitions, which do not change once loaded. It is safe for concurrent use; the
// zero value is ready.
type Validators struct {
	m sync.Map // *Schema → *Validator
}

// Of returns the Validator of s, compiling s the first time (Compile).
func (vs *Validators) Of(s *Schema) (*Validator, error) {
	if v, ok := vs.m.Load(s); ok {
		return v.(*Validator), nil
	}
	v, err := Compile(s)
	if err != nil {
		return nil, err
	}
	vs.m.Store(s, v)
	return v, nil
}
