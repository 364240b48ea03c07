package schema

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// mustParse parses a schema or fails the test.
func mustParse(t testing.TB, js string) *Schema {
	t.Helper()
	s, err := Parse([]byte(js))
	if err != nil {
		t.Fatalf("Parse(%s): %v", js, err)
	}
	return s
}

// typical loads testdata/typical.json, a typical tool-argument schema.
func typical(t testing.TB) *Schema {
	t.Helper()
	data, err := os.ReadFile("testdata/typical.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// marshal renders a schema as compact JSON or fails the test.
func marshal(t testing.TB, s *Schema) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	return string(b)
}

// decode decodes a JSON instance or fails the test.
func decode(t testing.TB, js string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("decode %s: %v", js, err)
	}
	return v
}

func TestNoArgs(t *testing.T) {
	t.Run("S002_3_5_no_args", func(t *testing.T) {
		if got, want := marshal(t, NoArgs()), `{"type":"object","properties":{}}`; got != want {
			t.Fatalf("NoArgs() = %s, want %s", got, want)
		}
		if p := Check(NoArgs()); p != nil {
			t.Fatalf("Check(NoArgs()) = %v", p)
		}
		v, err := Compile(NoArgs())
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.Validate(nil)
		if err != nil || !reflect.DeepEqual(got, map[string]any{}) {
			t.Fatalf("Validate(nil) = %v, %v; want {}, nil", got, err)
		}
		if _, err := v.Validate(map[string]any{"x": 1.0}); err != nil {
			t.Fatalf("NoArgs is open (Strict closes it), got %v", err)
		}
		if got := marshal(t, Strict(NoArgs(), OpenAIStrict)); got != `{"type":"object","properties":{},"additionalProperties":false}` {
			t.Fatalf("Strict(NoArgs()) = %s", got)
		}
	})
}

func TestMarshalKeepsPropertyOrder(t *testing.T) {
	tests := []struct {
		name string
		s    *Schema
		want string
	}{
		{"builder order", Object(Field("zeta", String()), OptionalField("alpha", Integer()), Field("mid", Boolean())),
			`{"type":"object","required":["zeta","mid"],"properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"},"mid":{"type":"boolean"}}}`},
		{"parsed order", mustParse(t, `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"object","properties":{"y":{},"x":{}}}}}`),
			`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"object","properties":{"y":true,"x":true}}}}`},
		{"record and nullable", Object(Field("m", Record(Nullable(Number())))),
			`{"type":"object","required":["m"],"properties":{"m":{"type":"object","additionalProperties":{"type":["number","null"]}}}}`},
		{"false additionalProperties", mustParse(t, `{"type":"object","additionalProperties":false}`),
			`{"type":"object","additionalProperties":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := marshal(t, tt.s)
			if !orderInsensitiveEqual(got, tt.want) {
				t.Fatalf("marshal = %s\nwant      %s", got, tt.want)
			}
			// The properties must appear in PropertyOrder (google sorts other keys its own way).
			if tt.s.PropertyOrder != nil {
				last := -1
				for _, name := range tt.s.PropertyOrder {
					i := strings.Index(got, `"`+name+`":`)
					if i < last {
						t.Fatalf("property %q out of order in %s", name, got)
					}
					last = i
				}
			}
			if !json.Valid([]byte(got)) || strings.ContainsAny(got, "\n ") {
				t.Fatalf("not compact valid JSON: %s", got)
			}
			// Round trip.
			back := mustParse(t, got)
			if again := marshal(t, back); again != got {
				t.Fatalf("round trip changed %s into %s", got, again)
			}
		})
	}
}

// orderInsensitiveEqual compares two JSON documents as values.
func orderInsensitiveEqual(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func TestParse(t *testing.T) {
	if _, err := Parse([]byte(`{"type":5}`)); err == nil {
		t.Fatal("Parse accepted type 5")
	}
	if _, err := Parse([]byte(`{`)); err == nil {
		t.Fatal("Parse accepted truncated JSON")
	}
	s, err := FromMap(map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Properties["q"].Type != "string" || len(s.Required) != 1 {
		t.Fatalf("FromMap = %s", marshal(t, s))
	}
	if _, err := FromMap(map[string]any{"x": make(chan int)}); err == nil {
		t.Fatal("FromMap accepted a channel")
	}
}

func TestBuilders(t *testing.T) {
	tests := []struct {
		name string
		s    *Schema
		want string
	}{
		{"string", String(), `{"type":"string"}`},
		{"number", Number(), `{"type":"number"}`},
		{"integer", Integer(), `{"type":"integer"}`},
		{"boolean", Boolean(), `{"type":"boolean"}`},
		{"null", Null(), `{"type":"null"}`},
		{"array", Array(String()), `{"type":"array","items":{"type":"string"}}`},
		{"record", Record(Integer()), `{"type":"object","additionalProperties":{"type":"integer"}}`},
		{"enum", Enum("a", "b"), `{"type":"string","enum":["a","b"]}`},
		{"mixed enum", Enum("a", 1), `{"enum":["a",1]}`},
		{"literal", Literal("x"), `{"type":"string","const":"x"}`},
		{"union", Union(String(), Number()), `{"anyOf":[{"type":"string"},{"type":"number"}]}`},
		{"nullable type", Nullable(String()), `{"type":["string","null"]}`},
		{"nullable enum", Nullable(Enum("a")), `{"type":["string","null"],"enum":["a",null]}`},
		{"nullable union", Nullable(Union(String(), Number())), `{"anyOf":[{"type":"string"},{"type":"number"},{"type":"null"}]}`},
		{"nullable literal", Nullable(Describe(Literal(1), "one")), `{"anyOf":[{"type":"integer","const":1},{"type":"null"}],"description":"one"}`},
		{"nullable twice", Nullable(Nullable(String())), `{"type":["string","null"]}`},
		{"describe", Describe(String(), "Search query"), `{"type":"string","description":"Search query"}`},
		{"default", WithDefault(Integer(), 10), `{"type":"integer","default":10}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := marshal(t, tt.s); !orderInsensitiveEqual(got, tt.want) {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
	t.Run("wrappers copy", func(t *testing.T) {
		s := String()
		_ = Describe(s, "x")
		_ = WithDefault(s, "y")
		_ = Nullable(s)
		if marshal(t, s) != `{"type":"string"}` {
			t.Fatalf("input changed: %s", marshal(t, s))
		}
	})
	t.Run("WithDefault panics on non-JSON", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		WithDefault(String(), make(chan int))
	})
}
