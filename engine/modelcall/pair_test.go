package modelcall

import (
	"strings"
	"testing"
)

// blank is strings.TrimSpace(s) == "" with a fast path; both must agree on every input.
func TestBlank(t *testing.T) {
	for _, s := range []string{"", " ", "\t\n\v\f\r ", "\u00a0", "\u0085x\u0085", " x", "x ", "x", "\x01", "\x7f",
		"\u2003", "é", " é ", "\u3000\u3000", "a\u00a0", strings.Repeat(" ", 300) + "."} {
		if got, want := blank(s), strings.TrimSpace(s) == ""; got != want {
			t.Errorf("blank(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzBlank(f *testing.F) {
	for _, s := range []string{"", " ", "\u00a0", " x ", "\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := blank(s), strings.TrimSpace(s) == ""; got != want {
			t.Errorf("blank(%q) = %v, want %v", s, got, want)
		}
	})
}
