package schema

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	sj "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// rootPath is the Failure path of the instance root.
const rootPath = "(root)"

// Failure is one reason arguments do not match their schema.
type Failure struct {
	// Path is the JSON pointer of the offending value ("/limit", "/items/0/name"), or "(root)".
	Path string
	// Message is short and readable, e.g. "must be <= 20" or `missing required property "q"`.
	Message string
}

// ValidationError lists every failure of one validation, sorted by path, then message. Its text
// is what the model reads after `Tool argument validation failed: `, as the
// tool call's error result.
type ValidationError struct {
	// Failures holds at least one failure.
	Failures []Failure
}

// Error joins the failures as "/a: msg; /b/0: msg".
func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, f := range e.Failures {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Path)
		b.WriteString(": ")
		b.WriteString(f.Message)
	}
	return b.String()
}

// failure is a Failure with what union handling needs to know about it.
type failure struct {
	loc     []string
	msg     string
	typ     *kind.Type // set for type mismatches
	literal bool       // a const or enum mismatch
}

// failures flattens santhosh's error tree into leaf failures, resolving unions to the branch the
// value most likely meant, then sorts and de-duplicates them.
func failures(ve *sj.ValidationError) []Failure {
	fs := collect(ve)
	out := make([]Failure, 0, len(fs))
	for _, f := range fs {
		out = append(out, Failure{Path: pointer(f.loc), Message: f.msg})
	}
	slices.SortFunc(out, func(a, b Failure) int {
		if c := comparePaths(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out)
}

// collect returns the leaf failures under e.
func collect(e *sj.ValidationError) []failure {
	loc := e.InstanceLocation
	leaf := func(msg string) []failure { return []failure{{loc: loc, msg: msg}} }
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		var out []failure
		for _, c := range e.Causes {
			out = append(out, collect(c)...)
		}
		return out
	case *kind.AnyOf:
		return union(e)
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			return union(e)
		}
		return leaf(fmt.Sprintf("must match exactly one alternative, but matches alternatives %d and %d",
			k.Subschemas[0], k.Subschemas[1]))
	case *kind.Type:
		return []failure{{loc: loc, msg: typeMessage(k), typ: k}}
	case *kind.Required:
		out := make([]failure, 0, len(k.Missing))
		for _, m := range k.Missing {
			out = append(out, failure{loc: loc, msg: fmt.Sprintf("missing required property %q", m)})
		}
		return out
	case *kind.AdditionalProperties:
		out := make([]failure, 0, len(k.Properties))
		for _, p := range k.Properties {
			out = append(out, failure{loc: loc, msg: fmt.Sprintf("unknown property %q", p)})
		}
		return out
	case *kind.Enum:
		return []failure{{loc: loc, msg: oneOfMessage(k.Want), literal: true}}
	case *kind.Const:
		return []failure{{loc: loc, msg: "must be " + display(k.Want), literal: true}}
	case *kind.Minimum:
		return leaf("must be >= " + ratString(k.Want))
	case *kind.Maximum:
		return leaf("must be <= " + ratString(k.Want))
	case *kind.ExclusiveMinimum:
		return leaf("must be > " + ratString(k.Want))
	case *kind.ExclusiveMaximum:
		return leaf("must be < " + ratString(k.Want))
	case *kind.MultipleOf:
		return leaf("must be a multiple of " + ratString(k.Want))
	case *kind.MinLength:
		return leaf(fmt.Sprintf("must be at least %d %s long", k.Want, plural(k.Want, "character")))
	case *kind.MaxLength:
		return leaf(fmt.Sprintf("must be at most %d %s long", k.Want, plural(k.Want, "character")))
	case *kind.Pattern:
		return leaf(fmt.Sprintf("must match pattern %q", k.Want))
	case *kind.MinItems:
		return leaf(fmt.Sprintf("must have at least %d %s", k.Want, plural(k.Want, "item")))
	case *kind.MaxItems:
		return leaf(fmt.Sprintf("must have at most %d %s", k.Want, plural(k.Want, "item")))
	case *kind.UniqueItems:
		return leaf(fmt.Sprintf("must not contain duplicates (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1]))
	case *kind.MinProperties:
		return leaf(fmt.Sprintf("must have at least %d %s", k.Want, plural(k.Want, "property")))
	case *kind.MaxProperties:
		return leaf(fmt.Sprintf("must have at most %d %s", k.Want, plural(k.Want, "property")))
	case *kind.Format:
		return leaf(fmt.Sprintf("must be a valid %s", k.Want))
	case *kind.FalseSchema:
		return leaf("no value is allowed here")
	case *kind.Not:
		return leaf("must not match the excluded schema")
	case *kind.InvalidJsonValue:
		return leaf(fmt.Sprintf("not a JSON value (%T)", k.Value))
	case *kind.PropertyNames:
		return leaf(fmt.Sprintf("invalid property name %q", k.Property))
	case *kind.DependentRequired:
		return leaf(fmt.Sprintf("property %q requires %s", k.Prop, quoteAll(k.Missing)))
	case *kind.Dependency:
		return leaf(fmt.Sprintf("property %q requires %s", k.Prop, quoteAll(k.Missing)))
	}
	if len(e.Causes) > 0 {
		var out []failure
		for _, c := range e.Causes {
			out = append(out, collect(c)...)
		}
		return out
	}
	return leaf("fails " + strings.Join(e.ErrorKind.KeywordPath(), "/"))
}

// union resolves a failed anyOf/oneOf: if every branch wants another type, one "got X, want A or
// B" failure; otherwise the failures of the branch the value most likely meant — not a branch of
// the wrong type, not one whose literal discriminator differs, then the one that got deepest.
func union(e *sj.ValidationError) []failure {
	loc := e.InstanceLocation
	branches := make([][]failure, 0, len(e.Causes))
	for _, c := range e.Causes {
		branches = append(branches, collect(c))
	}
	if len(branches) == 0 {
		return []failure{{loc: loc, msg: "matches none of the alternatives"}}
	}
	wrongType := func(b []failure) bool {
		return slices.ContainsFunc(b, func(f failure) bool { return f.typ != nil && slices.Equal(f.loc, loc) })
	}
	if !slices.ContainsFunc(branches, func(b []failure) bool { return !wrongType(b) }) {
		merged := &kind.Type{}
		for _, b := range branches {
			for _, f := range b {
				if f.typ != nil && slices.Equal(f.loc, loc) {
					merged.Got = f.typ.Got
					for _, w := range f.typ.Want {
						if !slices.Contains(merged.Want, w) {
							merged.Want = append(merged.Want, w)
						}
					}
				}
			}
		}
		return []failure{{loc: loc, msg: typeMessage(merged), typ: merged}}
	}
	discriminatorMiss := func(b []failure) bool {
		return slices.ContainsFunc(b, func(f failure) bool {
			return f.literal && len(f.loc) == len(loc)+1 && slices.Equal(f.loc[:len(loc)], loc)
		})
	}
	cand := slices.DeleteFunc(slices.Clone(branches), wrongType)
	if rest := slices.DeleteFunc(slices.Clone(cand), discriminatorMiss); len(rest) > 0 {
		cand = rest
	}
	best := cand[0]
	for _, b := range cand[1:] {
		if db, dbest := deepest(b), deepest(best); db > dbest || db == dbest && len(b) < len(best) {
			best = b
		}
	}
	return best
}

// deepest returns the longest instance location among fs.
func deepest(fs []failure) int {
	n := 0
	for _, f := range fs {
		n = max(n, len(f.loc))
	}
	return n
}

// typeMessage renders a type mismatch, "null" last: "got number, want string or null".
func typeMessage(k *kind.Type) string {
	want := make([]string, 0, len(k.Want))
	for _, w := range k.Want {
		if w != "null" {
			want = append(want, w)
		}
	}
	if len(want) < len(k.Want) {
		want = append(want, "null")
	}
	return fmt.Sprintf("got %s, want %s", k.Got, strings.Join(want, " or "))
}

// oneOfMessage renders an enum failure: `must be "a"` or `must be one of "a", "b"`.
func oneOfMessage(want []any) string {
	if len(want) == 1 {
		return "must be " + display(want[0])
	}
	parts := make([]string, len(want))
	for i, w := range want {
		parts[i] = display(w)
	}
	return "must be one of " + strings.Join(parts, ", ")
}

// ratString renders a schema bound the way it was written: 20, 0.5, 1e+30.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	if strings.HasSuffix(word, "y") {
		return word[:len(word)-1] + "ies"
	}
	return word + "s"
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		b, _ := json.Marshal(n)
		q[i] = string(b)
	}
	return strings.Join(q, ", ")
}

// pointer renders an instance location as a JSON pointer, "(root)" for the root.
func pointer(loc []string) string {
	if len(loc) == 0 {
		return rootPath
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		if strings.ContainsAny(tok, "~/") {
			tok = strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
		}
		b.WriteString(tok)
	}
	return b.String()
}

// comparePaths orders JSON pointers token by token, array indexes numerically, the root first.
func comparePaths(a, b string) int {
	if a == b {
		return 0
	}
	if a == rootPath {
		return -1
	}
	if b == rootPath {
		return 1
	}
	ta, tb := strings.Split(a[1:], "/"), strings.Split(b[1:], "/")
	for i := 0; i < len(ta) && i < len(tb); i++ {
		if ta[i] == tb[i] {
			continue
		}
		na, ea := strconv.Atoi(ta[i])
		nb, eb := strconv.Atoi(tb[i])
		if ea == nil && eb == nil {
			return cmp.Compare(na, nb)
		}
		return strings.Compare(ta[i], tb[i])
	}
	return len(ta) - len(tb)
}
