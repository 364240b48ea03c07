package schema

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// quickSchemas are schemas of the shape quick handles (quick: true) and near misses it must
// leave to the general validator.
var quickSchemas = []struct {
	name  string
	doc   string
	quick bool
}{
	{"one required integer", `{"type":"object","properties":{"order_id":{"type":"integer","description":"id"}},"required":["order_id"]}`, true},
	{"closed", `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"number"},"b":{"type":"boolean"}},"required":["q"],"additionalProperties":false}`, true},
	{"open by true", `{"type":"object","properties":{"q":{"type":"string","format":"email","title":"Q"}},"additionalProperties":true}`, true},
	{"no properties", `{"type":"object"}`, true},
	{"required not declared", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]}`, true},
	{"enum", `{"type":"object","properties":{"a":{"type":"string","enum":["x","y"]}}}`, false},
	{"minimum", `{"type":"object","properties":{"a":{"type":"integer","minimum":1}}}`, false},
	{"nested object", `{"type":"object","properties":{"a":{"type":"object"}}}`, false},
	{"array", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`, false},
	{"nullable", `{"type":"object","properties":{"a":{"type":["string","null"]}}}`, false},
	{"untyped property", `{"type":"object","properties":{"a":{}}}`, false},
	{"record", `{"type":"object","additionalProperties":{"type":"string"}}`, false},
	{"default", `{"type":"object","properties":{"a":{"type":"string","default":"x"}}}`, false},
	{"not an object", `{"type":"string"}`, false},
	{"untyped root", `{"properties":{"a":{"type":"string"}}}`, false},
	{"min properties", `{"type":"object","minProperties":1}`, false},
}

// quickValues are instances thrown at every schema above.
var quickValues = []string{
	`{}`, `{"order_id":42}`, `{"order_id":42.0}`, `{"order_id":42.5}`, `{"order_id":-0}`, `{"order_id":1e300}`,
	`{"order_id":"42"}`, `{"order_id":null}`, `{"order_id":true}`, `{"order_id":42,"extra":1}`,
	`{"q":"x"}`, `{"q":""}`, `{"q":1}`, `{"q":"x","n":1.5,"b":false}`, `{"q":"x","n":"1"}`, `{"q":"x","b":0}`,
	`{"q":"x","z":null}`, `{"a":"x"}`, `{"a":"x","b":"y"}`, `{"a":1}`, `{"a":{"b":1}}`, `{"a":[]}`, `{"a":null}`,
	`null`, `[]`, `"x"`, `1`, `true`,
}

func compileDoc(t testing.TB, doc string) *Validator {
	t.Helper()
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// general is the general validator's verdict alone.
func general(v *Validator, args any) bool { return v.sch.Validate(args) == nil }

// TestQuickAgrees: quick takes exactly the schemas of its shape, and on them accepts exactly what
// the general validator accepts when numbers arrive as float64 (json.Number ones it leaves to the
// general validator), and never accepts what it refuses.
func TestQuickAgrees(t *testing.T) {
	for _, tc := range quickSchemas {
		t.Run(tc.name, func(t *testing.T) {
			v := compileDoc(t, tc.doc)
			if (v.quick != nil) != tc.quick {
				t.Fatalf("quick form: got %v, want %v", v.quick != nil, tc.quick)
			}
			if v.quick == nil {
				return
			}
			for _, text := range quickValues {
				for _, useNumber := range []bool{false, true} {
					in := decodeValue(t, text, useNumber)
					if got, want := v.quick.accepts(in), general(v, in); got != want && (got || !useNumber) {
						t.Errorf("%s (json.Number %v): quick accepts %v, the general validator %v", text, useNumber, got, want)
					}
				}
			}
			// Go values a caller may pass: integers of any width are integers and numbers.
			for _, in := range []map[string]any{{"order_id": 42}, {"order_id": int8(-3)}, {"order_id": uint64(math.MaxUint64)},
				{"order_id": float32(2)}, {"n": 7, "q": "x"}, {"n": int64(-1), "q": "x"}} {
				if v.quick.accepts(in) && !general(v, in) {
					t.Errorf("%v: quick accepts what the general validator refuses", in)
				}
			}
		})
	}
}

// TestQuickFailuresComeFromTheGeneralValidator: a value quick does not accept is judged, and its
// failure worded, by the general validator, as before quick existed.
func TestQuickFailuresComeFromTheGeneralValidator(t *testing.T) {
	v := compileDoc(t, quickSchemas[1].doc)
	if v.quick == nil {
		t.Fatal("no quick form")
	}
	_, err := v.Validate(map[string]any{"q": 1.0, "extra": true})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"/q", "extra"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	out, err := v.Validate(map[string]any{"q": "x"})
	if err != nil || out.(map[string]any)["q"] != "x" {
		t.Fatalf("valid instance: %v %v", out, err)
	}
}

func decodeValue(t testing.TB, text string, useNumber bool) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	if useNumber {
		dec.UseNumber()
	}
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzQuickAgrees: on any JSON instance, quick accepts only what the general validator accepts,
// and (the shapes being exact) everything it accepts when numbers are float64.
func FuzzQuickAgrees(f *testing.F) {
	for _, s := range quickValues {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`{"order_id":1E700}`), false)
	var validators []*Validator
	for _, tc := range quickSchemas {
		if tc.quick {
			validators = append(validators, compileDoc(f, tc.doc))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, useNumber bool) {
		if len(data) > 4096 {
			return
		}
		dec := json.NewDecoder(strings.NewReader(string(data)))
		if useNumber {
			dec.UseNumber()
		}
		var in any
		if dec.Decode(&in) != nil {
			return // not JSON, or a number no float64 holds: Validate never sees it
		}
		for i, v := range validators {
			if got, want := v.quick.accepts(in), general(v, in); got != want && (got || !useNumber) {
				t.Fatalf("schema %d, %s: quick accepts %v, the general validator %v", i, data, got, want)
			}
		}
	})
}

// acceptsJSONAgrees fails t when AcceptsJSON takes text that decoding and Validate would not
// hand a tool unchanged: text must decode (as encoding/json does, into plain values) without a
// duplicate name, Validate must accept the decoded value, and must return it as it was.
func acceptsJSONAgrees(t testing.TB, v *Validator, text string) bool {
	t.Helper()
	if !v.AcceptsJSON(text) {
		return false
	}
	var in any
	if err := json.Unmarshal([]byte(text), &in); err != nil {
		t.Fatalf("%s: accepted, but it does not decode: %v", text, err)
	}
	m, ok := in.(map[string]any)
	if !ok {
		t.Fatalf("%s: accepted, but it is not an object", text)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	names := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil { // the name
			t.Fatal(err)
		}
		var skip any
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
		names++
	}
	if names != len(m) {
		t.Fatalf("%s: accepted with a name given twice", text)
	}
	out, err := v.Validate(in)
	if err != nil {
		t.Fatalf("%s: accepted, but Validate refuses it: %v", text, err)
	}
	again, _ := json.Marshal(out)
	orig, _ := json.Marshal(in)
	if string(again) != string(orig) {
		t.Fatalf("%s: accepted, but Validate changes it: %s", text, again)
	}
	return true
}

// TestAcceptsJSON: the raw text of common arguments is taken as it is; everything a decoding
// would change, or that the quick form does not certainly accept, is not.
func TestAcceptsJSON(t *testing.T) {
	lookup := compileDoc(t, quickSchemas[0].doc) // order_id: required integer
	closed := compileDoc(t, quickSchemas[1].doc) // q required string, n number, b boolean, closed
	cases := []struct {
		v    *Validator
		text string
		want bool
	}{
		{lookup, `{"order_id":42}`, true},
		{lookup, ` { "order_id" : -7 } `, true},
		{lookup, "{\n\t\"order_id\": 0\r\n}", true},
		{lookup, `{"order_id":123456789012345}`, true},
		{lookup, `{"order_id":1234567890123456}`, false}, // 16 digits: left to the decoder
		{lookup, `{"order_id":42.0}`, false},             // an integer, but written as a fraction
		{lookup, `{"order_id":4e1}`, false},
		{lookup, `{"order_id":042}`, false},
		{lookup, `{"order_id":"42"}`, false},
		{lookup, `{}`, false}, // required
		{lookup, `{"order_id":42,"order_id":43}`, false},
		{lookup, `{"order_id":42,"note":"x"}`, false}, // undeclared, even where allowed
		{lookup, `{"order_\u0069d":42}`, false},
		{lookup, `{"order_id":42}x`, false},
		{lookup, `{"order_id":42,}`, false},
		{lookup, `{"order_id":}`, false},
		{lookup, `{"order_id":42`, false},
		{lookup, `[{"order_id":42}]`, false},
		{lookup, `{"order_id":null}`, false},
		{closed, `{"q":"where is \"it\"\n\u00e9 ☃","n":-1.5e-3,"b":true}`, true},
		{closed, `{"q":"x","n":1e400}`, false},
		{closed, `{"q":"x","b":fals}`, false},
		{closed, `{"q":"\ud83d\ude00"}`, false}, // surrogates: left to the decoder
		{closed, "{\"q\":\"bad \xff byte\"}", false},
		{closed, "{\"q\":\"tab\tinside\"}", false},
		{closed, `{"q":"\x"}`, false},
		{closed, `{"q":"\u12"}`, false},
		{closed, `{"n":1}`, false},
		{compileDoc(t, quickSchemas[3].doc), `{}`, true},
		{compileDoc(t, quickSchemas[3].doc), `{"a":1}`, false},
		{compileDoc(t, quickSchemas[4].doc), `{"a":"x"}`, false}, // "b" is required but not declared
		{compileDoc(t, quickSchemas[5].doc), `{"a":"x"}`, false}, // no quick form
	}
	for _, tc := range cases {
		if got := acceptsJSONAgrees(t, tc.v, tc.text); got != tc.want {
			t.Errorf("%s: AcceptsJSON %v, want %v", tc.text, got, tc.want)
		}
	}
}

// FuzzAcceptsJSON: whatever the text, AcceptsJSON only takes what decoding and Validate would
// hand the tool unchanged.
func FuzzAcceptsJSON(f *testing.F) {
	for _, s := range quickValues {
		f.Add(s)
	}
	f.Add(`{"q":"x\u00e9\n","n":-0.5E+2,"b":false}`)
	f.Add(`{"order_id":42,"order_id":1}`)
	var validators []*Validator
	for _, tc := range quickSchemas {
		validators = append(validators, compileDoc(f, tc.doc))
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, v := range validators {
			acceptsJSONAgrees(t, v, text)
		}
	})
}
