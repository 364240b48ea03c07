package prompty

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	weft "github.com/weft-agents/weft"
	"github.com/weft-agents/weft/prompty/tmpl"
)

// RenderInput is what one render of a File needs.
type RenderInput struct {
	// Args are the arguments, already validated against InputSchema (defaults applied).
	Args map[string]any
	// Env resolves a body `${env:NAME}` from the thread env; secret values render as `[redacted]`.
	// Nil: every name is unset.
	Env func(name string) (value string, secret bool, ok bool)
	// Files, when set, reads body `${file:}` targets and local media instead of the disk; it gets the
	// cleaned path relative to the .prompty file, already checked to stay inside the root.
	Files func(path string) ([]byte, error)
}

// Rendered is one render mapped onto the Weft prompt.
type Rendered struct {
	// System is the leading system/developer messages joined with a blank line.
	System string
	// Prefix are the messages after the system prompt and before the thread history.
	Prefix []weft.LLMMessage
	// Suffix are the messages after the thread history (only with a placeholder).
	Suffix []weft.LLMMessage
	// ThreadLimit keeps only the last N history messages; 0 = all.
	ThreadLimit int
	// HasThread reports whether the template placed the history with a placeholder.
	HasThread bool
	// HistoryLoop names the thread input whose loop placed the history ("" when the placeholder
	// came from `{{name}}`, `![thread]` or a marker, or there is none).
	HistoryLoop string
	// ThreadInput names the thread input whose value (`{{conversation}}`) or loop placed the
	// history ("" when a marker placed it, or there is none).
	ThreadInput string
	// QuestionSlots are the indices into Suffix of the user messages made only of input values
	// (`user:\n{{question}}` after the history): in Prompty the caller's new question goes there.
	QuestionSlots []int
	// Tools are the entries of the body's `tools:` block for this step.
	Tools []any
	// Warnings are non-fatal findings (unset env variables, missing params, empty media).
	Warnings []string
}

// Render renders the body with the arguments, applies the body replacement constructs and parses
// the result. It is safe for concurrent use.
func (f *File) Render(in RenderInput) (r *Rendered, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			r, err = nil, &Error{File: f.Path, Line: f.BodyLine, Msg: fmt.Sprintf("internal error: %v", rec)}
		}
	}()
	read := func(p string) ([]byte, error) {
		if data, ok := f.media[p]; ok && in.Files == nil {
			return data, nil
		}
		_, data, err := f.fsFor(in).read(f.fs.dir, p)
		return data, err
	}
	return f.render(in, read)
}

// fsFor returns the file reader of a render: the disk, or in.Files.
func (f *File) fsFor(in RenderInput) *confinedFS {
	if in.Files == nil {
		return f.fs
	}
	c := *f.fs
	c.files = in.Files
	return &c
}

func (f *File) render(in RenderInput, readMedia func(string) ([]byte, error)) (*Rendered, error) {
	inputs := in.Args
	if len(f.ThreadInputs) > 0 {
		inputs = make(map[string]any, len(in.Args)+len(f.ThreadInputs))
		for k, v := range in.Args {
			inputs[k] = v
		}
		for _, n := range f.ThreadInputs {
			inputs[n] = tmpl.Thread{Name: n}
		}
	}
	segs, err := f.tpl.Render(inputs, f.strict)
	if err != nil {
		var se *tmpl.StrictError
		if errors.As(err, &se) {
			return nil, f.strictError(inputs, se, err)
		}
		return nil, f.templateError(err)
	}
	var warnings []string
	segs, err = f.expand(segs, in, &warnings)
	if err != nil {
		return nil, err
	}
	parsed, err := ParseSegments(segs, ParseOptions{Dialect: f.Dialect, File: f.Path, Line: f.BodyLine,
		MediaInputs: f.MediaInputs, ReadFile: readMedia})
	if err != nil {
		return nil, err
	}
	r := mapRendered(parsed)
	for _, s := range segs {
		if s.Kind == tmpl.Placeholder {
			r.ThreadInput = s.Source
			if s.Loop {
				r.HistoryLoop = s.Source
			}
			break
		}
	}
	if len(warnings) > 0 {
		r.Warnings = append(warnings, r.Warnings...)
	}
	return r, nil
}

// strictError locates a strict violation reported by the engine: the first value of that input
// that forges a marker, found in a render without strict checks.
func (f *File) strictError(inputs map[string]any, se *tmpl.StrictError, cause error) error {
	line := f.BodyLine
	if segs, err := f.tpl.Render(inputs, nil); err == nil {
		for _, s := range segs {
			if s.Kind == tmpl.Interp && tmpl.ForgesRoleMarker(s.Text) {
				break
			}
			if s.Kind == tmpl.Literal {
				line += strings.Count(s.Text, "\n")
			}
		}
	}
	return &Error{File: f.Path, Line: line, Msg: fmt.Sprintf("StrictViolation: input %q forges a role marker", se.Input), Err: cause}
}

// mapRendered splits parsed messages into system prompt (the leading system/developer messages),
// prefix (before the thread placeholder, or all when there is none) and suffix (after it).
func mapRendered(p *Parsed) *Rendered {
	r := &Rendered{Tools: p.Tools, Warnings: p.Warnings, ThreadLimit: p.ThreadLimit, HasThread: p.Thread >= 0}
	msgs := p.Messages
	end := len(msgs)
	if p.Thread >= 0 {
		end = p.Thread
	}
	k := 0
	var sys []string
	var media []weft.ContentPart
	for k < end && (msgs[k].Role == weft.RoleSystem || msgs[k].Role == weft.RoleDeveloper) {
		if len(msgs[k].Parts) == 0 {
			sys = append(sys, msgs[k].Content)
			k++
			continue
		}
		// A system section with media (an image input under system:): its text joins the system
		// prompt and its media go to the model in a user message right after it, since chat APIs
		// take media only in user messages.
		var text strings.Builder
		for _, pt := range msgs[k].Parts {
			if pt.Type == weft.PartText {
				text.WriteString(pt.Text)
			} else {
				media = append(media, pt)
			}
		}
		if t := strings.TrimSpace(text.String()); t != "" {
			sys = append(sys, t)
		}
		k++
	}
	r.System = strings.Join(sys, "\n\n")
	r.Prefix = msgs[k:end:end] // capped: appending to Prefix must not overwrite Suffix
	if len(media) > 0 {
		r.Prefix = append([]weft.LLMMessage{{Role: weft.RoleUser, Parts: media}}, r.Prefix...)
	}
	if p.Thread >= 0 {
		r.Suffix = msgs[end:]
		for _, i := range p.InputOnly {
			if i >= end && msgs[i].Role == weft.RoleUser {
				r.QuestionSlots = append(r.QuestionSlots, i-end)
			}
		}
	}
	return r
}

// expand applies the body replacement constructs to literal segments: `${env:X}`,
// `${env:X:default}`, `${params:x}` and `${file:path}` become interp segments, `$${` becomes `${`,
// other protocols stay literal. Values inserted by inputs are never scanned.
func (f *File) expand(segs []tmpl.Segment, in RenderInput, warnings *[]string) ([]tmpl.Segment, error) {
	first := -1
	for i := range segs {
		if segs[i].Kind == tmpl.Literal && strings.Contains(segs[i].Text, "${") {
			first = i
			break
		}
	}
	if first < 0 {
		return segs, nil
	}
	out := make([]tmpl.Segment, 0, len(segs)+4)
	out = append(out, segs[:first]...)
	for i := first; i < len(segs); i++ {
		s := segs[i]
		if s.Kind != tmpl.Literal || !strings.Contains(s.Text, "${") {
			out = append(out, s)
			continue
		}
		text := s.Text
		var lit strings.Builder
		flush := func() {
			if lit.Len() > 0 {
				out = append(out, tmpl.Segment{Kind: tmpl.Literal, Text: lit.String()})
				lit.Reset()
			}
		}
		pos := 0
		for {
			j := strings.Index(text[pos:], "${")
			if j < 0 {
				lit.WriteString(text[pos:])
				break
			}
			j += pos
			if j > 0 && text[j-1] == '$' {
				lit.WriteString(text[pos : j-1])
				lit.WriteString("${")
				pos = j + 2
				continue
			}
			end := strings.IndexByte(text[j:], '}')
			nl := strings.IndexByte(text[j:], '\n')
			if end < 0 || (nl >= 0 && nl < end) {
				lit.WriteString(text[pos : j+2])
				pos = j + 2
				continue
			}
			end += j
			proto, rest, ok := construct(text[j : end+1])
			if !ok || (proto != "env" && proto != "params" && proto != "file") {
				lit.WriteString(text[pos : j+2])
				pos = j + 2
				continue
			}
			lit.WriteString(text[pos:j])
			val, err := f.constructValue(proto, rest, in, func(msg string) {
				*warnings = append(*warnings, (&Error{File: f.Path, Line: f.segLine(segs, i, j), Msg: msg}).Error())
			})
			if err != nil {
				return nil, &Error{File: f.Path, Line: f.segLine(segs, i, j), Msg: err.Error(), Err: errors.Unwrap(err)}
			}
			if val != "" {
				flush()
				out = append(out, tmpl.Segment{Kind: tmpl.Interp, Text: val, Source: proto + ":" + rest})
			}
			pos = end + 1
		}
		flush()
	}
	return out, nil
}

// segLine is the file line of byte off in literal segment i (literal newlines counted).
func (f *File) segLine(segs []tmpl.Segment, i, off int) int {
	line := f.BodyLine
	for k := 0; k < i; k++ {
		if segs[k].Kind == tmpl.Literal {
			line += strings.Count(segs[k].Text, "\n")
		}
	}
	return line + strings.Count(segs[i].Text[:off], "\n")
}

// constructValue resolves one body construct.
func (f *File) constructValue(proto, rest string, in RenderInput, warn func(string)) (string, error) {
	switch proto {
	case "env":
		name, def, hasDef := envRef(rest)
		if in.Env != nil {
			if v, secret, ok := in.Env(name); ok {
				if secret {
					return "[redacted]", nil
				}
				return v, nil
			}
		}
		if hasDef {
			return def, nil
		}
		warn(fmt.Sprintf("${env:%s}: variable %s is not set", name, name))
		return "", nil
	case "params":
		v, ok := in.Args[rest]
		if !ok {
			warn(fmt.Sprintf("${params:%s}: no argument %q", rest, rest))
			return "", nil
		}
		return valueText(v), nil
	}
	_, data, err := f.fsFor(in).read(f.fs.dir, rest)
	if err != nil {
		return "", fmt.Errorf("${file:%s}: %w", rest, err)
	}
	return string(data), nil
}

// valueText renders an argument as the engines do: strings as is, null as "", 1.0 as 1, maps and
// lists as compact JSON.
func valueText(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case bool:
		return strconv.FormatBool(t)
	case int:
		return strconv.Itoa(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	}
	js, err := compactJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return js
}

// ResolveParams returns a copy of a front-matter value (a tool entry, an option) with every
// whole-string `${params:NAME}` replaced by args[NAME]. A missing argument is an error naming the
// file and the line of the reference.
func (f *File) ResolveParams(v any, args map[string]any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			r, err := f.ResolveParams(x, args)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			r, err := f.ResolveParams(x, args)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case string:
		proto, name, ok := construct(t)
		if !ok || proto != "params" {
			return t, nil
		}
		if a, ok := args[name]; ok {
			return a, nil
		}
		line := 0
		for _, ref := range f.ParamRefs {
			if ref.Name == name {
				line = ref.Line
				break
			}
		}
		return nil, &Error{File: f.Path, Line: line, Msg: fmt.Sprintf("${params:%s}: no argument %q", name, name)}
	}
	return v, nil
}
