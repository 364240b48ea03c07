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
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case html && c == '\b':
				b = append(b, '\\', 'b')
			case html && c == '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
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
