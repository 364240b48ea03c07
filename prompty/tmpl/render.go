package tmpl

import "fmt"

// Limits that keep a render bounded whatever the template and inputs.
const (
	// maxNesting bounds nested blocks (sections, if, for) and nested expressions at compile time.
	maxNesting = 64
	// maxSteps bounds the nodes visited by one render (loops multiply them).
	maxSteps = 1 << 20
	// maxOutput bounds the bytes one render produces.
	maxOutput = 16 << 20
)

// textRenderer is implemented by the engines' templates: a render to a plain string.
type textRenderer interface {
	renderText(inputs map[string]any) (string, error)
}

// Text renders t to a plain string without segments or strict checks. For the templates of this
// package it takes a separate path that never builds segments; its result equals Join of Render's.
func Text(t Template, inputs map[string]any) (string, error) {
	if tr, ok := t.(textRenderer); ok {
		return tr.renderText(inputs)
	}
	segs, err := t.Render(inputs, nil)
	if err != nil {
		return "", err
	}
	return Join(segs), nil
}

// out collects a render's output: segments, or plain text when plain is set.
type out struct {
	plain  bool
	buf    []byte    // plain output, or pending literal pieces when pieces > 1
	segs   []Segment // segment output
	lit    string    // the pending literal when pieces == 1
	pieces int
	size   int
	steps  int
}

// limitError is returned when a render exceeds maxSteps or maxOutput.
type limitError struct{ what string }

func (e limitError) Error() string { return "render limit exceeded: " + e.what }

// step counts one visited node.
func (o *out) step() error {
	o.steps++
	if o.steps > maxSteps {
		return limitError{fmt.Sprintf("more than %d template steps", maxSteps)}
	}
	return nil
}

func (o *out) grow(n int) error {
	o.size += n
	if o.size > maxOutput {
		return limitError{fmt.Sprintf("more than %d bytes of output", maxOutput)}
	}
	return nil
}

// literal appends template text; consecutive literals become one segment.
func (o *out) literal(s string) error {
	if s == "" {
		return nil
	}
	if err := o.grow(len(s)); err != nil {
		return err
	}
	if o.plain {
		o.buf = append(o.buf, s...)
		return nil
	}
	switch o.pieces {
	case 0:
		o.lit = s
	case 1:
		o.buf = append(append(o.buf[:0], o.lit...), s...)
	default:
		o.buf = append(o.buf, s...)
	}
	o.pieces++
	return nil
}

func (o *out) flush() {
	switch o.pieces {
	case 0:
		return
	case 1:
		o.segs = append(o.segs, Segment{Kind: Literal, Text: o.lit})
	default:
		o.segs = append(o.segs, Segment{Kind: Literal, Text: string(o.buf)})
	}
	o.pieces, o.lit = 0, ""
}

// interp appends a value's text as its own segment; empty values are dropped.
func (o *out) interp(text, source string, strict bool) error {
	if text == "" {
		return nil
	}
	if err := o.grow(len(text)); err != nil {
		return err
	}
	if o.plain {
		o.buf = append(o.buf, text...)
		return nil
	}
	o.flush()
	o.segs = append(o.segs, Segment{Kind: Interp, Text: text, Source: source, Strict: strict})
	return nil
}

// placeholder appends a thread placeholder segment.
func (o *out) placeholder(name string) {
	if o.plain {
		return
	}
	o.flush()
	o.segs = append(o.segs, Segment{Kind: Placeholder, Source: name})
}

// loopPlaceholder appends the thread placeholder of a loop (or section) over a thread input.
func (o *out) loopPlaceholder(name string) {
	if o.plain {
		return
	}
	o.flush()
	o.segs = append(o.segs, Segment{Kind: Placeholder, Source: name, Loop: true})
}

// threadName reports whether v is a thread input value, and its input name.
func threadName(v any) (string, bool) {
	switch th := v.(type) {
	case Thread:
		return th.Name, true
	case *Thread:
		if th != nil {
			return th.Name, true
		}
	}
	return "", false
}

// result finishes a segment render.
func (o *out) result() []Segment {
	o.flush()
	return o.segs
}
