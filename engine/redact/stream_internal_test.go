package redact

import (
	"strings"
	"testing"
)

// TestStreamRedactor: however a text is cut into pieces, the pieces shown never hold a secret and
// together they are the redacted whole.
func TestStreamRedactor(t *testing.T) {
	r := New([]string{"s3cr3t-value", "s3cr3t", "abcabd"})
	texts := []string{
		"The token was s3cr3t-value, all good.",
		"s3cr3t then s3cr3t-valu and s3cr3t-value!",
		"abcabcabd xx abcab",
		"no secret here at all",
		"",
	}
	for _, text := range texts {
		want := r.String(text)
		for size := 1; size <= len(text)+1; size++ {
			s := &Stream{red: r}
			var shown []string
			for i := 0; i < len(text); i += size {
				shown = append(shown, s.Write(text[i:min(i+size, len(text))]))
			}
			shown = append(shown, s.Flush())
			got := strings.Join(shown, "")
			if got != want {
				t.Fatalf("%q in pieces of %d: %q, want %q", text, size, got, want)
			}
			for _, p := range shown {
				if strings.Contains(p, "s3cr3t") || strings.Contains(p, "abcabd") {
					t.Fatalf("%q in pieces of %d: a piece shows a secret: %q", text, size, p)
				}
			}
		}
	}
	// Without secrets pieces pass unchanged and nothing is held.
	s := &Stream{red: New()}
	if got := s.Write("abc"); got != "abc" || s.Flush() != "" {
		t.Fatalf("no secrets: %q", got)
	}
}
