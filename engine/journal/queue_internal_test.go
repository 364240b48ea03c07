package journal

import (
	"strings"
	"testing"
)

// TestPreviewLikeRuneConversion checks that Preview, which decodes only the runes it keeps, gives
// what converting the whole text gave: the first 200 runes, invalid UTF-8 replaced past 200.
func TestPreviewLikeRuneConversion(t *testing.T) {
	old := func(s string) string {
		s = strings.TrimSpace(s)
		if len([]rune(s)) > 200 {
			return string([]rune(s)[:200])
		}
		return s
	}
	for _, s := range []string{
		"", "  hi  ", strings.Repeat("a", 199), strings.Repeat("a", 200), strings.Repeat("a", 201),
		strings.Repeat("é", 200), strings.Repeat("é", 201), " " + strings.Repeat("日本", 150) + " ",
		strings.Repeat("\xff", 250), strings.Repeat("a", 198) + "\xff\xfe\xfdz", "\xe2\x82" + strings.Repeat("b", 300),
		strings.Repeat("x", 5<<20),
	} {
		if got, want := Preview(s), old(s); got != want {
			t.Errorf("preview of %d bytes: %q, want %q", len(s), got, want)
		}
	}
}
