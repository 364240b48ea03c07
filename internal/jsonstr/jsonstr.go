// Package jsonstr quotes strings as JSON, appending to a buffer: the hot paths that write JSON by
// hand (event payloads, the run state, SSE frames, Prompty's tojson, model scripts) share it.
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendHTMLSafe appends s quoted byte for byte as json.Marshal quotes it: <, > and & escaped,
// \b and \f short, invalid UTF-8 replaced by U+FFFD a byte, U+2028 and U+2029 escaped.
func AppendHTMLSafe(b []byte, s string) []byte { return appendQuoted(b, s, &htmlSafe, true) }

// Append appends s quoted with only what JSON requires escaped (quotes, backslashes and control
// characters, \n, \r and \t short, the others as \u00XX); invalid UTF-8 is replaced by U+FFFD a
// byte.
func Append(b []byte, s string) []byte { return appendQuoted(b, s, &safe, false) }

// safe and htmlSafe tell the ASCII bytes written as they are, without and with HTML escaping.
var safe, htmlSafe = func() (plain, html [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
		html[c] = plain[c] && c != '<' && c != '>' && c != '&'
	}
	return plain, html
}()

func appendQuoted(b []byte, s string, safe *[utf8.RuneSelf]bool, html bool) []byte {
	b = append(b, '"')
	start, i := 0, 0
	// Eight bytes at once while none needs a look (most text): a load and a dozen word operations
	// where a byte at a time takes a load, a table lookup and a branch each. The first eight that
	// do go one at a time; the first byte outside ASCII ends this loop: text that has one mostly
	// has more, which would fail every try.
words:
	for i < len(s) {
		if i+8 <= len(s) && plain8(load8(s, i), html) {
			i += 8
			continue
		}
		for end := min(i+8, len(s)); i < end; i++ {
			c := s[i]
			if c >= utf8.RuneSelf {
				break words
			}
			if !safe[c] {
				b = append(b, s[start:i]...)
				b = appendEscape(b, c, html)
				start = i + 1
			}
		}
	}
	return appendRest(b, s, start, i, safe, html)
}

// appendRest quotes s from i a byte at a time (s[start:i] is written as it is), and closes it.
func appendRest(b []byte, s string, start, i int, safe *[utf8.RuneSelf]bool, html bool) []byte {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendEscape(b, c, html)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if html && (r == '\u2028' || r == '\u2029') {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEscape appends the escape of an ASCII byte that is not safe.
func appendEscape(b []byte, c byte, html bool) []byte {
	switch {
	case c == '"' || c == '\\':
		return append(b, '\\', c)
	case c == '\n':
		return append(b, '\\', 'n')
	case c == '\r':
		return append(b, '\\', 'r')
	case c == '\t':
		return append(b, '\\', 't')
	case html && c == '\b':
		return append(b, '\\', 'b')
	case html && c == '\f':
		return append(b, '\\', 'f')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports whether the eight bytes of x are ASCII that needs no escape: none is a control
// character, a quote or a backslash (nor, html, <, > or &), and none is outside ASCII.
func plain8(x uint64, html bool) bool {
	// A byte below 0x20 or from 0x80 up, or equal to one of the escaped characters, sets the
	// high bit of its byte in the sum (a borrow may set more above it, never when none is there).
	bad := (x - 0x20*ones) | x | hasZero(x^('"'*ones)) | hasZero(x^('\\'*ones))
	if html {
		bad |= hasZero(x^('<'*ones)) | hasZero(x^('>'*ones)) | hasZero(x^('&'*ones))
	}
	return bad&highs == 0
}

// load8 reads s[i:i+8] as a little-endian word (one load: the compiler combines the bytes').
func load8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// hasZero sets the high bit of the bytes of x that are zero (and perhaps of bytes above one).
func hasZero(x uint64) uint64 { return (x - ones) &^ x }
