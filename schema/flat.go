package schema

import (
	"strings"
	"unicode/utf8"
)

// ScanFlatObject reads text as a JSON object whose member values are scalars (strings, numbers,
// true, false, null), calling member with each member's name and its value's JSON text, in
// order, in one pass that allocates nothing. It reports false, having stopped, when text is not
// such an object (or not JSON), a name has an escape or is not valid UTF-8, a string value holds
// invalid UTF-8 or a surrogate escape (which decoding would replace), or member returns false.
// A name given twice is passed twice. A string value's text keeps its quotes and escapes.
func ScanFlatObject(text string, member func(name, value string) bool) bool {
	i := skipSpace(text, 0)
	if i >= len(text) || text[i] != '{' {
		return false
	}
	i = skipSpace(text, i+1)
	if i < len(text) && text[i] == '}' {
		return skipSpace(text, i+1) == len(text)
	}
	for {
		if i >= len(text) || text[i] != '"' {
			return false
		}
		end := strings.IndexByte(text[i+1:], '"')
		if end < 0 {
			return false
		}
		name := text[i+1 : i+1+end]
		if strings.IndexByte(name, '\\') >= 0 || !printableUTF8(name) {
			return false
		}
		i = skipSpace(text, i+2+end)
		if i >= len(text) || text[i] != ':' {
			return false
		}
		i = skipSpace(text, i+1)
		n := scanScalar(text[i:])
		if n == 0 || !member(name, text[i:i+n]) {
			return false
		}
		i = skipSpace(text, i+n)
		if i < len(text) && text[i] == ',' {
			i = skipSpace(text, i+1)
			continue
		}
		if i < len(text) && text[i] == '}' {
			return skipSpace(text, i+1) == len(text)
		}
		return false
	}
}

// scanScalar returns the length of the JSON string, number, true, false or null at the start of
// s, 0 when there is none.
func scanScalar(s string) int {
	if s == "" {
		return 0
	}
	switch s[0] {
	case '"':
		return scanString(s)
	case 't':
		if strings.HasPrefix(s, "true") {
			return 4
		}
	case 'f':
		if strings.HasPrefix(s, "false") {
			return 5
		}
	case 'n':
		if strings.HasPrefix(s, "null") {
			return 4
		}
	default:
		return scanNumber(s)
	}
	return 0
}

// isNumberText reports whether s is exactly one JSON number.
func isNumberText(s string) bool { return s != "" && scanNumber(s) == len(s) }

// scanString returns the length of the JSON string at the start of s (quotes included), 0 when
// it is not one or holds invalid UTF-8 (which decoding would replace).
func scanString(s string) int {
	if len(s) == 0 || s[0] != '"' {
		return 0
	}
	ascii := true
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			if !ascii && !utf8.ValidString(s[1:i]) {
				return 0
			}
			return i + 1
		case c < 0x20:
			return 0
		case c >= 0x80:
			ascii = false
		case c == '\\':
			i++
			if i >= len(s) {
				return 0
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				// Surrogates are left to the decoder (a lone one decodes to U+FFFD).
				if i+4 >= len(s) || !isHex4(s[i+1:i+5]) || s[i+1] == 'd' || s[i+1] == 'D' {
					return 0
				}
				i += 4
			default:
				return 0
			}
		}
	}
	return 0
}

func isHex4(s string) bool {
	for i := range 4 {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// scanNumber returns the length of the JSON number at the start of s, 0 when there is none.
func scanNumber(s string) int {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = digits(s, i)
	default:
		return 0
	}
	if i < len(s) && s[i] == '.' {
		j := digits(s, i+1)
		if j == i+1 {
			return 0
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return 0
		}
		i = j
	}
	return i
}

func digits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// printableUTF8 reports whether a property name is valid UTF-8 without control characters (a
// name decoding would change is left to Validate).
func printableUTF8(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 {
			return c >= 0x80 && utf8.ValidString(s)
		}
	}
	return true
}
