package schema

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// knownType reports whether t is a JSON type of Weft's subset: the seed's Zod types plus integer.
func knownType(t string) bool {
	switch t {
	case "string", "number", "integer", "boolean", "null", "object", "array":
		return true
	}
	return false
}

// Check reports every problem of s against Weft's subset: keywords outside
// the subset, a root that is not an object, values that cannot work (unknown types, patterns Go's
// RE2 cannot compile, negative bounds, required properties never declared, empty enums, defaults
// that fail their own schema, dangling or recursive $refs) and nesting deeper than MaxDepth. A
// root `$schema` is accepted and ignored, and draft-07 `definitions` count as `$defs`, since
// generators (zod-to-json-schema, many MCP servers) emit them. It never stops at the first
// problem; nil means s is fine. Problems come sorted by path, then message.
func Check(s *Schema) []Problem {
	if s == nil {
		return []Problem{{Path: "", Message: "schema is missing"}}
	}
	c := checker{root: s, r: resolver{defs: defsOf(s)}}
	c.node(s, true)
	if root := c.r.resolve(s); root == nil || root.Type != "object" && !slices.Equal(root.Types, []string{"object"}) {
		c.add("root must be an object schema (type: object)")
	}
	c.cycles()
	if d := Depth(s); d > MaxDepth {
		c.add(fmt.Sprintf("schema nesting depth %d exceeds the maximum of %d", d, MaxDepth))
	}
	slices.SortFunc(c.problems, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Message, b.Message))
	})
	return c.problems
}

// checker collects Check's problems.
type checker struct {
	root     *Schema
	r        resolver
	at       []string // path of the schema being checked
	problems []Problem
}

// add records a problem at the current path extended by keys.
func (c *checker) add(msg string, keys ...string) {
	var b strings.Builder
	for _, k := range append(c.at[:len(c.at):len(c.at)], keys...) {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	c.problems = append(c.problems, Problem{Path: b.String(), Message: msg})
}

// child checks the subschema s found at the current path extended by keys.
func (c *checker) child(s *Schema, keys ...string) {
	n := len(c.at)
	c.at = append(c.at, keys...)
	c.node(s, false)
	c.at = c.at[:n]
}

// node checks one schema and, recursively, its subschemas.
func (c *checker) node(s *Schema, isRoot bool) {
	if s == nil {
		c.add("schema is missing (null)")
		return
	}
	if isFalse(s) {
		c.add("the false schema is only supported as additionalProperties: false")
		return
	}
	c.unsupported(s, isRoot)

	// type
	switch {
	case s.Type != "" && s.Types != nil:
		c.add("both Type and Types are set", "type")
	case s.Type != "":
		if !knownType(s.Type) {
			c.add(fmt.Sprintf("unknown type %q", s.Type), "type")
		}
	case s.Types != nil:
		if len(s.Types) == 0 {
			c.add("type list is empty", "type")
		}
		for i, t := range s.Types {
			if !knownType(t) {
				c.add(fmt.Sprintf("unknown type %q", t), "type")
			} else if slices.Contains(s.Types[:i], t) {
				c.add(fmt.Sprintf("type %q is listed twice", t), "type")
			}
		}
	}

	// objects
	for name, ps := range s.Properties {
		c.child(ps, "properties", name)
	}
	for i, name := range s.Required {
		switch {
		case slices.Contains(s.Required[:i], name):
			c.add(fmt.Sprintf("property %q is required twice", name), "required")
		case s.Properties[name] == nil && !isRecord(s):
			c.add(fmt.Sprintf("required property %q is not declared in properties", name), "required")
		}
	}
	for i, name := range s.PropertyOrder {
		if slices.Contains(s.PropertyOrder[:i], name) {
			c.add(fmt.Sprintf("PropertyOrder lists %q twice", name), "properties")
		}
	}
	if ap := s.AdditionalProperties; ap != nil && !isFalse(ap) {
		c.child(ap, "additionalProperties")
	}

	// arrays
	if s.Items != nil {
		c.child(s.Items, "items")
	}
	c.nonNegative("minItems", s.MinItems)
	c.nonNegative("maxItems", s.MaxItems)
	c.ordered("minItems", "maxItems", s.MinItems, s.MaxItems)

	// values
	if s.Enum != nil && len(s.Enum) == 0 {
		c.add("enum must list at least one value", "enum")
	}
	for _, v := range s.Enum {
		if !typeAllows(s, v) {
			c.add(fmt.Sprintf("enum value %s does not match type %s", display(v), typeString(s)), "enum")
		}
	}
	if s.Const != nil && !typeAllows(s, *s.Const) {
		c.add(fmt.Sprintf("const value %s does not match type %s", display(*s.Const), typeString(s)), "const")
	}

	// unions
	for _, kw := range [...]string{"anyOf", "oneOf"} {
		branches := s.AnyOf
		if kw == "oneOf" {
			branches = s.OneOf
		}
		if branches != nil && len(branches) == 0 {
			c.add(kw+" must list at least one schema", kw)
		}
		for i, b := range branches {
			c.child(b, kw, strconv.Itoa(i))
		}
	}

	// strings
	c.nonNegative("minLength", s.MinLength)
	c.nonNegative("maxLength", s.MaxLength)
	c.ordered("minLength", "maxLength", s.MinLength, s.MaxLength)
	var re *regexp.Regexp
	if s.Pattern != "" {
		var err error
		if re, err = regexp.Compile(s.Pattern); err != nil {
			c.add(fmt.Sprintf("pattern %q does not compile as a Go (RE2) regular expression "+
				"(no lookaround or backreferences): %v", s.Pattern, err), "pattern")
		}
	}

	// numbers
	if s.MultipleOf != nil && !(*s.MultipleOf > 0) {
		c.add("multipleOf must be greater than 0", "multipleOf")
	}
	if s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum {
		c.add(fmt.Sprintf("minimum %v is greater than maximum %v", *s.Minimum, *s.Maximum), "minimum")
	}

	// references and definitions
	if s.Ref != "" {
		if name, ok := refName(s.Ref); !ok {
			c.add(fmt.Sprintf(`$ref %q is not supported: only local "#/$defs/<name>" references are`, s.Ref), "$ref")
		} else if defsOf(c.root)[name] == nil {
			c.add(fmt.Sprintf("$ref %q names no definition in $defs", s.Ref), "$ref")
		}
	}
	if isRoot {
		if s.Defs != nil && s.Definitions != nil {
			c.add(`both "$defs" and "definitions" are set`, "definitions")
		}
		for _, kw := range [...]string{"$defs", "definitions"} {
			defs := s.Defs
			if kw == "definitions" {
				defs = s.Definitions
			}
			for _, name := range sortedKeys(defs) {
				c.child(defs[name], kw, name)
			}
		}
	}

	if s.Default != nil {
		c.checkDefault(s, re)
	}
}

// unsupported reports every keyword of s outside the subset.
func (c *checker) unsupported(s *Schema, isRoot bool) {
	kw := func(present bool, name string) {
		if present {
			c.add(fmt.Sprintf("unsupported keyword %q", name), name)
		}
	}
	kw(s.ID != "", "$id")
	kw(s.Schema != "" && !isRoot, "$schema")
	kw(s.Comment != "", "$comment")
	kw(s.Defs != nil && !isRoot, "$defs")
	kw(s.Definitions != nil && !isRoot, "definitions")
	kw(s.DependencySchemas != nil || s.DependencyStrings != nil, "dependencies")
	kw(s.Anchor != "", "$anchor")
	kw(s.DynamicAnchor != "", "$dynamicAnchor")
	kw(s.DynamicRef != "", "$dynamicRef")
	kw(s.Vocabulary != nil, "$vocabulary")
	kw(s.Deprecated, "deprecated")
	kw(s.ReadOnly, "readOnly")
	kw(s.WriteOnly, "writeOnly")
	kw(s.Examples != nil, "examples")
	kw(s.PrefixItems != nil, "prefixItems")
	if s.ItemsArray != nil {
		c.add(`unsupported keyword "items" with a list of schemas (tuples); use one schema`, "items")
	}
	kw(s.AdditionalItems != nil, "additionalItems")
	kw(s.Contains != nil, "contains")
	kw(s.MinContains != nil, "minContains")
	kw(s.MaxContains != nil, "maxContains")
	kw(s.UnevaluatedItems != nil, "unevaluatedItems")
	kw(s.MinProperties != nil, "minProperties")
	kw(s.MaxProperties != nil, "maxProperties")
	kw(s.DependentRequired != nil, "dependentRequired")
	kw(s.PatternProperties != nil, "patternProperties")
	kw(s.PropertyNames != nil, "propertyNames")
	kw(s.UnevaluatedProperties != nil, "unevaluatedProperties")
	kw(s.AllOf != nil, "allOf")
	kw(s.Not != nil, "not")
	kw(s.If != nil, "if")
	kw(s.Then != nil, "then")
	kw(s.Else != nil, "else")
	kw(s.DependentSchemas != nil, "dependentSchemas")
	kw(s.ContentEncoding != "", "contentEncoding")
	kw(s.ContentMediaType != "", "contentMediaType")
	kw(s.ContentSchema != nil, "contentSchema")
	if len(s.Extra) > 0 {
		for _, k := range sortedKeys(s.Extra) {
			kw(true, k)
		}
	}
}

func (c *checker) nonNegative(kw string, v *int) {
	if v != nil && *v < 0 {
		c.add(fmt.Sprintf("%s must not be negative (got %d)", kw, *v), kw)
	}
}

func (c *checker) ordered(minKw, maxKw string, lo, hi *int) {
	if lo != nil && hi != nil && *lo > *hi {
		c.add(fmt.Sprintf("%s %d is greater than %s %d", minKw, *lo, maxKw, *hi), minKw)
	}
}

// cycles reports each definition that reaches itself through $refs (recursive schemas cannot be
// inlined, and the subset is non-recursive).
func (c *checker) cycles() {
	defs := defsOf(c.root)
	if len(defs) == 0 {
		return
	}
	kw := "$defs"
	if c.root.Defs == nil {
		kw = "definitions"
	}
	edges := make(map[string][]string, len(defs))
	for name, d := range defs {
		collectRefs(d, func(ref string) {
			if n, ok := refName(ref); ok && defs[n] != nil && !slices.Contains(edges[name], n) {
				edges[name] = append(edges[name], n)
			}
		})
	}
	// Tarjan would be exact; a DFS per definition is plenty for tool schemas and reports each
	// definition on a cycle once, with one cycle through it.
	for _, name := range sortedKeys(defs) {
		if cyc := findCycle(name, edges); cyc != nil {
			refs := make([]string, len(cyc))
			for i, n := range cyc {
				refs[i] = "#/" + kw + "/" + n
			}
			c.add("recursive $ref: "+strings.Join(refs, " -> "), kw, name)
		}
	}
}

// findCycle returns a path start -> ... -> start if one exists.
func findCycle(start string, edges map[string][]string) []string {
	seen := map[string]bool{}
	var path []string
	var dfs func(n string) bool
	dfs = func(n string) bool {
		path = append(path, n)
		for _, m := range edges[n] {
			if m == start {
				path = append(path, m)
				return true
			}
			if !seen[m] {
				seen[m] = true
				if dfs(m) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if dfs(start) {
		return path
	}
	return nil
}

// collectRefs calls f for every $ref in s (not following them).
func collectRefs(s *Schema, f func(string)) {
	walk(s, func(n *Schema) {
		if n.Ref != "" {
			f(n.Ref)
		}
	})
}

// checkDefault reports a default that does not validate against its own schema. Scalars against
// simple schemas are checked directly (Check must stay cheap); anything else is compiled and
// validated with the real validator.
func (c *checker) checkDefault(s *Schema, re *regexp.Regexp) {
	const p = "default"
	var v any
	if err := json.Unmarshal(s.Default, &v); err != nil {
		c.add(fmt.Sprintf("default is not valid JSON: %v", err), p)
		return
	}
	if msg, ok := quickDefault(s, v, re); ok {
		if msg != "" {
			c.add(fmt.Sprintf("default %s does not match its schema: %s", display(v), msg), p)
		}
		return
	}
	doc := *s
	doc.Default = nil
	doc.Schema = ""
	if s != c.root && defsOf(c.root) != nil && doc.Defs == nil && doc.Definitions == nil {
		doc.Defs, doc.Definitions = c.root.Defs, c.root.Definitions
	}
	_, sch, err := compileRaw(&doc)
	if err != nil {
		return // the schema itself is broken; that is reported where it is
	}
	vd := Validator{sch: sch}
	if _, err := vd.Validate(v); err != nil {
		c.add(fmt.Sprintf("default %s does not match its schema: %v", display(v), err), p)
	}
}

// quickDefault checks a scalar default against a schema made only of scalar keywords. ok is false
// when the case is not simple enough and the real validator must decide.
func quickDefault(s *Schema, v any, re *regexp.Regexp) (msg string, ok bool) {
	if s.Pattern != "" && re == nil {
		return "", true // the pattern itself is reported
	}
	if s.Properties != nil || s.Items != nil || s.AdditionalProperties != nil || s.AnyOf != nil ||
		s.OneOf != nil || s.Ref != "" || s.MultipleOf != nil {
		return "", false
	}
	switch v.(type) {
	case map[string]any, []any:
		return "", false
	}
	if !typeAllows(s, v) {
		return fmt.Sprintf("got %s, want %s", jsonTypeName(v), typeString(s)), true
	}
	if s.Enum != nil && !slices.ContainsFunc(s.Enum, func(e any) bool { return scalarEqual(e, v) }) {
		return "must be one of the enum values", true
	}
	if s.Const != nil && !scalarEqual(*s.Const, v) {
		return "must equal const " + display(*s.Const), true
	}
	switch v := v.(type) {
	case string:
		n := utf8.RuneCountInString(v)
		if s.MinLength != nil && n < *s.MinLength {
			return fmt.Sprintf("must be at least %d characters long", *s.MinLength), true
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			return fmt.Sprintf("must be at most %d characters long", *s.MaxLength), true
		}
		if re != nil && !re.MatchString(v) {
			return fmt.Sprintf("must match pattern %q", s.Pattern), true
		}
	case float64:
		switch {
		case s.Minimum != nil && v < *s.Minimum:
			return fmt.Sprintf("must be >= %v", *s.Minimum), true
		case s.Maximum != nil && v > *s.Maximum:
			return fmt.Sprintf("must be <= %v", *s.Maximum), true
		case s.ExclusiveMinimum != nil && v <= *s.ExclusiveMinimum:
			return fmt.Sprintf("must be > %v", *s.ExclusiveMinimum), true
		case s.ExclusiveMaximum != nil && v >= *s.ExclusiveMaximum:
			return fmt.Sprintf("must be < %v", *s.ExclusiveMaximum), true
		}
	}
	return "", true
}

// scalarEqual compares two JSON scalars (numbers by value, whatever their Go type).
func scalarEqual(a, b any) bool {
	ta, tb := jsonType(a), jsonType(b)
	if ta == "integer" || ta == "number" {
		if tb != "integer" && tb != "number" {
			return false
		}
		fa, oka := toFloat(a)
		fb, okb := toFloat(b)
		return oka && okb && fa == fb
	}
	switch a.(type) {
	case map[string]any, []any:
		return false
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return ta == tb && a == b
}

// toFloat converts a Go number to float64.
func toFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	return f, err == nil && !math.IsNaN(f)
}

// typeAllows reports whether s's type keyword admits v (true when s has no type).
func typeAllows(s *Schema, v any) bool {
	if s.Type == "" && len(s.Types) == 0 {
		return true
	}
	t := jsonType(v)
	if t == "" {
		return true // not a JSON value; the validator will say so
	}
	return hasType(s, t) || (t == "integer" && hasType(s, "number"))
}

// typeString renders s's type for messages: "string" or "string or null".
func typeString(s *Schema) string {
	if s.Type != "" {
		return s.Type
	}
	return strings.Join(s.Types, " or ")
}

// jsonTypeName is jsonType with "integer" reported as "number", as the validator does.
func jsonTypeName(v any) string {
	if t := jsonType(v); t != "integer" {
		return t
	}
	return "number"
}

// display renders a value as compact JSON for messages.
func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// sortedKeys returns m's keys in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
