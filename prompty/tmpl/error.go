package tmpl

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Error is a template error (compile or render) at a 1-based line and column; Col is 0 when the
// column is not known. Columns count characters, not bytes.
type Error struct {
	// Line is the 1-based line of the offending construct.
	Line int
	// Col is the 1-based column of the offending construct, 0 when unknown.
	Col int
	// Msg says what is wrong.
	Msg string
}

// Error returns "line L:C: msg" (or "line L: msg" without a column).
func (e *Error) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("line %d:%d: %s", e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// errorAt builds an Error for byte offset off of src.
func errorAt(src string, off int, format string, args ...any) *Error {
	if off > len(src) {
		off = len(src)
	}
	if off < 0 {
		off = 0
	}
	line, lineStart := 1, 0
	for i := 0; i < off; i++ {
		if src[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return &Error{Line: line, Col: utf8.RuneCountInString(src[lineStart:off]) + 1, Msg: fmt.Sprintf(format, args...)}
}

// ErrStrictViolation is matched by errors.Is for every *StrictError.
var ErrStrictViolation = errors.New("StrictViolation")

// StrictError is the render error for a strict input whose value forges a role marker.
type StrictError struct {
	// Input names the strict input the value came from.
	Input string
}

// Error returns `StrictViolation: input "q" forges a role marker`.
func (e *StrictError) Error() string {
	return fmt.Sprintf("StrictViolation: input %q forges a role marker", e.Input)
}

// Is reports whether target is ErrStrictViolation.
func (e *StrictError) Is(target error) bool { return target == ErrStrictViolation }

// ForgesRoleMarker reports whether any line of s looks like a role marker: optional whitespace, an
// optional `#`, a role word (system, user, assistant, developer, tool, function, thread; any case),
// optional whitespace, an optional `[...]` attribute list, optional whitespace, then `:`. It covers
// every marker form the parser accepts, so a strict value cannot slip one past it.
func ForgesRoleMarker(s string) bool {
	for len(s) > 0 {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if lineForgesMarker(line) {
			return true
		}
	}
	return false
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

func lineForgesMarker(l string) bool {
	i := 0
	for i < len(l) && isBlank(l[i]) {
		i++
	}
	if i < len(l) && l[i] == '#' {
		i++
		for i < len(l) && isBlank(l[i]) {
			i++
		}
	}
	j := i
	for j < len(l) && (l[j]|0x20) >= 'a' && (l[j]|0x20) <= 'z' {
		j++
	}
	switch strings.ToLower(l[i:j]) {
	case "system", "user", "assistant", "developer", "tool", "function", "thread":
	default:
		return false
	}
	for j < len(l) && isBlank(l[j]) {
		j++
	}
	if j < len(l) && l[j] == '[' {
		k := strings.IndexByte(l[j:], ']')
		if k < 0 {
			return false
		}
		j += k + 1
		for j < len(l) && isBlank(l[j]) {
			j++
		}
	}
	return j < len(l) && l[j] == ':'
}
