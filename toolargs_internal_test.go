package weft

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type flatAll struct {
	Name    string  `json:"name"`
	Count   int     `json:"count,omitempty"`
	Small   int8    `json:"small"`
	U       uint16  `json:"u"`
	F       float64 `json:"f"`
	F32     float32 `json:"f32"`
	On      bool    `json:"on"`
	Plain   string
	Skipped string `json:"-"`
	hidden  string //lint:ignore U1000 an unexported field encoding/json never sets
}

type flatDash struct {
	//lint:ignore SA5008 the field is named "-" on purpose: encoding/json's one way to name it so
	Dash string `json:"-,"`
}

type notFlat struct {
	When time.Time `json:"when"`
}

type nested struct {
	In struct{ A int } `json:"in"`
}

type foldClash struct {
	A string `json:"a"`
	B string `json:"A"`
}

type withString struct {
	N int `json:"n,string"`
}

type embedded struct {
	flatDash
	X int
}

// TestFlatArgsFor: only structs of scalar fields, named plainly, get the flat decoder.
func TestFlatArgsFor(t *testing.T) {
	cases := []struct {
		t    reflect.Type
		want bool
	}{
		{reflect.TypeFor[flatAll](), true},
		{reflect.TypeFor[flatDash](), true}, // "-," names the field "-"
		{reflect.TypeFor[struct{}](), true},
		{reflect.TypeFor[notFlat](), false},
		{reflect.TypeFor[nested](), false},
		{reflect.TypeFor[foldClash](), false},
		{reflect.TypeFor[withString](), false},
		{reflect.TypeFor[embedded](), false},
		{reflect.TypeFor[map[string]any](), false},
		{reflect.TypeFor[*flatAll](), false},
	}
	for _, tc := range cases {
		if got := flatArgsFor(tc.t) != nil; got != tc.want {
			t.Errorf("%s: flat %v, want %v", tc.t, got, tc.want)
		}
	}
}

// flatAgrees decodes text into T through decodeArgs and through encoding/json, and fails t when
// they differ in result or in error; it reports whether the flat decoder alone took text.
func flatAgrees[T any](t testing.TB, text string) bool {
	t.Helper()
	flat := flatArgsFor(reflect.TypeFor[T]())
	var want T
	wantErr := json.Unmarshal([]byte(text), &want)
	var got T
	gotErr := decodeArgs(flat, []byte(text), &got)
	if (gotErr != nil) != (wantErr != nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
		t.Fatalf("%s: decoded %+v (%v), encoding/json %+v (%v)", text, got, gotErr, want, wantErr)
	}
	var probe T
	return flat != nil && flat.decode([]byte(text), reflect.ValueOf(&probe).Elem())
}

func TestFlatArgs(t *testing.T) {
	cases := []struct {
		text string
		flat bool // taken by the flat decoder alone
	}{
		{`{"name":"x","count":3,"small":-8,"u":65535,"f":1.5e3,"f32":0.25,"on":true,"Plain":"p"}`, true},
		{` { "name" : "héllo ☃" } `, true},
		{`{}`, true},
		{`{"count":9223372036854775807}`, true},
		{`{"small":128}`, false},                // overflow: encoding/json's error
		{`{"u":-1}`, false},                     // likewise
		{`{"f32":1e39}`, false},                 // out of float32's range
		{`{"count":1.0}`, false},                // not an integer: encoding/json's error
		{`{"count":"3"}`, false},                // a string for an int
		{`{"name":3}`, false},                   // a number for a string
		{`{"on":null}`, false},                  // null leaves the field: encoding/json's rule
		{`{"name":"a\nb"}`, false},              // escapes: encoding/json unescapes
		{`{"NAME":"x"}`, false},                 // matched without case by encoding/json
		{`{"name":"x","name":"y"}`, false},      // the last wins in encoding/json
		{`{"Skipped":"x"}`, false},              // no such field: encoding/json ignores it
		{`{"hidden":"x"}`, false},               // unexported
		{`{"name":"x","extra":{"a":1}}`, false}, // not flat
		{`{"name":"x"`, false},                  // not JSON
		{`[1]`, false},
		{`{"f":-0.0,"count":-0}`, true},
		{`{"f":1e-400}`, true}, // underflows to 0, as encoding/json gives it
	}
	for _, tc := range cases {
		if got := flatAgrees[flatAll](t, tc.text); got != tc.flat {
			t.Errorf("%s: flat decoder took it %v, want %v", tc.text, got, tc.flat)
		}
	}
}

// FuzzFlatArgs: whatever the text, a typed tool decodes it exactly as encoding/json does.
func FuzzFlatArgs(f *testing.F) {
	for _, s := range []string{`{"name":"x","count":3,"small":-8,"u":7,"f":1.5,"f32":2,"on":false,"Plain":""}`,
		`{"count":1e2}`, `{"small":-129}`, `{"name":"\u00e9"}`, `{"-":"dash"}`, `{"f":"1"}`, `{}`, ` {"on" :true} `, `{"order_id":42}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Count(text, "{") > 8 {
			return
		}
		flatAgrees[flatAll](t, text)
		flatAgrees[struct {
			OrderID int `json:"order_id"`
		}](t, text)
		flatAgrees[flatDash](t, text)
	})
}
