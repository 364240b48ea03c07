package prompty

import (
	"fmt"
	"strings"

	weft "github.com/weft-agents/weft"
	"github.com/weft-agents/weft/prompty/tmpl"
)

// The dialects; front-matter `dialect:` or the loader option selects one.
const (
	// DialectSeed is seed 001's prompt section: media parts, tools block, tool calls, tool results
	// and the thread placeholder. It is the default.
	DialectSeed = "seed"
	// DialectV2 is Prompty v2: roles system, user, assistant and developer only; everything else is
	// literal text.
	DialectV2 = "v2"
)

// maxMediaBytes caps a local media file inlined as a data: URI.
const maxMediaBytes = 20 << 20

// ParseOptions configures ParseSegments.
type ParseOptions struct {
	// Dialect is DialectSeed (default when empty) or DialectV2.
	Dialect string
	// File names the .prompty file in errors and warnings.
	File string
	// Line is the file line on which the first segment's text starts (the body's first line); 0 = 1.
	Line int
	// MediaInputs maps the names of `kind: image|file|audio` inputs to their part type; an interp
	// segment whose Source is one of them becomes a media part.
	MediaInputs map[string]weft.PartType
	// ReadFile reads a relative media TARGET (a file next to the .prompty, already confined to the
	// project root). Nil refuses relative targets.
	ReadFile func(path string) ([]byte, error)
}

// Parsed is the result of parsing rendered segments.
type Parsed struct {
	// Messages are the template's messages in order.
	Messages []weft.LLMMessage
	// Thread is the index into Messages where the thread history goes; -1 when there is no
	// placeholder.
	Thread int
	// ThreadLimit keeps only the last N history messages (`thread[limit=N]:`); 0 = all.
	ThreadLimit int
	// Tools are the entries of the body's `tools:` block, hoisted into the prompt's tools.
	Tools []any
	// Warnings are non-fatal findings, each prefixed with file:line.
	Warnings []string
	// InputOnly lists the indices of the user/system messages whose text came only from input
	// values (no template text besides blanks), such as `user:\n{{question}}`.
	InputOnly []int
}

// span is one segment's text inside the parser's buffer.
type span struct {
	start, end int
	interp     bool
	src        string
	strict     bool
}

// point is a thread placeholder segment: a position in the buffer.
type point struct {
	pos int
	src string
}

// block is a message being collected: a marker (or the implicit text before the first marker, or the
// continuation after a thread placeholder) and its content lines.
type block struct {
	role     string
	implicit bool
	attrs    map[string]any
	line     int // file line of the marker
	nlines   int
	start    int
	end      int
}

type parser struct {
	opt      ParseOptions
	seed     bool
	buf      []byte
	owner    []int32 // span index of every byte of buf
	spans    []span
	points   []point
	nl       []int // positions of literal newlines
	res      Parsed
	started  bool // a message, marker or placeholder has been seen (tools block must come first)
	hasMedia bool // some interp segment is a media input

	// media target tables (indexTargets)
	nextStop, nextInterp, unsafeCum []int32
}

// ParseSegments parses rendered segments into messages. Structure is
// recognised only in Literal segment text; Interp text is always content; a Placeholder segment is
// the thread placeholder. It never panics.
func ParseSegments(segs []tmpl.Segment, opt ParseOptions) (res *Parsed, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, &Error{File: opt.File, Line: max(opt.Line, 1), Msg: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	p := &parser{opt: opt, seed: opt.Dialect != DialectV2}
	if p.opt.Line <= 0 {
		p.opt.Line = 1
	}
	p.res.Thread = -1
	if err := p.load(segs); err != nil {
		return nil, err
	}
	if err := p.run(); err != nil {
		return nil, err
	}
	return &p.res, nil
}

// isPlaceholder reports whether a segment is the thread placeholder.
func isPlaceholder(k tmpl.Kind) bool { return k == tmpl.Placeholder }

// load concatenates the segments into buf (CRLF and CR become LF), records spans and checks strict
// values.
func (p *parser) load(segs []tmpl.Segment) error {
	n := 0
	for i := range segs {
		n += len(segs[i].Text)
	}
	p.buf = make([]byte, 0, n)
	p.owner = make([]int32, 0, n)
	p.spans = make([]span, 0, len(segs))
	prevCR := false
	for i := range segs {
		s := &segs[i]
		if isPlaceholder(s.Kind) {
			p.points = append(p.points, point{pos: len(p.buf), src: s.Source})
			continue
		}
		if s.Text == "" {
			continue
		}
		sp := span{start: len(p.buf), interp: s.Kind == tmpl.Interp, src: s.Source, strict: s.Strict}
		idx := int32(len(p.spans))
		t := s.Text
		if prevCR && t[0] == '\n' && !sp.interp {
			t = t[1:] // a CRLF split across two template pieces
		}
		prevCR = false
		if strings.IndexByte(t, '\r') < 0 {
			p.buf = append(p.buf, t...)
		} else {
			for j := 0; j < len(t); j++ {
				c := t[j]
				if c == '\r' {
					c = '\n'
					if j+1 < len(t) && t[j+1] == '\n' {
						j++
					} else if j+1 == len(t) && !sp.interp {
						// Only template text pairs with the next piece: a value ending in CR must
						// not swallow the template's newline after it (values never make structure).
						prevCR = true
					}
				}
				p.buf = append(p.buf, c)
			}
		}
		sp.end = len(p.buf)
		for len(p.owner) < sp.end {
			p.owner = append(p.owner, idx)
		}
		if !sp.interp {
			for j := sp.start; j < sp.end; j++ {
				if p.buf[j] == '\n' {
					p.nl = append(p.nl, j)
				}
			}
		} else {
			if sp.strict {
				if err := p.checkStrict(sp); err != nil {
					return err
				}
			}
			if _, ok := p.opt.MediaInputs[sp.src]; ok {
				p.hasMedia = true
			}
		}
		p.spans = append(p.spans, sp)
	}
	return nil
}

// checkStrict rejects a strict value with a line that looks like a role marker.
func (p *parser) checkStrict(sp span) error {
	text := p.buf[sp.start:sp.end]
	for ls := 0; ls <= len(text); {
		le := ls
		for le < len(text) && text[le] != '\n' {
			le++
		}
		if tmpl.ForgesRoleMarker(string(text[ls:le])) {
			return p.errAt(sp.start+ls, fmt.Sprintf("StrictViolation: input %q forges a role marker", sp.src), &tmpl.StrictError{Input: sp.src})
		}
		ls = le + 1
	}
	return nil
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// lit reports whether byte i of buf is template text.
func (p *parser) lit(i int) bool { return !p.spans[p.owner[i]].interp }

// lineOf returns the file line and column of buffer position pos.
func (p *parser) lineOf(pos int) (line, col int) {
	lo, hi := 0, len(p.nl)
	for lo < hi {
		m := (lo + hi) / 2
		if p.nl[m] < pos {
			lo = m + 1
		} else {
			hi = m
		}
	}
	start := 0
	if lo > 0 {
		start = p.nl[lo-1] + 1
	}
	return p.opt.Line + lo, pos - start + 1
}

func (p *parser) errAt(pos int, msg string, cause error) *Error {
	line, col := p.lineOf(pos)
	return &Error{File: p.opt.File, Line: line, Col: col, Msg: msg, Err: cause}
}

func (p *parser) warn(pos int, msg string) {
	line, _ := p.lineOf(pos)
	p.res.Warnings = append(p.res.Warnings, (&Error{File: p.opt.File, Line: line, Msg: msg}).Error())
}

// run splits the buffer into lines at literal newlines and assembles messages.
func (p *parser) run() error {
	cur := &block{role: "system", implicit: true, start: -1}
	pi := 0 // next placeholder
	ls := 0
	ni := 0
	for {
		le := len(p.buf)
		last := true
		if ni < len(p.nl) {
			le = p.nl[ni]
			ni++
			last = false
		}
		// placeholders on this line: pos in [ls, le]
		var linePts []point
		for pi < len(p.points) && (p.points[pi].pos <= le) {
			linePts = append(linePts, p.points[pi])
			pi++
		}
		if last && ls == le && len(linePts) == 0 {
			break // no final line after a trailing newline
		}
		var err error
		cur, err = p.line(cur, ls, le, linePts)
		if err != nil {
			return err
		}
		if last {
			break
		}
		ls = le + 1
	}
	return p.flush(cur)
}

// line handles one line [s, e) with the placeholders on it and returns the block being collected.
func (p *parser) line(cur *block, s, e int, pts []point) (*block, error) {
	if len(pts) > 0 {
		if blankBytes(p.buf[s:e]) {
			if len(pts) > 1 {
				return nil, p.errAt(pts[1].pos, "more than one thread placeholder", nil)
			}
			return p.thread(cur, pts[0].pos, 0)
		}
		// A placeholder that opens a line (a mustache standalone section over the thread is cut
		// with its line): the point, then the rest of the line as a line of its own, so that a
		// literal marker there still opens a message.
		if len(pts) == 1 && pts[0].pos == s && !(!cur.implicit && (cur.role == "tools" || cur.isToolCall(p.seed))) {
			next, err := p.thread(cur, s, 0)
			if err != nil {
				return nil, err
			}
			return p.line(next, s, e, nil)
		}
		// A placeholder inside a line of text: a point between two pieces of content.
		if !cur.implicit && (cur.role == "tools" || cur.isToolCall(p.seed)) {
			return nil, p.errAt(pts[0].pos, "thread placeholder inside a YAML block", nil)
		}
		for _, pt := range pts {
			cur.add(s, pt.pos)
			next, err := p.thread(cur, pt.pos, 0)
			if err != nil {
				return nil, err
			}
			cur, s = next, pt.pos
		}
		cur.add(s, e)
		return cur, nil
	}
	inYAML := !cur.implicit && (cur.role == "tools" || cur.isToolCall(p.seed))
	m, ok, err := p.marker(s, e, inYAML)
	if err != nil {
		return nil, err
	}
	if ok {
		if m.role == "tools" && (p.started || (cur.implicit && cur.nlines > 0 && !blankBytes(p.buf[cur.start:cur.end]))) {
			return nil, p.errAt(s, "tools section must precede the text prompt", nil)
		}
		if m.role == "thread" {
			limit := 0
			if v, has := m.attrs["limit"]; has {
				n, isInt := v.(int)
				if !isInt || n <= 0 {
					return nil, p.errAt(s, "thread limit must be a positive integer", nil)
				}
				limit = n
			}
			return p.thread(cur, s, limit)
		}
		if err := p.flush(cur); err != nil {
			return nil, err
		}
		line, _ := p.lineOf(s)
		p.started = true
		return &block{role: m.role, attrs: m.attrs, line: line, start: -1}, nil
	}
	if p.seed && e-s >= 9 {
		if t := trimSpaceBytes(p.buf[s:e]); len(t) == 9 && strings.EqualFold(string(t), "![thread]") && p.allLit(s, e) {
			return p.thread(cur, s, 0)
		}
	}
	cur.add(s, e)
	return cur, nil
}

func (p *parser) allLit(s, e int) bool {
	for i := s; i < e; i++ {
		if !p.lit(i) {
			return false
		}
	}
	return true
}

// add appends the text [s, e) as one more line of the block.
func (b *block) add(s, e int) {
	if b.nlines == 0 {
		b.start = s
	}
	b.end = e
	b.nlines++
}

func (b *block) isToolCall(seed bool) bool {
	if !seed || b.role != "assistant" {
		return false
	}
	t, _ := b.attrs["type"].(string)
	return t == "tool_call"
}

// thread records the thread placeholder at pos, flushing cur, and returns the block that continues
// the role active before it.
func (p *parser) thread(cur *block, pos, limit int) (*block, error) {
	if err := p.flush(cur); err != nil {
		return nil, err
	}
	if p.res.Thread >= 0 {
		return nil, p.errAt(pos, "more than one thread placeholder", nil)
	}
	p.res.Thread = len(p.res.Messages)
	p.res.ThreadLimit = limit
	p.started = true
	next := &block{role: cur.role, implicit: true, line: cur.line, start: -1}
	if next.role == "tools" {
		next.role = "system"
	}
	if len(cur.attrs) > 0 {
		next.attrs = make(map[string]any, len(cur.attrs))
		for k, v := range cur.attrs {
			if k != "type" {
				next.attrs[k] = v
			}
		}
	}
	return next, nil
}

// flush turns a collected block into a message, a tool call message or the hoisted tools.
func (p *parser) flush(b *block) error {
	if b.implicit {
		if b.nlines == 0 || blankBytes(p.buf[b.start:b.end]) {
			return nil
		}
	} else if b.nlines == 0 {
		if b.role == "tools" {
			p.started = true
		}
		return nil
	}
	s, e := b.start, b.end
	for s < e && p.buf[s] == '\n' {
		s++
	}
	for e > s && p.buf[e-1] == '\n' {
		e--
	}
	p.started = true
	switch {
	case b.role == "tools":
		tools, err := p.toolsBlock(s, e)
		if err != nil {
			return err
		}
		p.res.Tools = append(p.res.Tools, tools...)
		return nil
	case b.isToolCall(p.seed):
		calls, err := p.toolCallBlock(s, e)
		if err != nil {
			return err
		}
		m := weft.LLMMessage{Role: weft.RoleAssistant, ToolCalls: calls, Metadata: b.attrs}
		m.Name = attrString(b.attrs, "name")
		p.res.Messages = append(p.res.Messages, m)
		return nil
	case b.role == "tool":
		m := weft.LLMMessage{Role: weft.RoleTool, Content: string(p.buf[s:e]), Metadata: b.attrs}
		m.Name = attrString(b.attrs, "name")
		m.ToolCallID = attrString(b.attrs, "tool_call_id")
		switch strings.ToLower(attrString(b.attrs, "status")) {
		case "error":
			m.ToolStatus = weft.ToolError
		case "success":
			m.ToolStatus = weft.ToolSuccess
		}
		if m.ToolCallID == "" && !b.implicit {
			p.warn(b.start, "tool message without tool_call_id")
		}
		p.res.Messages = append(p.res.Messages, m)
		return nil
	}
	m := weft.LLMMessage{Role: weft.Role(b.role), Metadata: b.attrs}
	m.Name = attrString(b.attrs, "name")
	if p.seed || p.hasMedia {
		parts, err := p.parts(s, e)
		if err != nil {
			return err
		}
		m.Parts = parts
	}
	if m.Parts == nil {
		m.Content = string(p.buf[s:e])
	}
	if p.inputOnly(s, e) {
		p.res.InputOnly = append(p.res.InputOnly, len(p.res.Messages))
	}
	p.res.Messages = append(p.res.Messages, m)
	return nil
}

// inputOnly reports whether the text [s, e) has some interpolated text and no template text
// besides blanks.
func (p *parser) inputOnly(s, e int) bool {
	interp := false
	for i := s; i < e; i++ {
		if !p.lit(i) {
			interp = true
		} else if c := p.buf[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return interp
}

// attrString returns attribute k as a string ("" when absent).
func attrString(attrs map[string]any, k string) string {
	v, ok := attrs[k]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

func blankBytes(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\v' && c != '\f' {
			return false
		}
	}
	return true
}

func trimSpaceBytes(b []byte) []byte {
	s, e := 0, len(b)
	for s < e && (b[s] == ' ' || b[s] == '\t' || b[s] == '\n') {
		s++
	}
	for e > s && (b[e-1] == ' ' || b[e-1] == '\t' || b[e-1] == '\n') {
		e--
	}
	return b[s:e]
}
