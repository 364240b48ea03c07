package schema

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestStrict(t *testing.T) {
	src := mustParse(t, `{"type":"object","description":"args","properties":{
		"q":{"type":"string","description":"query"},
		"limit":{"type":"integer","default":10,"description":"max"},
		"kind":{"type":"string","enum":["a","b"]},
		"lit":{"const":"x"},
		"note":{"type":["string","null"]},
		"opts":{"type":"object","properties":{"deep":{"type":"boolean"}},"required":[]},
		"rec":{"type":"object","additionalProperties":{"type":"object","properties":{"v":{"type":"number"}}}},
		"open":{"type":"object","additionalProperties":true},
		"list":{"type":"array","items":{"$ref":"#/$defs/item"}},
		"u":{"anyOf":[{"type":"string"},{"type":"object","properties":{"z":{"type":"integer"}}}]}
	},"required":["q"],"$defs":{"item":{"type":"object","properties":{"id":{"type":"integer"},"tag":{"type":"string"}},"required":["id"]}}}`)
	before := marshal(t, src)

	tests := []struct {
		mode StrictMode
		want string
	}{
		{Closed, `{"type":"object","description":"args","additionalProperties":false,"required":["q"],"properties":{
			"q":{"type":"string","description":"query"},
			"limit":{"type":"integer","default":10,"description":"max"},
			"kind":{"type":"string","enum":["a","b"]},
			"lit":{"const":"x"},
			"note":{"type":["string","null"]},
			"opts":{"type":"object","properties":{"deep":{"type":"boolean"}},"additionalProperties":false},
			"rec":{"type":"object","additionalProperties":{"type":"object","properties":{"v":{"type":"number"}},"additionalProperties":false}},
			"open":{"type":"object","additionalProperties":true},
			"list":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"tag":{"type":"string"}},"required":["id"],"additionalProperties":false}},
			"u":{"anyOf":[{"type":"string"},{"type":"object","properties":{"z":{"type":"integer"}},"additionalProperties":false}]}}}`},
		{OpenAIStrict, `{"type":"object","description":"args","additionalProperties":false,
			"required":["q","limit","kind","lit","note","opts","rec","open","list","u"],"properties":{
			"q":{"type":"string","description":"query"},
			"limit":{"type":["integer","null"],"description":"max"},
			"kind":{"type":["string","null"],"enum":["a","b",null]},
			"lit":{"anyOf":[{"const":"x"},{"type":"null"}]},
			"note":{"type":["string","null"]},
			"opts":{"type":["object","null"],"properties":{"deep":{"type":["boolean","null"]}},"required":["deep"],"additionalProperties":false},
			"rec":{"type":["object","null"],"additionalProperties":{"type":"object","properties":{"v":{"type":["number","null"]}},"required":["v"],"additionalProperties":false}},
			"open":{"type":["object","null"],"additionalProperties":true},
			"list":{"type":["array","null"],"items":{"type":"object","properties":{"id":{"type":"integer"},"tag":{"type":["string","null"]}},"required":["id","tag"],"additionalProperties":false}},
			"u":{"anyOf":[{"type":"string"},{"type":"object","properties":{"z":{"type":["integer","null"]}},"required":["z"],"additionalProperties":false},{"type":"null"}]}}}`},
	}
	for _, tt := range tests {
		t.Run([]string{"closed", "openai"}[tt.mode], func(t *testing.T) {
			out := Strict(src, tt.mode)
			if got := marshal(t, out); !orderInsensitiveEqual(got, tt.want) {
				t.Fatalf("Strict = %s\nwant %s", got, tt.want)
			}
			if marshal(t, src) != before {
				t.Fatal("Strict changed its input")
			}
			if p := Check(out); p != nil {
				t.Fatalf("strict form fails Check: %v", p)
			}
			if _, err := Compile(out); err != nil {
				t.Fatal(err)
			}
		})
	}

	t.Run("property order kept", func(t *testing.T) {
		out := Strict(src, OpenAIStrict)
		if !reflect.DeepEqual(out.Required, src.PropertyOrder) {
			t.Fatalf("required %v, order %v", out.Required, src.PropertyOrder)
		}
	})

	t.Run("recursive keeps refs", func(t *testing.T) {
		rec := mustParse(t, `{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}}}`)
		out := Strict(rec, OpenAIStrict)
		want := `{"type":"object","properties":{"n":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"required":["n"],"additionalProperties":false,
			"$defs":{"n":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"required":["next"],"additionalProperties":false}}}`
		if got := marshal(t, out); !orderInsensitiveEqual(got, want) {
			t.Fatalf("Strict = %s", got)
		}
	})
}

func TestDropNulls(t *testing.T) {
	src := mustParse(t, `{"type":"object","properties":{
		"q":{"type":"string"},
		"req":{"type":["string","null"]},
		"opt":{"type":"integer"},
		"optNullable":{"type":["integer","null"]},
		"obj":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"]},
		"list":{"type":"array","items":{"$ref":"#/$defs/item"}},
		"rec":{"type":"object","additionalProperties":{"type":"object","properties":{"x":{"type":"number"}}}},
		"u":{"anyOf":[{"type":"string"},{"type":"object","properties":{"z":{"type":"integer"}}}]}
	},"required":["q","req"],"$defs":{"item":{"type":"object","properties":{"id":{"type":"integer"},"tag":{"type":"string"}}}}}`)
	in := decode(t, `{"q":"x","req":null,"opt":null,"optNullable":null,"obj":{"a":"y","b":null},
		"list":[{"id":null,"tag":null},{"id":1}],"rec":{"k":{"x":null}},"u":{"z":null}}`)
	inCopy := decode(t, marshalValue(t, in))
	got := DropNulls(src, in)
	want := decode(t, `{"q":"x","req":null,"optNullable":null,"obj":{"a":"y"},"list":[{},{"id":1}],"rec":{"k":{}},"u":{}}`)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DropNulls = %s\nwant %s", marshalValue(t, got), marshalValue(t, want))
	}
	if !reflect.DeepEqual(in, inCopy) {
		t.Fatal("DropNulls changed its input")
	}
	// The strict round trip: what an OpenAI-strict model sends validates against the original.
	vd := mustCompile(t, src)
	if _, err := vd.Validate(got); err != nil {
		t.Fatalf("after DropNulls: %v", err)
	}
	if _, err := vd.Validate(in); err == nil {
		t.Fatal("the raw strict output should not validate against the original")
	}
	if DropNulls(src, "scalar") != "scalar" || DropNulls(nil, 1.0) != 1.0 {
		t.Fatal("non-objects pass through")
	}
}

func marshalValue(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
