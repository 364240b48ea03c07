package schema

// Depth returns the nesting depth of s: the root object is level 1;
// each nested object, record value (additionalProperties schema) or union (anyOf/oneOf) branch adds
// one; an array adds nothing and its item adds one, so an array of objects counts once. Local
// $refs are followed (a recursive one counts once).
func Depth(s *Schema) int {
	if s == nil {
		return 0
	}
	d := depther{r: resolver{defs: defsOf(s)}}
	return 1 + d.below(s)
}

// depther computes depths, remembering each definition's so shared definitions cost once.
type depther struct {
	r      resolver
	memo   map[string]int
	active map[string]bool
}

// below returns how many levels lie under s (s's own level not counted).
func (d *depther) below(s *Schema) int {
	if s == nil {
		return 0
	}
	if s.Ref != "" {
		if name, ok := refName(s.Ref); ok && d.r.defs[name] != nil && !d.active[name] {
			n, done := d.memo[name]
			if !done {
				if d.memo == nil {
					d.memo, d.active = map[string]int{}, map[string]bool{}
				}
				d.active[name] = true
				n = d.below(d.r.defs[name])
				d.active[name] = false
				d.memo[name] = n
			}
			return max(n, d.local(s))
		}
	}
	return d.local(s)
}

// local is below for s's own keywords, ignoring its $ref.
func (d *depther) local(s *Schema) int {
	n := 0
	for _, p := range s.Properties {
		if p == nil {
			continue
		}
		add := 0
		if t := d.r.resolve(p); t != nil && isObject(t) {
			add = 1
		}
		n = max(n, add+d.below(p))
	}
	if ap := s.AdditionalProperties; ap != nil && !isFalse(ap) {
		n = max(n, 1+d.below(ap))
	}
	if s.Items != nil {
		n = max(n, 1+d.below(s.Items))
	}
	for _, b := range s.AnyOf {
		n = max(n, 1+d.below(b))
	}
	for _, b := range s.OneOf {
		n = max(n, 1+d.below(b))
	}
	return n
}
