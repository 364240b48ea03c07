package redact

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// TestRedactorEncodings: a secret is replaced in every encoding a row, an event, a log body or a
// request carries it in — raw, JSON-escaped (once, and again inside a JSON string), \u escapes
// of any case or any character, and percent-encoded — and the JSON it was in stays valid JSON.
func TestRedactorEncodings(t *testing.T) {
	quote, slash, accent, emoji := `q"uote-5150`, `back\slash-77`, "café-4411", "key-🔑-9"
	cases := []struct {
		name, secret, text string
		json               bool // text is JSON and must stay so
	}{
		{"raw", quote, "x " + quote + " x", false},
		{"json quote", quote, `{"what": "x q\"uote-5150 x"}`, true},
		{"json backslash", slash, `{"what": "x back\\slash-77 x"}`, true},
		{"json \\u lower", accent, `{"what": "caf\u00e9-4411"}`, true},
		{"json \\u upper", accent, `{"what": "caf\u00E9-4411"}`, true},
		{"json surrogates", emoji, `{"k": "key-\ud83d\udd11-9"}`, true},
		{"json any escape", quote, `{"what": "q\u0022uote-\u0035150"}`, true},
		{"json key", quote, `{"q\"uote-5150": 1}`, true},
		{"json html escapes", "a<b>&c-1", `{"v": "a\u003cb\u003e\u0026c-1"}`, true},
		{"json slash escape", "a/b/c-1", `{"v": "a\/b\/c-1"}`, true},
		{"nested json", quote, `{"arguments": "{\"what\":\"q\\\"uote-5150\"}"}`, true},
		{"nested \\u", accent, `{"arguments": "{\"what\":\"caf\\u00e9-4411\"}"}`, true},
		{"query escape", quote, "https://x/?t=" + url.QueryEscape(quote), false},
		{"query space", "two words-9", "https://x/?t=two+words-9 and two%20words-9", false},
		{"path escape", slash, "https://x/" + url.PathEscape(slash), false},
		{"lower hex", accent, "https://x/?t=caf%c3%a9-4411", false},
		{"component escape", "a=b&c:d-1", "https://x/?t=a%3Db%26c%3Ad-1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := New([]string{c.secret})
			got := r.String(c.text)
			if !strings.Contains(got, "[redacted]") || r.Count(c.text) == 0 {
				t.Fatalf("%s: %q → %q (count %d), want it redacted", c.secret, c.text, got, r.Count(c.text))
			}
			if leaks(got, c.secret) {
				t.Errorf("%q → %q still holds %q", c.text, got, c.secret)
			}
			if c.json && !json.Valid([]byte(got)) {
				t.Errorf("%q → %q is no longer JSON", c.text, got)
			}
			if b := r.Bytes([]byte(c.text)); string(b) != got {
				t.Errorf("Bytes: %q, String: %q", b, got)
			}
		})
	}
	// Text without the secret passes unchanged, escapes and all.
	r := New([]string{quote})
	for _, s := range []string{`{"a": "x\"y\u00e9\\"}`, "plain", `"unterminated \"`} {
		if got := r.String(s); got != s || r.Count(s) != 0 {
			t.Errorf("%q → %q (count %d), want it unchanged", s, got, r.Count(s))
		}
	}
}

// leaks reports whether s holds secret decoded from any JSON string literal, raw, or URL-decoded.
func leaks(s, secret string) bool {
	if strings.Contains(s, secret) {
		return true
	}
	if u, err := url.QueryUnescape(s); err == nil && strings.Contains(u, secret) {
		return true
	}
	found := false
	eachLiteral(s, func(_, _ int, v string) { found = found || leaks(v, secret) })
	return found
}

// FuzzRedactor: whatever JSON text a secret is written into, the redacted text holds it in no
// string value at any nesting depth, and valid JSON stays valid.
func FuzzRedactor(f *testing.F) {
	f.Add(`q"uote-5150`, "x q\"uote-5150 x", "arguments")
	f.Add(`back\slash-77`, "café", "k")
	f.Add("café-4411", "<>&/\u2028", "caf\u00e9-4411")
	f.Fuzz(func(t *testing.T, secret, around, key string) {
		if len(secret) < 4 || strings.Contains(secret, "[redacted]") || strings.Contains("[redacted]", secret) {
			return
		}
		r := New([]string{secret})
		inner, _ := json.Marshal(map[string]string{key: around + secret + around})
		doc, _ := json.Marshal(map[string]string{"arguments": string(inner), key + secret: around})
		got := r.String(string(doc))
		if !json.Valid([]byte(got)) {
			t.Fatalf("%s → %s is no longer JSON", doc, got)
		}
		var v map[string]string
		_ = json.Unmarshal([]byte(got), &v)
		for k, x := range v {
			// A value that is itself JSON is checked by its decoded strings: its text may hold the
			// secret's characters inside an escape (\u0000 for a secret 0000), which is no leak.
			var in map[string]string
			nested := json.Unmarshal([]byte(x), &in) == nil
			if strings.Contains(k, secret) || !nested && strings.Contains(x, secret) {
				t.Fatalf("%s → %s holds %q", doc, got, secret)
			}
			if nested {
				for k2, y := range in {
					if strings.Contains(k2, secret) || strings.Contains(y, secret) {
						t.Fatalf("%s → %s holds %q nested", doc, got, secret)
					}
				}
			}
		}
	})
}

// TestCalls: calls' arguments are redacted, and calls come back as they are when nothing needed
// redacting.
func TestCalls(t *testing.T) {
	red := New([]string{"s3cret"})
	calls := []weft.ToolCall{{ID: "a", Arguments: `{}`}}
	if got := Calls(calls, red.String); &got[0] != &calls[0] {
		t.Fatal("calls copied though nothing needed redacting")
	}
	if got := Calls([]weft.ToolCall{{ID: "a", Arguments: `"s3cret"`}}, red.String); strings.Contains(got[0].Arguments, "s3cret") {
		t.Fatal("arguments not redacted")
	}
}
