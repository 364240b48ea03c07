package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// mustCompile compiles a schema or fails the test.
func mustCompile(t testing.TB, s *Schema) *Validator {
	t.Helper()
	v, err := Compile(s)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return v
}

// failuresOf returns the failures of err as "path: message" strings (nil when err is nil).
func failuresOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	out := make([]string, len(ve.Failures))
	for i, f := range ve.Failures {
		out[i] = f.Path + ": " + f.Message
	}
	return out
}

func TestValidateAllowedTypes(t *testing.T) {
	t.Run("S002_3_2_allowed_types", func(t *testing.T) {
		tests := []struct {
			name   string
			schema *Schema
			good   []string
			bad    map[string]string // instance → failure
		}{
			{"string", String(), []string{`"x"`, `""`}, map[string]string{`1`: "/v: got number, want string", `null`: "/v: got null, want string"}},
			{"number", Number(), []string{`1`, `1.5`, `-2e3`}, map[string]string{`"1"`: "/v: got string, want number"}},
			{"integer", Integer(), []string{`1`, `2.0`}, map[string]string{`1.5`: "/v: got number, want integer"}},
			{"boolean", Boolean(), []string{`true`}, map[string]string{`"true"`: "/v: got string, want boolean"}},
			{"null", Null(), []string{`null`}, map[string]string{`0`: "/v: got number, want null"}},
			{"literal", Literal("x"), []string{`"x"`}, map[string]string{`"y"`: `/v: must be "x"`}},
			{"enum", Enum("a", "b"), []string{`"a"`, `"b"`}, map[string]string{`"c"`: `/v: must be one of "a", "b"`}},
			{"nullable", Nullable(String()), []string{`"a"`, `null`}, map[string]string{`1`: "/v: got number, want string or null"}},
			{"array", Array(Integer()), []string{`[]`, `[1,2]`}, map[string]string{`[1,"x"]`: "/v/1: got string, want integer", `{}`: "/v: got object, want array"}},
			{"object", Object(Field("a", String()), OptionalField("b", Number())), []string{`{"a":"x"}`, `{"a":"x","b":1}`},
				map[string]string{`{"b":1}`: `/v: missing required property "a"`, `{"a":1}`: "/v/a: got number, want string"}},
			{"record", Record(Number()), []string{`{}`, `{"x":1,"y":2}`}, map[string]string{`{"x":"1"}`: "/v/x: got string, want number"}},
			{"union", Union(String(), Array(String())), []string{`"x"`, `["x"]`},
				map[string]string{`1`: "/v: got number, want string or array", `["x",2]`: "/v/1: got number, want string"}},
			{"discriminated union", Union(Object(Field("kind", Literal("a")), Field("n", Number())), Object(Field("kind", Literal("b")), Field("s", String()))),
				[]string{`{"kind":"a","n":1}`, `{"kind":"b","s":"x"}`}, map[string]string{`{"kind":"b","s":1}`: "/v/s: got number, want string"}},
			{"bounds", Object(Field("n", &Schema{Type: "number", Minimum: ptr(1.0), Maximum: ptr(20.0)}),
				OptionalField("s", &Schema{Type: "string", MinLength: ptr(2), MaxLength: ptr(3), Pattern: "^[a-z]+$"}),
				OptionalField("a", &Schema{Type: "array", MinItems: ptr(1), MaxItems: ptr(2), UniqueItems: true})),
				[]string{`{"n":1,"s":"ab","a":[1]}`}, map[string]string{
					`{"n":0}`:                  "/v/n: must be >= 1",
					`{"n":21}`:                 "/v/n: must be <= 20",
					`{"n":5,"s":"a"}`:          "/v/s: must be at least 2 characters long",
					`{"n":5,"s":"abcd"}`:       "/v/s: must be at most 3 characters long",
					`{"n":5,"s":"A1"}`:         `/v/s: must match pattern "^[a-z]+$"`,
					`{"n":5,"a":[]}`:           "/v/a: must have at least 1 item",
					`{"n":5,"a":[1,2,3]}`:      "/v/a: must have at most 2 items",
					`{"n":5,"a":[1,1]}`:        "/v/a: must not contain duplicates (items 0 and 1 are equal)",
					`{"n":5,"s":"ab","x":1}`:   "", // open object: fine
					`{"n":5.5,"s":"ab","a":1}`: "/v/a: got number, want array",
				}},
			{"optional", Object(OptionalField("o", String())), []string{`{}`, `{"o":"x"}`}, map[string]string{`{"o":1}`: "/v/o: got number, want string"}},
			{"default", Object(OptionalField("n", WithDefault(Integer(), 3))), []string{`{}`, `{"n":4}`}, map[string]string{`{"n":"x"}`: "/v/n: got string, want integer"}},
			{"closed", Strict(Object(Field("a", String())), Closed), []string{`{"a":"x"}`}, map[string]string{`{"a":"x","b":1}`: `/v: unknown property "b"`}},
			{"format is annotation", &Schema{Type: "string", Format: "date-time"}, []string{`"not a date"`}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				// Each type is checked as the property "v" of an object, as arguments are.
				v := mustCompile(t, Object(Field("v", tt.schema)))
				for _, g := range tt.good {
					if _, err := v.Validate(map[string]any{"v": decode(t, g)}); err != nil {
						t.Errorf("Validate(%s) = %v", g, err)
					}
				}
				for in, want := range tt.bad {
					_, err := v.Validate(map[string]any{"v": decode(t, in)})
					got := strings.Join(failuresOf(t, err), "; ")
					if got != want {
						t.Errorf("Validate(%s) = %q, want %q", in, got, want)
					}
				}
			})
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestValidate(t *testing.T) {
	v := mustCompile(t, typical(t))
	for _, id := range []string{"S002_3_4_validate_before_use", "S003_8_validate_args"} {
		t.Run(id+"/every_failure", func(t *testing.T) {
			in := decode(t, `{"limit":50,"tags":["a",1,"c",true],"filters":{"category":"toys","inStock":"yes"}}`)
			_, err := v.Validate(in)
			want := []string{
				`(root): missing required property "query"`,
				`/filters/category: must be one of "books", "music", "film"`,
				`/filters/inStock: got string, want boolean`,
				`/limit: must be <= 20`,
				`/tags/1: got number, want string`,
				`/tags/3: got boolean, want string`,
			}
			if got := failuresOf(t, err); !reflect.DeepEqual(got, want) {
				t.Fatalf("failures:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if err.Error() != strings.Join(want, "; ") {
				t.Fatalf("Error() = %q", err.Error())
			}
		})
		t.Run(id+"/defaults", func(t *testing.T) {
			in := map[string]any{"query": "go", "filters": map[string]any{"category": "books"}}
			got, err := v.Validate(in)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"query": "go", "limit": 10.0, "filters": map[string]any{"category": "books", "inStock": true}}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Validate = %#v, want %#v", got, want)
			}
			if !reflect.DeepEqual(in, map[string]any{"query": "go", "filters": map[string]any{"category": "books"}}) {
				t.Fatalf("input mutated: %#v", in)
			}
		})
		t.Run(id+"/null_is_not_absent", func(t *testing.T) {
			_, err := v.Validate(map[string]any{"query": "go", "limit": nil})
			if got := failuresOf(t, err); !reflect.DeepEqual(got, []string{"/limit: got null, want integer"}) {
				t.Fatal(got)
			}
		})
		t.Run(id+"/nested_defaults", func(t *testing.T) {
			s := Object(
				Field("q", String()),
				OptionalField("opts", WithDefault(Object(
					OptionalField("depth", WithDefault(Integer(), 2)),
					OptionalField("inner", WithDefault(Object(OptionalField("flag", WithDefault(Boolean(), false))), map[string]any{})),
				), map[string]any{})),
				OptionalField("list", Array(Object(Field("id", Integer()), OptionalField("w", WithDefault(Number(), 1))))),
				OptionalField("rec", Record(Object(OptionalField("on", WithDefault(Boolean(), true))))),
			)
			if p := Check(s); p != nil {
				t.Fatal(p)
			}
			vd := mustCompile(t, s)
			in := decode(t, `{"q":"x","list":[{"id":1},{"id":2,"w":5}],"rec":{"a":{},"b":{"on":false}}}`)
			inCopy := decode(t, `{"q":"x","list":[{"id":1},{"id":2,"w":5}],"rec":{"a":{},"b":{"on":false}}}`)
			got, err := vd.Validate(in)
			if err != nil {
				t.Fatal(err)
			}
			want := decode(t, `{"q":"x","opts":{"depth":2,"inner":{"flag":false}},"list":[{"id":1,"w":1},{"id":2,"w":5}],"rec":{"a":{"on":true},"b":{"on":false}}}`)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Validate = %v\nwant %v", got, want)
			}
			if !reflect.DeepEqual(in, inCopy) {
				t.Fatalf("input mutated: %v", in)
			}
			// Each call gets its own default values.
			got.(map[string]any)["opts"].(map[string]any)["depth"] = 99.0
			again, _ := vd.Validate(map[string]any{"q": "x"})
			if again.(map[string]any)["opts"].(map[string]any)["depth"] != 2.0 {
				t.Fatal("default shared between calls")
			}
		})
	}

	t.Run("absent args", func(t *testing.T) {
		vd := mustCompile(t, Object(OptionalField("n", WithDefault(Integer(), 3))))
		for _, in := range []any{nil, map[string]any(nil)} {
			got, err := vd.Validate(in)
			if err != nil || !reflect.DeepEqual(got, map[string]any{"n": 3.0}) {
				t.Fatalf("Validate(%#v) = %v, %v", in, got, err)
			}
		}
		if _, err := vd.Validate("x"); err == nil || err.Error() != "(root): got string, want object" {
			t.Fatalf("Validate(string) = %v", err)
		}
	})

	t.Run("go values", func(t *testing.T) {
		// Typed Go values and json.Number are accepted; integers stay integers.
		vd := mustCompile(t, typical(t))
		in := map[string]any{"query": "go", "limit": json.Number("5"), "tags": []string{"a"}}
		if _, err := vd.Validate(in); err != nil {
			t.Fatal(err)
		}
		if _, err := vd.Validate(map[string]any{"query": "go", "limit": 7}); err != nil {
			t.Fatal(err)
		}
		_, err := vd.Validate(map[string]any{"query": "go", "limit": json.Number("5.5")})
		if got := failuresOf(t, err); !reflect.DeepEqual(got, []string{"/limit: got number, want integer"}) {
			t.Fatal(got)
		}
		if _, err := vd.Validate(map[string]any{"query": make(chan int)}); err == nil {
			t.Fatal("accepted a channel")
		}
	})

	t.Run("escaped paths", func(t *testing.T) {
		vd := mustCompile(t, Object(Field("a/b", Object(Field("c~d", String())))))
		_, err := vd.Validate(decode(t, `{"a/b":{"c~d":1}}`))
		if got := failuresOf(t, err); !reflect.DeepEqual(got, []string{"/a~1b/c~0d: got number, want string"}) {
			t.Fatal(got)
		}
	})

	t.Run("sorted numerically", func(t *testing.T) {
		vd := mustCompile(t, Object(Field("a", Array(String()))))
		in := map[string]any{"a": []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}
		_, err := vd.Validate(in)
		got := failuresOf(t, err)
		if len(got) != 11 || !strings.HasPrefix(got[1], "/a/1:") || !strings.HasPrefix(got[10], "/a/10:") {
			t.Fatal(got)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		vd := mustCompile(t, typical(t))
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for range 200 {
					in := map[string]any{"query": "q", "tags": []any{"x"}}
					if i%2 == 0 {
						in["limit"] = 99.0
					}
					_, err := vd.Validate(in)
					if (err != nil) != (i%2 == 0) {
						t.Errorf("Validate = %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
	})

	t.Run("recursive schema compiles", func(t *testing.T) {
		vd := mustCompile(t, mustParse(t, `{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/n"}}}}}`))
		_, err := vd.Validate(decode(t, `{"n":{"v":1,"next":{"v":"x"}}}`))
		if got := failuresOf(t, err); !reflect.DeepEqual(got, []string{"/n/next/v: got string, want integer"}) {
			t.Fatal(got)
		}
	})

	t.Run("bad schema", func(t *testing.T) {
		if _, err := Compile(mustParse(t, `{"type":"object","properties":{"a":{"type":"string","pattern":"(?=x)"}}}`)); err == nil {
			t.Fatal("compiled a pattern RE2 rejects")
		}
		if _, err := Compile(mustParse(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}}}`)); err == nil {
			t.Fatal("compiled a dangling $ref")
		}
	})
}

func TestRequiredSchema(t *testing.T) {
	// The prompt seed's example requiredSchema: query string, limit optional number default 10.
	s := Object(
		Field("query", Describe(String(), "Search query")),
		OptionalField("limit", Describe(WithDefault(Number(), 10), "Max results")),
	)
	t.Run("S000_5_2_validate_inputs", func(t *testing.T) {
		vd := mustCompile(t, s)
		for in, want := range map[string]string{
			`{}`:                        `(root): missing required property "query"`,
			`{"query":5}`:               "/query: got number, want string",
			`{"query":"x","limit":"a"}`: "/limit: got string, want number",
			`[]`:                        "(root): got array, want object",
		} {
			_, err := vd.Validate(decode(t, in))
			if got := strings.Join(failuresOf(t, err), "; "); got != want {
				t.Errorf("Validate(%s) = %q, want %q", in, got, want)
			}
		}
		got, err := vd.Validate(decode(t, `{"query":"x"}`))
		if err != nil || !reflect.DeepEqual(got, map[string]any{"query": "x", "limit": 10.0}) {
			t.Fatalf("Validate = %v, %v", got, err)
		}
	})
}
