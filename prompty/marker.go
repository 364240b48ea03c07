package prompty

import (
	"fmt"
	"strconv"
	"strings"
)

// Role markers: a line such as `user:` or `assistant[name="x"]:` that starts a message, its role
// word mapped for the dialect and its attributes parsed as typed values.

// marker is a parsed role marker line.
type marker struct {
	role  string
	attrs map[string]any
}

// roleOf maps a role word to its normalised role for the dialect.
func (p *parser) roleOf(w []byte) (string, bool) {
	if len(w) < 4 || len(w) > 9 {
		return "", false
	}
	var lw [9]byte
	for i, c := range w {
		lw[i] = c | 0x20
	}
	switch string(lw[:len(w)]) {
	case "system":
		return "system", true
	case "user":
		return "user", true
	case "assistant":
		return "assistant", true
	case "developer":
		return "developer", true
	case "tool", "function":
		return "tool", p.seed
	case "thread":
		return "thread", p.seed
	case "tools":
		return "tools", p.seed
	}
	return "", false
}

// marker reports whether the line [s, e) is a role marker: optional indent,
// optional `#`, a role word, optional `[attrs]`, optional spaces, `:` — all of it template text
// except inside quoted attribute values. Inside a YAML body (a tools block or a tool call) a marker
// must start in column 1 without `#`, and a bare `function:` is a YAML key.
func (p *parser) marker(s, e int, inYAML bool) (marker, bool, error) {
	b := p.buf
	i := s
	for i < e && (b[i] == ' ' || b[i] == '\t') && p.lit(i) {
		i++
	}
	if inYAML && i > s {
		return marker{}, false, nil
	}
	if i < e && b[i] == '#' && p.lit(i) {
		if inYAML {
			return marker{}, false, nil
		}
		i++
		for i < e && (b[i] == ' ' || b[i] == '\t') && p.lit(i) {
			i++
		}
	}
	ws := i
	for i < e && isLetter(b[i]) && p.lit(i) {
		i++
	}
	if i == ws || i == e {
		return marker{}, false, nil
	}
	role, ok := p.roleOf(b[ws:i])
	if !ok {
		return marker{}, false, nil
	}
	var m marker
	m.role = role
	var unsafe *Error
	if b[i] == '[' && p.lit(i) {
		attrs, next, ok, uerr := p.attrs(i+1, e, "role marker")
		if !ok {
			return marker{}, false, nil
		}
		m.attrs, unsafe, i = attrs, uerr, next
	}
	for i < e && (b[i] == ' ' || b[i] == '\t') && p.lit(i) {
		i++
	}
	if i >= e || b[i] != ':' || !p.lit(i) {
		return marker{}, false, nil
	}
	i++
	for i < e && (b[i] == ' ' || b[i] == '\t') && p.lit(i) {
		i++
	}
	if i != e {
		return marker{}, false, nil
	}
	if inYAML && m.role == "tool" && m.attrs == nil && (b[ws]|0x20) == 'f' {
		return marker{}, false, nil
	}
	if unsafe != nil {
		return marker{}, false, unsafe
	}
	return m, true, nil
}

func isKeyChar(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// attrs parses `key = value` pairs from i up to and including the closing `]`. It
// returns the position after `]`. ok is false when the text is not an attribute list made of template
// text; unsafe is set when an interp value inside quotes holds a quote or a newline.
func (p *parser) attrs(i, e int, where string) (attrs map[string]any, next int, ok bool, unsafe *Error) {
	b := p.buf
	attrs = map[string]any{}
	for {
		for i < e && (b[i] == ' ' || b[i] == '\t') && p.lit(i) {
			i++
		}
		if i >= e || !p.lit(i) {
			return nil, 0, false, nil
		}
		switch b[i] {
		case ']':
			if len(attrs) == 0 {
				attrs = nil
			}
			return attrs, i + 1, true, unsafe
		case ',':
			i++
			continue
		}
		ks := i
		for i < e && isKeyChar(b[i]) && p.lit(i) {
			i++
		}
		if i == ks {
			return nil, 0, false, nil
		}
		key := string(b[ks:i])
		for i < e && (b[i] == ' ' || b[i] == '\t') && p.lit(i) {
			i++
		}
		if i >= e || b[i] != '=' || !p.lit(i) {
			return nil, 0, false, nil
		}
		i++
		for i < e && (b[i] == ' ' || b[i] == '\t') && p.lit(i) {
			i++
		}
		if i >= e {
			return nil, 0, false, nil
		}
		var val any
		if b[i] == '"' && p.lit(i) {
			i++
			var sb []byte
			closed := false
			for i < e {
				if !p.lit(i) {
					sp := p.spans[p.owner[i]]
					end := min(sp.end, e)
					txt := b[i:end]
					if unsafe == nil && (containsByte(txt, '"') || containsByte(txt, '\n')) {
						unsafe = p.errAt(i, fmt.Sprintf("unsafe value for %q in %s", sp.src, where), nil)
					}
					if unsafe == nil && key == "type" {
						// type decides structure (a tool call's YAML body): values never make it.
						unsafe = p.errAt(i, fmt.Sprintf("the type attribute in %s cannot come from a template value (%q)", where, sp.src), nil)
					}
					sb = append(sb, txt...)
					i = end
					continue
				}
				c := b[i]
				if c == '\\' && i+1 < e && p.lit(i+1) && (b[i+1] == '"' || b[i+1] == '\\') {
					sb = append(sb, b[i+1])
					i += 2
					continue
				}
				if c == '"' {
					i++
					closed = true
					break
				}
				if c == '\n' {
					return nil, 0, false, nil
				}
				sb = append(sb, c)
				i++
			}
			if !closed {
				return nil, 0, false, nil
			}
			val = string(sb)
		} else {
			vs := i
			for i < e && p.lit(i) && b[i] != ',' && b[i] != ']' && b[i] != '"' && b[i] != '\n' && b[i] != '[' {
				i++
			}
			if i >= e || !p.lit(i) || b[i] == '"' || b[i] == '\n' || b[i] == '[' {
				return nil, 0, false, nil
			}
			val = typedValue(string(trimSpaceBytes(b[vs:i])))
		}
		attrs[key] = val
		for i < e && (b[i] == ' ' || b[i] == '\t') && p.lit(i) {
			i++
		}
		if i >= e || !p.lit(i) || (b[i] != ',' && b[i] != ']') {
			return nil, 0, false, nil
		}
	}
}

func containsByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// typedValue types a bare attribute value: true/false (any case), integer, float, else string.
func typedValue(s string) any {
	if strings.EqualFold(s, "true") {
		return true
	}
	if strings.EqualFold(s, "false") {
		return false
	}
	if n, ok := parseIntLiteral(s); ok {
		return n
	}
	if f, ok := parseFloatLiteral(s); ok {
		return f
	}
	return s
}

// parseIntLiteral parses an optionally signed decimal integer.
func parseIntLiteral(s string) (int, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) || len(s) > 18 {
		return 0, false
	}
	n := 0
	for j := i; j < len(s); j++ {
		if s[j] < '0' || s[j] > '9' {
			return 0, false
		}
		n = n*10 + int(s[j]-'0')
	}
	if s[0] == '-' {
		n = -n
	}
	return n, true
}

// parseFloatLiteral parses a decimal float such as 3.2, -1.5e3 or .5 (no inf, nan or hex).
func parseFloatLiteral(s string) (float64, bool) {
	digits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-':
		default:
			return 0, false
		}
	}
	if !digits {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}
