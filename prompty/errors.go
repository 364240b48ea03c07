package prompty

import "strconv"

// Error is every load, render and parse error of this package. It names the file, the line (1-based,
// counted in the .prompty file) and, where known, the column of the offending text, and the rule.
type Error struct {
	// File is the .prompty path as given to Load.
	File string
	// Line is the 1-based line in File; 0 when unknown.
	Line int
	// Col is the 1-based byte column in Line; 0 when unknown.
	Col int
	// Msg states the rule that was broken.
	Msg string
	// Err is the underlying cause (an fs error, a template error), if any.
	Err error
}

// Error formats the error as `file:line:col: msg`, leaving out what is unknown.
func (e *Error) Error() string {
	b := make([]byte, 0, len(e.File)+len(e.Msg)+16)
	b = append(b, e.File...)
	if e.Line > 0 {
		if len(b) > 0 {
			b = append(b, ':')
		}
		b = strconv.AppendInt(b, int64(e.Line), 10)
		if e.Col > 0 {
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(e.Col), 10)
		}
	}
	if len(b) > 0 {
		b = append(b, ": "...)
	}
	b = append(b, e.Msg...)
	return string(b)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }
