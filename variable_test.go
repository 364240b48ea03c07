package weft_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/weft-agents/weft"
)

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"TOK": "s3cret", "EMPTY": ""}
	lookup := func(name string) (string, bool, error) {
		if name == "BROKEN" {
			return "", false, errors.New("store unavailable")
		}
		v, ok := env[name]
		return v, ok, nil
	}
	cases := []struct {
		in, want, err string
	}{
		{"plain", "plain", ""},
		{"Bearer ${env:TOK}", "Bearer s3cret", ""},
		// The default is used only when the variable is not set; the name stops at the colon.
		{"${env:TOK:fallback}", "s3cret", ""},
		{"${env:MISSING:fallback}", "fallback", ""},
		{"${env:EMPTY:fallback}", "", ""},
		{"a=${env:TOK} b=${env:MISSING:x}", "a=s3cret b=x", ""},
		{"${env:MISSING}", "", "variable MISSING is not set"},
		{"x ${env:MISSING} ${env:TOK}", "x  s3cret", "variable MISSING is not set"},
		{"${env:BROKEN:x}", "", "store unavailable"},
		{"$${env:TOK} ${other}", "$s3cret ${other}", ""},
	}
	for _, tc := range cases {
		got, err := weft.ExpandEnv(tc.in, lookup)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tc.want || gotErr != tc.err {
			t.Errorf("ExpandEnv(%q) = %q, %q; want %q, %q", tc.in, got, gotErr, tc.want, tc.err)
		}
	}
	if got := weft.EnvRefs("${env:A} ${env:B:dflt} ${env:A}"); !slices.Equal(got, []string{"A", "B", "A"}) {
		t.Errorf("EnvRefs = %v", got)
	}
}

func FuzzExpandEnv(f *testing.F) {
	for _, s := range []string{"${env:A}", "${env:A:b}", "${env:", "${env:}", "$${env:A}", "${env:A:b:c}", "x${env:A}y${env:B}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := weft.ExpandEnv(s, func(name string) (string, bool, error) { return "[" + name + "]", true, nil })
		if err != nil {
			t.Fatalf("every variable is set, yet %v", err)
		}
		if len(weft.EnvRefs(s)) == 0 && out != s {
			t.Fatalf("no reference, yet %q became %q", s, out)
		}
	})
}
