package schema

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Run("S002_3_1_object_schema", func(t *testing.T) {
		for _, js := range []string{
			`{"type":"string"}`, `{"type":"array","items":{"type":"string"}}`, `{"type":["object","null"]}`,
			`{"properties":{"a":{"type":"string"}}}`, `true`, `{"anyOf":[{"type":"object"}]}`,
		} {
			p := Check(mustParse(t, js))
			if !hasProblem(p, "", "root must be an object schema (type: object)") {
				t.Errorf("Check(%s) = %v, want the root problem", js, p)
			}
		}
		for _, js := range []string{
			`{"type":"object"}`, `{"type":"object","properties":{}}`, `{"type":["object"]}`,
			`{"$ref":"#/$defs/Args","$defs":{"Args":{"type":"object","properties":{"q":{"type":"string"}}}}}`,
		} {
			if p := Check(mustParse(t, js)); p != nil {
				t.Errorf("Check(%s) = %v, want none", js, p)
			}
		}
	})

	t.Run("S002_3_2_allowed_types", func(t *testing.T) {
		// Every type and wrapper of the Zod set, in the JSON Schema it becomes.
		ok := `{"type":"object","properties":{
			"s":{"type":"string","minLength":1,"maxLength":9,"pattern":"^[a-z]+$","format":"email"},
			"n":{"type":"number","minimum":0,"maximum":1,"exclusiveMinimum":-1,"exclusiveMaximum":2,"multipleOf":0.5},
			"i":{"type":"integer"},
			"b":{"type":"boolean"},
			"z":{"type":"null"},
			"lit":{"const":"x"},
			"e":{"type":"string","enum":["a","b"]},
			"opt":{"type":"string"},
			"nul":{"type":["string","null"]},
			"def":{"type":"integer","default":3,"title":"D","description":"with default"},
			"arr":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3,"uniqueItems":true},
			"obj":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false},
			"rec":{"type":"object","additionalProperties":{"type":"number"}},
			"uni":{"anyOf":[{"type":"string"},{"type":"number"}]},
			"one":{"oneOf":[{"type":"string"},{"type":"boolean"}]},
			"ref":{"$ref":"#/$defs/point"}
		},"required":["s","n","i","b","z","lit","e","nul","def","arr","obj","rec","uni","one","ref"],
		"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"}}}}}`
		if p := Check(mustParse(t, ok)); p != nil {
			t.Fatalf("Check = %v", p)
		}
		rejected := []struct{ js, path, keyword string }{
			{`{"type":"object","allOf":[{"type":"object"}]}`, "allOf", "allOf"},
			{`{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`, "properties.a.not", "not"},
			{`{"type":"object","if":{"type":"object"},"then":{},"else":{}}`, "if", "if"},
			{`{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, "patternProperties", "patternProperties"},
			{`{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"}]}}}`, "properties.t.prefixItems", "prefixItems"},
			{`{"type":"object","properties":{"a":{"type":"string","x-unknown":1}}}`, "properties.a.x-unknown", "x-unknown"},
			{`{"type":"object","$dynamicRef":"#meta"}`, "$dynamicRef", "$dynamicRef"},
			{`{"type":"object","minProperties":1}`, "minProperties", "minProperties"},
			{`{"type":"object","properties":{"a":{"$schema":"x"}}}`, "properties.a.$schema", "$schema"},
		}
		for _, r := range rejected {
			p := Check(mustParse(t, r.js))
			if !hasProblem(p, r.path, fmt.Sprintf("unsupported keyword %q", r.keyword)) {
				t.Errorf("Check(%s) = %v, want unsupported keyword %q at %q", r.js, p, r.keyword, r.path)
			}
		}
	})

	t.Run("invalid values", func(t *testing.T) {
		tests := []struct{ name, js, path, msg string }{
			{"unknown type", `{"type":"object","properties":{"q":{"type":"strin"}}}`, "properties.q.type", `unknown type "strin"`},
			{"unknown type in list", `{"type":"object","properties":{"q":{"type":["string","nil"]}}}`, "properties.q.type", `unknown type "nil"`},
			{"bad pattern", `{"type":"object","properties":{"q":{"type":"string","pattern":"(?=x)"}}}`, "properties.q.pattern", "Go (RE2)"},
			{"negative minLength", `{"type":"object","properties":{"q":{"type":"string","minLength":-1}}}`, "properties.q.minLength", "must not be negative"},
			{"negative maxItems", `{"type":"object","properties":{"q":{"type":"array","maxItems":-2}}}`, "properties.q.maxItems", "must not be negative"},
			{"min over max", `{"type":"object","properties":{"q":{"type":"string","minLength":5,"maxLength":2}}}`, "properties.q.minLength", "greater than maxLength"},
			{"undeclared required", `{"type":"object","properties":{"a":{}},"required":["a","b"]}`, "required", `required property "b" is not declared`},
			{"empty enum", `{"type":"object","properties":{"e":{"enum":[]}}}`, "properties.e.enum", "at least one value"},
			{"enum type", `{"type":"object","properties":{"e":{"type":"string","enum":["a",1]}}}`, "properties.e.enum", "enum value 1 does not match type string"},
			{"bad default", `{"type":"object","properties":{"l":{"type":"integer","maximum":20,"default":50}}}`, "properties.l.default", "default 50 does not match its schema: must be <= 20"},
			{"default type", `{"type":"object","properties":{"l":{"type":"integer","default":"ten"}}}`, "properties.l.default", "got string, want integer"},
			{"default enum", `{"type":"object","properties":{"l":{"enum":["a"],"default":"b"}}}`, "properties.l.default", "enum"},
			{"object default", `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"string"}},"default":{"a":1}}}}`, "properties.o.default", "/a: got number, want string"},
			{"dangling ref", `{"type":"object","properties":{"p":{"$ref":"#/$defs/nope"}}}`, "properties.p.$ref", "names no definition"},
			{"remote ref", `{"type":"object","properties":{"p":{"$ref":"http://x/y.json"}}}`, "properties.p.$ref", "is not supported"},
			{"recursive ref", `{"type":"object","properties":{"n":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}}}`, "$defs.node", "recursive $ref: #/$defs/node -> #/$defs/node"},
			{"mutual recursion", `{"type":"object","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"}]},"b":{"type":"array","items":{"$ref":"#/$defs/a"}}}}`, "$defs.a", "recursive $ref"},
			{"empty anyOf", `{"type":"object","properties":{"u":{"anyOf":[]}}}`, "properties.u.anyOf", "at least one schema"},
			{"multipleOf zero", `{"type":"object","properties":{"n":{"type":"number","multipleOf":0}}}`, "properties.n.multipleOf", "greater than 0"},
			{"tuple items", `{"type":"object","properties":{"t":{"type":"array","items":[{"type":"string"}]}}}`, "properties.t.items", "tuples"},
			{"false property", `{"type":"object","properties":{"a":false}}`, "properties.a", "false schema"},
			{"nested defs", `{"type":"object","properties":{"a":{"$defs":{"x":{}}}}}`, "properties.a.$defs", `unsupported keyword "$defs"`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := Check(mustParse(t, tt.js))
				if !hasProblem(p, tt.path, tt.msg) {
					t.Fatalf("Check = %v\nwant a problem at %q containing %q", p, tt.path, tt.msg)
				}
			})
		}
	})

	t.Run("every problem reported", func(t *testing.T) {
		p := Check(mustParse(t, `{"type":"string","allOf":[],"properties":{"a":{"type":"x","pattern":"(","minLength":-1}},"required":["b"]}`))
		if len(p) != 6 {
			t.Fatalf("want 6 problems, got %d: %v", len(p), p)
		}
		// Deterministic order.
		for range 10 {
			if again := Check(mustParse(t, `{"type":"string","allOf":[],"properties":{"a":{"type":"x","pattern":"(","minLength":-1}},"required":["b"]}`)); fmt.Sprint(again) != fmt.Sprint(p) {
				t.Fatalf("order changed: %v vs %v", again, p)
			}
		}
	})

	t.Run("records allow undeclared required", func(t *testing.T) {
		if p := Check(mustParse(t, `{"type":"object","additionalProperties":{"type":"string"},"required":["x"]}`)); p != nil {
			t.Fatal(p)
		}
	})

	t.Run("typical", func(t *testing.T) {
		if p := Check(typical(t)); p != nil {
			t.Fatal(p)
		}
	})

	t.Run("nil", func(t *testing.T) {
		if p := Check(nil); len(p) != 1 {
			t.Fatal(p)
		}
		if p := Check(Object(Field("a", nil))); p != nil {
			t.Fatal("nil property schema from the builder means any", p)
		}
		s := Object()
		s.Properties["x"] = nil
		if p := Check(s); !hasProblem(p, "properties.x", "missing") {
			t.Fatal(p)
		}
	})
}

// hasProblem reports whether ps has a problem at path whose message contains msg.
func hasProblem(ps []Problem, path, msg string) bool {
	for _, p := range ps {
		if p.Path == path && strings.Contains(p.Message, msg) {
			return true
		}
	}
	return false
}

// nested builds a schema of the given depth that cycles through every kind of level (object,
// record value, union branch, array item) and an instance of it whose deepest leaf is leaf.
func nested(depth int, leaf any) (*Schema, any, string) {
	s, path := Object(Field("leaf", String())), "/leaf"
	var v any = map[string]any{"leaf": leaf}
	for level := depth - 1; level >= 1; level-- {
		switch level % 4 {
		case 1: // object property
			s, v, path = Object(Field("obj", s)), map[string]any{"obj": v}, "/obj"+path
		case 2: // record value
			s, v, path = Record(s), map[string]any{"k": v}, "/k"+path
		case 3: // union branch (with a primitive alternative)
			s = Union(Number(), s)
		case 0: // array item
			s, v, path = Array(s), []any{v}, "/0"+path
		}
	}
	if s.Type != "object" || s.Properties == nil {
		s, v, path = Object(Field("root", s)), map[string]any{"root": v}, "/root"+path
	}
	return s, v, path
}

func TestDepth(t *testing.T) {
	tests := []struct {
		name string
		js   string
		want int
	}{
		{"flat", `{"type":"object","properties":{"q":{"type":"string"}}}`, 1},
		{"nested object", `{"type":"object","properties":{"o":{"type":"object","properties":{"q":{"type":"string"}}}}}`, 2},
		{"array of strings", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`, 2},
		{"array of objects counts once", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"x":{}}}}}}`, 2},
		{"record value", `{"type":"object","properties":{"r":{"type":"object","additionalProperties":{"type":"string"}}}}`, 3},
		{"union branch", `{"type":"object","properties":{"u":{"anyOf":[{"type":"string"},{"type":"object","properties":{"x":{"type":"object"}}}]}}}`, 3},
		{"via ref", `{"type":"object","properties":{"p":{"$ref":"#/$defs/o"}},"$defs":{"o":{"type":"object","properties":{"x":{"type":"object"}}}}}`, 3},
		{"recursive ref terminates", `{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}}}}}`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Depth(mustParse(t, tt.js)); got != tt.want {
				t.Fatalf("Depth = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestNesting(t *testing.T) {
	t.Run("S002_3_3_nesting_7", func(t *testing.T) {
		s, good, deepPath := nested(7, "ok")
		if d := Depth(s); d != 7 {
			t.Fatalf("Depth = %d, want 7 (%s)", d, marshal(t, s))
		}
		if p := Check(s); p != nil {
			t.Fatalf("Check = %v", p)
		}
		v, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Validate(good); err != nil {
			t.Fatalf("Validate(good) = %v", err)
		}
		_, bad, _ := nested(7, 42.0)
		_, err = v.Validate(bad)
		want := deepPath + ": got number, want string"
		if err == nil || err.Error() != want {
			t.Fatalf("Validate(bad) = %v, want %q", err, want)
		}
		// Round trip through JSON keeps it all.
		back := mustParse(t, marshal(t, s))
		if Depth(back) != 7 || Check(back) != nil {
			t.Fatalf("round trip: depth %d, %v", Depth(back), Check(back))
		}

		s16, _, _ := nested(16, "")
		if d := Depth(s16); d != 16 {
			t.Fatalf("Depth = %d, want 16", d)
		}
		if p := Check(s16); p != nil {
			t.Fatalf("depth 16: %v", p)
		}
		s17, _, _ := nested(17, "")
		p := Check(s17)
		if len(p) != 1 || p[0] != (Problem{Path: "", Message: "schema nesting depth 17 exceeds the maximum of 16"}) {
			t.Fatalf("depth 17: %v", p)
		}
	})
}

func TestInline(t *testing.T) {
	s := mustParse(t, `{"type":"object","properties":{
		"a":{"$ref":"#/$defs/pt","description":"first"},
		"b":{"type":"array","items":{"$ref":"#/definitions/pt"}}},
		"$defs":{"pt":{"type":"object","properties":{"x":{"$ref":"#/$defs/num"}},"description":"a point"},"num":{"type":"number"}}}`)
	before := marshal(t, s)
	out, err := Inline(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"a":{"type":"object","description":"first","properties":{"x":{"type":"number"}}},"b":{"type":"array","items":{"type":"object","description":"a point","properties":{"x":{"type":"number"}}}}}}`
	if got := marshal(t, out); !orderInsensitiveEqual(got, want) {
		t.Fatalf("Inline = %s\nwant %s", got, want)
	}
	if marshal(t, s) != before {
		t.Fatal("Inline changed its input")
	}
	for _, js := range []string{
		`{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}}}}}`,
		`{"type":"object","properties":{"n":{"$ref":"#/$defs/missing"}}}`,
		`{"type":"object","properties":{"n":{"$ref":"#"}}}`,
	} {
		if _, err := Inline(mustParse(t, js)); err == nil {
			t.Errorf("Inline(%s) succeeded", js)
		}
	}
	// Exponential expansion is bounded.
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{`)
	for i := range 30 {
		fmt.Fprintf(&b, `"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}}},`, i, i+1, i+1)
	}
	b.WriteString(`"d30":{"type":"string"}}}`)
	bomb := mustParse(t, b.String())
	if _, err := Inline(bomb); err == nil {
		t.Fatal("Inline expanded a reference bomb")
	}
	if d := Depth(bomb); d != 31 {
		t.Fatalf("Depth(bomb) = %d", d)
	}
}
