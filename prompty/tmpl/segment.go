// Package tmpl holds the two template engines of the Prompty format — mustache and the Prompty
// Jinja subset (Weft's default) — rendering to segments so that the Prompty parser can tell template text
// (literal) from values that came in through inputs (interp) and never lets a value open a message.
package tmpl

// Kind tells where a segment's text came from.
type Kind uint8

// The segment kinds.
const (
	// Literal text was written in the template itself.
	Literal Kind = iota
	// Interp text is the rendering of a value: a variable, a filter result or a replacement construct.
	Interp
	// Placeholder marks where a Thread input value was rendered (`{{conversation}}`): the thread
	// placeholder point. Source is the input's name; Text is empty.
	Placeholder
)

// String returns "literal", "interp" or "placeholder" (the first two are the names the fixtures use).
func (k Kind) String() string {
	switch k {
	case Interp:
		return "interp"
	case Placeholder:
		return "placeholder"
	}
	return "literal"
}

// Segment is one run of rendered output. Concatenating every segment's Text gives the rendered string.
type Segment struct {
	// Kind says whether Text is template text or an interpolated value.
	Kind Kind
	// Text is the rendered text.
	Text string
	// Source names what produced an interp segment: the variable path or expression ("user.name").
	Source string
	// Strict is set when the value came from an input declared `strict: true`.
	Strict bool
	// Loop is set on a Placeholder rendered by a loop (jinja `for`, mustache section) over the
	// thread input rather than by `{{name}}`.
	Loop bool
}

// Template is a compiled template, safe for concurrent use.
type Template interface {
	// Render evaluates the template against the inputs. strict names the inputs declared strict; their
	// interp segments carry Strict.
	Render(inputs map[string]any, strict map[string]bool) ([]Segment, error)
}

// Join concatenates the segments' text.
func Join(segs []Segment) string {
	n := 0
	for _, s := range segs {
		n += len(s.Text)
	}
	b := make([]byte, 0, n)
	for _, s := range segs {
		b = append(b, s.Text...)
	}
	return string(b)
}
