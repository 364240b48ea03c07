package storecontract

import (
	"encoding/json"
	"strings"
	"testing"
)

var jsonCases = []string{
	`{"side":"a","stops":2,"window":{"a":21}}`, `[1,2,{"b":"x"}]`, `"\u00e9"`, `"\ud800"`, "\"\xff\"",
	` {} `, `1e5`, `-0.5E+3`, `0`, `null`, `true`,
	// not JSON
	``, ` `, `01`, `1.`, `.5`, `-`, `tru`, `{"a"}`, `{"a":1,}`, `[1,]`, `{"a":"` + "\x01" + `"}`, `{} {}`, `{"a":1`, `"\x"`,
}

func TestValidJSONAgrees(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	// encoding/json accepts 10,000 levels of nesting and refuses more; ValidJSON must too, though
	// gjson does not count them.
	cases := append(jsonCases, deep(maxJSONDepth), deep(maxJSONDepth+1), deep(maxJSONDepth/2), `{"a":`+deep(maxJSONDepth)+`}`)
	for _, c := range cases {
		if got, want := ValidJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("ValidJSON(%.40q) = %v, encoding/json says %v", c, got, want)
		}
	}
	if ValidJSON([]byte(deep(maxJSONDepth + 1))) {
		t.Error("a value nested deeper than encoding/json reads was accepted")
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("ValidJSON(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}
