package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type searchArgs struct {
	Query    string             `json:"query" jsonschema:"description=Search query\\, in plain words,minLength=1"`
	Limit    int                `json:"limit,omitempty" jsonschema:"description=Max results,default=10,minimum=1,maximum=20"`
	Mode     string             `json:"mode" jsonschema:"enum=fast|deep,default=fast"`
	Tags     []string           `json:"tags,omitempty" jsonschema:"maxItems=3,enum=a|b|c,uniqueItems"`
	Filters  *filters           `json:"filters"`
	Meta     map[string]int     `json:"meta,omitempty"`
	Since    time.Time          `json:"since"`
	Extra    any                `json:"extra,omitempty"`
	Raw      json.RawMessage    `json:"raw,omitempty"`
	Ratio    float64            `json:"ratio" jsonschema:"exclusiveMinimum=0,nullable"`
	Count    uint8              `json:"count,string"`
	Hidden   string             `json:"-"`
	internal string             // unexported fields are skipped
	Grid     [2][]bool          `json:"grid,omitempty"`
	ByName   map[string]filters `json:"byName,omitempty"`
	NoTag    bool
	embedded
}

type filters struct {
	Category string `json:"category" jsonschema:"enum=books|music"`
	Since    string `json:"since,omitzero" jsonschema:"format=date"`
}

type embedded struct {
	Page  int    `json:"page,omitempty"`
	Query string `json:"query"` // shadowed by searchArgs.Query
}

func TestFor(t *testing.T) {
	s, err := For[searchArgs]()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","required":["query","mode","since","ratio","count","NoTag"],"properties":{
		"query":{"type":"string","description":"Search query, in plain words","minLength":1},
		"limit":{"type":"integer","description":"Max results","default":10,"minimum":1,"maximum":20},
		"mode":{"type":"string","enum":["fast","deep"],"default":"fast"},
		"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"maxItems":3,"uniqueItems":true},
		"filters":{"type":"object","required":["category"],"properties":{"category":{"type":"string","enum":["books","music"]},"since":{"type":"string","format":"date"}}},
		"meta":{"type":"object","additionalProperties":{"type":"integer"}},
		"since":{"type":"string","format":"date-time"},
		"extra":true,
		"raw":true,
		"ratio":{"type":["number","null"],"exclusiveMinimum":0},
		"count":{"type":"string"},
		"grid":{"type":"array","items":{"type":"array","items":{"type":"boolean"}},"minItems":2,"maxItems":2},
		"byName":{"type":"object","additionalProperties":{"type":"object","required":["category"],"properties":{"category":{"type":"string","enum":["books","music"]},"since":{"type":"string","format":"date"}}}},
		"NoTag":{"type":"boolean"},
		"page":{"type":"integer"}}}`
	got := marshal(t, s)
	if !orderInsensitiveEqual(got, want) {
		t.Fatalf("For = %s\nwant %s", got, strings.Join(strings.Fields(want), ""))
	}
	wantOrder := []string{"query", "limit", "mode", "tags", "filters", "meta", "since", "extra", "raw", "ratio", "count", "grid", "byName", "NoTag", "page"}
	if !reflect.DeepEqual(s.PropertyOrder, wantOrder) {
		t.Fatalf("PropertyOrder = %v", s.PropertyOrder)
	}
	if p := Check(s); p != nil {
		t.Fatal(p)
	}

	t.Run("validates its own type", func(t *testing.T) {
		vd := mustCompile(t, s)
		args := searchArgs{Query: "go", Mode: "deep", Since: time.Now(), Ratio: 0.5, Count: 3, Filters: &filters{Category: "books"},
			Grid: [2][]bool{{true}, {false}}, internal: "skipped"}
		data, _ := json.Marshal(args)
		got, err := vd.Validate(decode(t, string(data)))
		if err != nil {
			t.Fatal(err)
		}
		if got.(map[string]any)["limit"] != 10.0 {
			t.Fatalf("limit default not applied: %v", got)
		}
	})

	t.Run("pointer and map roots", func(t *testing.T) {
		if _, err := For[*filters](); err != nil {
			t.Fatal(err)
		}
		s, err := For[map[string]string]()
		if err != nil || marshal(t, s) != `{"type":"object","additionalProperties":{"type":"string"}}` {
			t.Fatal(s, err)
		}
		s, err = For[struct{}]()
		if err != nil || marshal(t, s) != `{"type":"object","properties":{}}` {
			t.Fatal(s, err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		type node struct {
			Next *node `json:"next"`
		}
		type badTagKey struct {
			A string `jsonschema:"descripton=typo"`
		}
		type badDefault struct {
			A int `jsonschema:"default=ten"`
		}
		type defaultOutOfRange struct {
			A int `jsonschema:"default=50,maximum=20"`
		}
		type badPattern struct {
			A string `jsonschema:"pattern=(?=x)"`
		}
		tests := []struct {
			name string
			f    func() (*Schema, error)
			msg  string
		}{
			{"chan", func() (*Schema, error) { return For[struct{ C chan int }]() }, "chan"},
			{"func", func() (*Schema, error) { return For[struct{ F func() }]() }, "func"},
			{"complex", func() (*Schema, error) { return For[struct{ C complex128 }]() }, "complex128"},
			{"int keys", func() (*Schema, error) { return For[struct{ M map[int]string }]() }, "map keys must be strings"},
			{"recursive", func() (*Schema, error) { return For[node]() }, "recursive type"},
			{"not a struct", func() (*Schema, error) { return For[[]string]() }, "must be a struct"},
			{"unknown tag key", func() (*Schema, error) { return For[badTagKey]() }, `unknown jsonschema tag key "descripton"`},
			{"bad default", func() (*Schema, error) { return For[badDefault]() }, "not an integer"},
			{"default out of range", func() (*Schema, error) { return For[defaultOutOfRange]() }, "must be <= 20"},
			{"bad pattern", func() (*Schema, error) { return For[badPattern]() }, "RE2"},
			{"nil type", func() (*Schema, error) { return ForType(nil) }, "nil"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s, err := tt.f()
				if err == nil || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("got %v, %v; want an error containing %q", s, err, tt.msg)
				}
			})
		}
	})
}

func TestDescriptions(t *testing.T) {
	t.Run("S000_5_2_json_schema_with_descriptions", func(t *testing.T) {
		fromStruct, err := For[searchArgs]()
		if err != nil {
			t.Fatal(err)
		}
		built := Object(
			Field("query", Describe(String(), "Search query")),
			OptionalField("limit", Describe(WithDefault(Number(), 10), "Max results")),
			OptionalField("kind", Describe(Enum("a", "b"), "Kind of search")),
		)
		for name, s := range map[string]*Schema{"For": fromStruct, "builders": built} {
			for _, mode := range []StrictMode{Closed, OpenAIStrict} {
				out := marshal(t, Strict(s, mode))
				for _, d := range []string{`"description":"Search query`, `"description":"Max results"`} {
					if !strings.Contains(out, d) {
						t.Errorf("%s, mode %d: %s lacks %s", name, mode, out, d)
					}
				}
			}
		}
		if out := marshal(t, Strict(built, OpenAIStrict)); !strings.Contains(out, `"description":"Kind of search"`) {
			t.Errorf("nullable wrapper lost the description: %s", out)
		}
	})
}
