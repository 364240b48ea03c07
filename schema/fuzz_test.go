package schema

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fuzzSchemas are the fixed schemas FuzzValidate throws instances at.
func fuzzSchemas(t testing.TB) []*Validator {
	data, err := os.ReadFile("testdata/typical.json")
	if err != nil {
		t.Fatal(err)
	}
	nested7, _, _ := nested(7, "")
	schemas := []*Schema{
		mustParse(t, string(data)),
		nested7,
		Object(
			Field("kind", Union(
				Object(Field("type", Literal("a")), OptionalField("n", WithDefault(Integer(), 1))),
				Object(Field("type", Literal("b")), Field("s", Nullable(String()))),
			)),
			OptionalField("opts", WithDefault(Object(OptionalField("deep", WithDefault(Boolean(), false))), map[string]any{})),
			OptionalField("rec", Record(Object(OptionalField("v", WithDefault(Array(Number()), []any{}))))),
		),
		Strict(mustParse(t, string(data)), OpenAIStrict),
		NoArgs(),
	}
	out := make([]*Validator, len(schemas))
	for i, s := range schemas {
		out[i] = mustCompile(t, s)
	}
	return out
}

// FuzzValidate feeds arbitrary JSON instances to fixed schemas: Validate never panics, never
// changes its input, and a value it returns validates again unchanged.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{"query":"x","limit":5,"tags":["a"],"filters":{"category":"books"}}`,
		`{"limit":50,"tags":[1,2],"filters":{"category":"toys","inStock":"no"}}`,
		`{"obj":{"k":[{"obj":{"k":{"leaf":"x"}}}]}}`,
		`{"kind":{"type":"a"},"rec":{"x":{}}}`,
		`{"kind":{"type":"b","s":null},"opts":null}`,
		`null`, `[]`, `"x"`, `1e400`, `{"a":{"b":{"c":[[[[]]]]}}}`,
	} {
		f.Add([]byte(seed))
	}
	validators := fuzzSchemas(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var in any
		if json.Unmarshal(data, &in) != nil {
			return
		}
		var before any
		_ = json.Unmarshal(data, &before)
		for i, v := range validators {
			out, err := v.Validate(in)
			if !reflect.DeepEqual(in, before) {
				t.Fatalf("schema %d: Validate changed its input", i)
			}
			if err != nil {
				if ve, ok := err.(*ValidationError); !ok || len(ve.Failures) == 0 {
					t.Fatalf("schema %d: error %v without failures", i, err)
				}
				continue
			}
			again, err := v.Validate(out)
			if err != nil {
				t.Fatalf("schema %d: returned value %v fails again: %v", i, out, err)
			}
			if !reflect.DeepEqual(again, out) {
				t.Fatalf("schema %d: defaults not idempotent: %v then %v", i, out, again)
			}
		}
	})
}

// FuzzParseCheck feeds arbitrary bytes to Parse and everything after it: nothing panics, and a
// schema Check accepts compiles, marshals, and stays acceptable after Strict.
func FuzzParseCheck(f *testing.F) {
	data, err := os.ReadFile("testdata/typical.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for _, seed := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"null"}]}}}}`,
		`{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}}}}}`,
		`{"type":"object","properties":{"o":{"type":"object","default":{"a":1},"properties":{"a":{"type":"string"}}}}}`,
		`{"type":"object","allOf":[{}],"properties":{"p":{"type":"string","pattern":"(?=x)","minLength":-1}}}`,
		`{"type":["object","null"],"additionalProperties":{"enum":[1,"a",null]},"required":["x"]}`,
		`{"type":"object","properties":{"c":{"const":{"a":[1]}},"e":{"oneOf":[{"type":"integer","multipleOf":0.5}]}}}`,
		`true`, `false`, `{}`, `[]`, `{"type":"object","properties":{"a":false}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		problems := Check(s)
		_ = Depth(s)
		_, _ = Inline(s)
		v, compileErr := Compile(s)
		for _, mode := range []StrictMode{Closed, OpenAIStrict} {
			st := Strict(s, mode)
			if problems == nil {
				if _, err := json.Marshal(st); err != nil {
					t.Fatalf("Strict(%d) does not marshal: %v", mode, err)
				}
				// Closing an object may invalidate an object default with undeclared keys; that
				// is the author's default against the stricter form, not a Strict bug.
				p := slices.DeleteFunc(Check(st), func(p Problem) bool {
					return mode == Closed && strings.HasSuffix(p.Path, "default")
				})
				if len(p) > 0 {
					t.Fatalf("Strict(%d) of a clean schema has problems: %v\n%s", mode, p, data)
				}
			}
		}
		_ = DropNulls(s, map[string]any{"a": nil, "b": []any{nil, map[string]any{"c": nil}}})
		if problems != nil {
			return
		}
		if compileErr != nil {
			t.Fatalf("Check is clean but Compile fails: %v\n%s", compileErr, data)
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("clean schema does not marshal: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("marshalled schema does not parse: %v\n%s", err, out)
		}
		if p := Check(back); p != nil {
			t.Fatalf("round trip adds problems: %v\n%s", p, out)
		}
		if _, err := v.Validate(nil); err != nil {
			_ = err // a schema may require properties; it must only not panic
		}
	})
}
