// Package redact replaces secret values by [redacted] in every text Weft writes or shows: rows,
// events, log bodies, provider requests and streamed deltas, in every encoding a secret can take
// there (raw, JSON-escaped once or nested, \u escapes, percent-encoded).
package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/weft-agents/weft"
)

// Redactor replaces every occurrence of secret values by [redacted]: values of at least 4 bytes,
// longest first, in every encoding a row, an event, a log body or a request can carry them in:
//   - raw, and JSON-escaped once and twice (a JSON string inside a JSON string: a tool call's
//     arguments inside a provider request), with HTML escapes or without, non-ASCII as \uXXXX or not;
//   - percent-encoded as URLs write them (query and path forms, upper- and lower-case hex);
//   - inside any JSON string literal, whatever escapes it was written with (the model may write
//     `q\u0022uote` for `q"uote`): each literal that holds an escape is decoded, its value redacted
//     and encoded again, so redaction is on values, not on one spelling of them.
type Redactor struct {
	// secrets are the values and their encoded forms, longest first.
	secrets []string
	r       *strings.Replacer
}

// literalDepth bounds how many JSON-in-JSON string levels the literal pass decodes.
const literalDepth = 3

// New returns a Redactor of the given secret lists; values shorter than 4 bytes are ignored (they
// would redact ordinary words). A Redactor without secrets, and a nil one, change nothing.
func New(secrets ...[]string) *Redactor {
	seen := map[string]bool{}
	var all []string
	for _, l := range secrets {
		for _, s := range l {
			if len(s) < 4 {
				continue
			}
			for _, v := range encodedForms(s) {
				if !seen[v] {
					seen[v] = true
					all = append(all, v)
				}
			}
		}
	}
	if len(all) == 0 {
		return &Redactor{}
	}
	slices.SortStableFunc(all, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(all))
	for _, s := range all {
		pairs = append(pairs, s, weft.Redacted)
	}
	return &Redactor{secrets: all, r: strings.NewReplacer(pairs...)}
}

// encodedForms returns s and the forms it takes when written into JSON text (once and nested) or
// into a URL.
func encodedForms(s string) []string {
	forms := []string{s}
	add := func(v string) {
		if !slices.Contains(forms, v) {
			forms = append(forms, v)
		}
	}
	level := []string{s}
	for range 2 {
		var next []string
		for _, v := range level {
			for _, e := range jsonForms(v) {
				if !slices.Contains(forms, e) {
					next = append(next, e)
				}
				add(e)
			}
		}
		level = next
	}
	q, p := url.QueryEscape(s), url.PathEscape(s)
	for _, v := range []string{q, p, strings.ReplaceAll(q, "+", "%20"), componentEscape(s)} {
		add(v)
		add(lowerHex(v))
	}
	return forms
}

// jsonForms returns the bodies (without quotes) of the JSON string literals encoders write for s:
// encoding/json's (HTML escaped or not), ASCII-only with lower- or upper-case \u escapes, and
// with `/` written `\/`.
func jsonForms(s string) []string {
	var out []string
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s)
		body := strings.TrimSuffix(b.String(), "\n")
		out = append(out, body[1:len(body)-1])
	}
	ascii := asciiJSON(out[1], "%04x")
	out = append(out, ascii, asciiJSON(out[1], "%04X"), strings.ReplaceAll(out[1], "/", `\/`))
	var forms []string
	for _, f := range out {
		if f != s && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return forms
}

// asciiJSON rewrites the non-ASCII characters of a JSON string body as \u escapes (UTF-16).
func asciiJSON(body, hex string) string {
	var b strings.Builder
	for _, c := range body {
		switch {
		case c < utf8.RuneSelf:
			b.WriteRune(c)
		case c > 0xFFFF:
			c -= 0x10000
			fmt.Fprintf(&b, `\u`+hex+`\u`+hex, 0xD800+(c>>10), 0xDC00+(c&0x3FF))
		default:
			fmt.Fprintf(&b, `\u`+hex, c)
		}
	}
	return b.String()
}

// componentEscape percent-encodes every byte but the unreserved ones, as JavaScript's
// encodeURIComponent does.
func componentEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// lowerHex lower-cases the hex digits of a percent-encoded string.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerByte(b[i+1]), lowerByte(b[i+2])
		}
	}
	return string(b)
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// Empty reports whether r has no secret to redact (r may be nil): what it would redact passes
// unchanged.
func (r *Redactor) Empty() bool { return r == nil || r.r == nil }

// String redacts s.
func (r *Redactor) String(s string) string {
	if r == nil || r.r == nil || s == "" {
		return s
	}
	return r.redact(s, literalDepth)
}

// redact replaces the secrets in s; depth bounds the nested JSON string levels it decodes. A
// secret's text can also be found across or inside an escape of JSON text (`\u0010` followed by
// "000" holds "0000"), where replacing it would break the text: JSON that the text pass left
// invalid is redacted value by value instead (redactJSON).
func (r *Redactor) redact(s string, depth int) string {
	out := r.redactText(s, depth)
	if out != s && strings.Contains(s, `\`) && !json.Valid([]byte(out)) && json.Valid([]byte(s)) {
		if v, ok := r.redactJSON(s, depth); ok {
			return v
		}
	}
	return out
}

// redactJSON redacts a JSON document by its values: every string and key, and every number whose
// text holds a secret (written as a string then), at any depth; keys come out sorted.
func (r *Redactor) redactJSON(s string, depth int) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case string:
			return r.redact(x, max(depth-1, 0))
		case json.Number:
			if red := r.r.Replace(string(x)); red != string(x) {
				return red
			}
			return x
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
			return x
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[r.redact(k, max(depth-1, 0))] = walk(e)
			}
			return out
		}
		return x
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(walk(v)); err != nil {
		return "", false
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}

// redactText replaces the secrets in s as text, then inside the JSON string literals that hold an
// escape.
func (r *Redactor) redactText(s string, depth int) string {
	s = r.r.Replace(s)
	if depth == 0 || !strings.Contains(s, `\`) {
		return s
	}
	var b []byte
	last := 0
	eachLiteral(s, func(i, end int, v string) {
		if red := r.redact(v, depth-1); red != v {
			enc, _ := json.Marshal(red)
			b = append(append(b, s[last:i]...), enc...)
			last = end + 1
		}
	})
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// count returns how many secrets s holds; depth bounds the nested JSON string levels it decodes.
func (r *Redactor) count(s string, depth int) int {
	n := 0
	rest := s
	for _, sec := range r.secrets {
		if c := strings.Count(rest, sec); c > 0 {
			n += c
			rest = strings.ReplaceAll(rest, sec, weft.Redacted)
		}
	}
	if depth == 0 || !strings.Contains(rest, `\`) {
		return n
	}
	eachLiteral(rest, func(_, _ int, v string) { n += r.count(v, depth-1) })
	return n
}

// eachLiteral calls f with the bounds and decoded value of each JSON string literal of s that
// holds an escape (a literal without one is covered by matching its raw text).
func eachLiteral(s string, f func(start, end int, value string)) {
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		end, escaped := literalEnd(s, i)
		if end < 0 {
			return
		}
		if escaped {
			var v string
			if json.Unmarshal([]byte(s[i:end+1]), &v) == nil {
				f(i, end, v)
			}
		}
		i = end
	}
}

// literalEnd returns the index of the quote closing the literal opened at s[start], -1 when it
// is not closed, and whether the literal holds a backslash escape.
func literalEnd(s string, start int) (int, bool) {
	escaped := false
	for j := start + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}

// Bytes redacts b: b itself when there is nothing to redact (a conversation's request body is
// long, and copying it twice a model call was most of a long thread's turn).
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || r.r == nil || len(b) == 0 {
		return b
	}
	s := string(b)
	if red := r.String(s); red != s {
		return []byte(red)
	}
	return b
}

// Count returns how many secret occurrences s holds, in any encoding.
func (r *Redactor) Count(s string) int {
	if r == nil || r.r == nil {
		return 0
	}
	return r.count(s, literalDepth)
}

// Stream redacts text that arrives in pieces (streamed deltas), so that a secret split
// across pieces is replaced too: it holds back the end of the text while that end could still
// become a secret, and Flush returns what is held.
type Stream struct {
	red     *Redactor
	pending string
}

// NewStream returns a Stream redacting with r (nil: pieces pass unchanged).
func NewStream(r *Redactor) Stream { return Stream{red: r} }

// Write takes the next piece and returns the redacted text that is safe to show now.
func (s *Stream) Write(piece string) string {
	if s.red == nil || s.red.r == nil {
		return piece
	}
	s.pending += piece
	cut := s.red.safeCut(s.pending)
	out := s.pending[:cut]
	s.pending = s.pending[cut:]
	return s.red.String(out)
}

// Flush returns the held text, redacted.
func (s *Stream) Flush() string {
	out := s.red.String(s.pending)
	s.pending = ""
	return out
}

// safeCut returns how much of s can be redacted and shown now: everything before the longest
// tail of s that is a proper prefix of a secret, moved earlier past any secret that crosses it.
func (r *Redactor) safeCut(s string) int {
	cut := len(s)
	for _, sec := range r.secrets {
		for n := min(len(sec)-1, len(s)); n > 0 && len(s)-n < cut; n-- {
			if strings.HasSuffix(s, sec[:n]) {
				cut = len(s) - n
				break
			}
		}
	}
	for moved := true; moved; {
		moved = false
		for _, sec := range r.secrets {
			from := max(0, cut-len(sec)+1)
			if i := strings.Index(s[from:], sec); i >= 0 && from+i < cut && from+i+len(sec) > cut {
				cut, moved = from+i, true
			}
		}
	}
	return cut
}

// Error redacts an error's text.
func (r *Redactor) Error(err error) string {
	if err == nil {
		return ""
	}
	return r.String(err.Error())
}

// Calls returns calls with their arguments redacted by red: calls itself when nothing changed
// (the committer's redaction of rows, and the calls a run stores).
func Calls(calls []weft.ToolCall, red func(string) string) []weft.ToolCall {
	var out []weft.ToolCall
	for i, c := range calls {
		if r := red(c.Arguments); r != c.Arguments {
			if out == nil {
				out = slices.Clone(calls)
			}
			out[i].Arguments = r
		}
	}
	if out == nil {
		return calls
	}
	return out
}
