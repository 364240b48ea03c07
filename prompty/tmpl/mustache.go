package tmpl

import (
	"errors"
	"slices"
	"strings"
)

// CompileMustache compiles a mustache template: variables `{{x}}`, `{{{x}}}` and
// `{{&x}}` (all unescaped), dotted names, `{{.}}`, sections `{{#x}}…{{/x}}` (lists iterate, maps
// push a context, other truthy values render once), inverted sections `{{^x}}…{{/x}}` and comments
// `{{! … }}`, with the mustache spec's standalone-line rules for section, inverted, closing and
// comment tags. Partials (`{{>x}}`), delimiter changes (`{{=<% %>=}}`) and template inheritance
// (`{{<x}}`, `{{$x}}`) are an *Error with line and column.
func CompileMustache(src string) (Template, error) {
	toks, err := mustacheTokens(src)
	if err != nil {
		return nil, err
	}
	stripStandalone(toks)
	b := &mbuilder{src: src, toks: toks}
	nodes, err := b.build(nil, 0)
	if err != nil {
		return nil, err
	}
	return &mustacheTemplate{src: src, nodes: nodes, outs: b.outs}, nil
}

type mkind uint8

const (
	mText mkind = iota
	mVar
	mSection
	mInverted
	mClose
	mComment
)

type mtok struct {
	kind    mkind
	text    string   // text, or the tag's trimmed name
	parts   []string // dotted name; nil for "."
	pos     int
	removed bool // whitespace of a standalone line
}

func mustacheTokens(src string) ([]mtok, error) {
	var toks []mtok
	addText := func(s string, pos int) {
		for s != "" {
			n := strings.IndexByte(s, '\n') + 1
			if n == 0 {
				n = len(s)
			}
			toks = append(toks, mtok{kind: mText, text: s[:n], pos: pos})
			s, pos = s[n:], pos+n
		}
	}
	i := 0
	for {
		j := strings.Index(src[i:], "{{")
		if j < 0 {
			break
		}
		addText(src[i:i+j], i)
		i += j
		start := i + 2
		closer := "}}"
		kind := mVar
		if start < len(src) {
			switch src[start] {
			case '{':
				closer = "}}}"
				start++
			case '&':
				start++
			case '#':
				kind = mSection
				start++
			case '^':
				kind = mInverted
				start++
			case '/':
				kind = mClose
				start++
			case '!':
				kind = mComment
				start++
			case '>':
				return nil, errorAt(src, i, "partials ({{>name}}) are not supported")
			case '=':
				return nil, errorAt(src, i, "delimiter changes ({{=<%% %%>=}}) are not supported")
			case '<', '$':
				return nil, errorAt(src, i, "template inheritance ({{%c…}}) is not supported", src[start])
			}
		}
		k := strings.Index(src[start:], closer)
		if k < 0 {
			return nil, errorAt(src, i, "unclosed tag: missing %s", closer)
		}
		inner := src[start : start+k]
		t := mtok{kind: kind, pos: i}
		i = start + k + len(closer)
		if kind == mComment {
			toks = append(toks, t)
			continue
		}
		name := strings.TrimSpace(inner)
		t.text = name
		switch {
		case name == "":
			return nil, errorAt(src, t.pos, "empty tag")
		case strings.ContainsAny(name, " \t\r\n{}"):
			return nil, errorAt(src, t.pos, "invalid name %q", name)
		case name == ".":
		default:
			t.parts = strings.Split(name, ".")
			for _, p := range t.parts {
				if p == "" {
					return nil, errorAt(src, t.pos, "invalid dotted name %q", name)
				}
			}
		}
		toks = append(toks, t)
	}
	addText(src[i:], i)
	return toks, nil
}

// stripStandalone marks the whitespace of lines that hold only section, inverted, closing and
// comment tags (the mustache spec's standalone lines) as removed, newline included.
func stripStandalone(toks []mtok) {
	start := 0
	for start < len(toks) {
		end := start
		for end < len(toks) {
			end++
			if t := toks[end-1]; t.kind == mText && strings.HasSuffix(t.text, "\n") {
				break
			}
		}
		tags, ok := 0, true
		for _, t := range toks[start:end] {
			switch t.kind {
			case mText:
				s := t.text
				if strings.HasSuffix(s, "\n") {
					s = strings.TrimSuffix(s[:len(s)-1], "\r")
				}
				if strings.Trim(s, " \t") != "" {
					ok = false
				}
			case mVar:
				ok = false
			default:
				tags++
			}
		}
		if ok && tags > 0 {
			for k := start; k < end; k++ {
				if toks[k].kind == mText {
					toks[k].removed = true
				}
			}
		}
		start = end
	}
}

type mnode struct {
	kind  mkind
	text  string // text, or the tag's name (the interp segment's Source)
	parts []string
	pos   int
	body  []mnode
}

type mbuilder struct {
	src  string
	toks []mtok
	i    int
	outs int
}

// build parses nodes until the closing tag of open (nil at top level).
func (b *mbuilder) build(open *mtok, depth int) ([]mnode, error) {
	if depth > maxNesting {
		return nil, errorAt(b.src, open.pos, "sections nested deeper than %d", maxNesting)
	}
	var nodes []mnode
	for b.i < len(b.toks) {
		t := &b.toks[b.i]
		b.i++
		switch t.kind {
		case mText:
			if t.removed {
				continue
			}
			if n := len(nodes); n > 0 && nodes[n-1].kind == mText && nodes[n-1].pos+len(nodes[n-1].text) == t.pos {
				nodes[n-1].text = b.src[nodes[n-1].pos : t.pos+len(t.text)]
				continue
			}
			nodes = append(nodes, mnode{kind: mText, text: t.text, pos: t.pos})
		case mComment:
		case mVar:
			b.outs++
			nodes = append(nodes, mnode{kind: mVar, text: t.text, parts: t.parts, pos: t.pos})
		case mSection, mInverted:
			body, err := b.build(t, depth+1)
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, mnode{kind: t.kind, text: t.text, parts: t.parts, pos: t.pos, body: body})
		case mClose:
			if open == nil {
				return nil, errorAt(b.src, t.pos, "closing tag {{/%s}} without an open section", t.text)
			}
			if t.text != open.text {
				return nil, errorAt(b.src, t.pos, "closing tag {{/%s}} does not match {{%c%s}}", t.text, sigil(open.kind), open.text)
			}
			return nodes, nil
		}
	}
	if open != nil {
		return nil, errorAt(b.src, open.pos, "unclosed section {{%c%s}}: missing {{/%s}}", sigil(open.kind), open.text, open.text)
	}
	return nodes, nil
}

func sigil(k mkind) byte {
	if k == mInverted {
		return '^'
	}
	return '#'
}

type mustacheTemplate struct {
	src   string
	nodes []mnode
	outs  int
}

// mframe is one context on the mustache stack; root names the input it came from ("" for the
// inputs themselves).
type mframe struct {
	v    any
	root string
}

type mrun struct {
	o      out
	t      *mustacheTemplate
	strict map[string]bool
	stack  []mframe
}

// Render evaluates the template; see Template.
func (t *mustacheTemplate) Render(inputs map[string]any, strict map[string]bool) ([]Segment, error) {
	r := mrun{t: t, strict: strict}
	r.o.segs = make([]Segment, 0, 2*t.outs+1)
	var stack [8]mframe
	r.stack = append(stack[:0], mframe{v: inputs})
	if err := r.nodes(t.nodes); err != nil {
		return nil, err
	}
	return r.o.result(), nil
}

func (t *mustacheTemplate) renderText(inputs map[string]any) (string, error) {
	r := mrun{t: t}
	r.o.plain = true
	var stack [8]mframe
	r.stack = append(stack[:0], mframe{v: inputs})
	if err := r.nodes(t.nodes); err != nil {
		return "", err
	}
	return string(r.o.buf), nil
}

// lookup resolves a (dotted) name against the context stack: the first part in the innermost
// context that has it, the rest strictly inside that value.
func (r *mrun) lookup(n *mnode) (any, string) {
	top := r.stack[len(r.stack)-1]
	if n.parts == nil {
		return top.v, top.root
	}
	var v any = undefined{}
	root := ""
	for k := len(r.stack) - 1; k >= 0; k-- {
		if x, ok := lookupKey(r.stack[k].v, n.parts[0]); ok {
			v, root = x, r.stack[k].root
			if root == "" {
				root = n.parts[0]
			}
			break
		}
	}
	for _, p := range n.parts[1:] {
		v = attr(v, p)
	}
	return v, root
}

func (r *mrun) nodes(ns []mnode) error {
	for k := range ns {
		n := &ns[k]
		if err := r.o.step(); err != nil {
			return err
		}
		switch n.kind {
		case mText:
			if err := r.o.literal(n.text); err != nil {
				return err
			}
		case mVar:
			if err := r.variable(n); err != nil {
				return err
			}
		case mInverted:
			v, _ := r.lookup(n)
			if !truthy(v) {
				if err := r.nodes(n.body); err != nil {
					return err
				}
			}
		case mSection:
			v, root := r.lookup(n)
			if !truthy(v) {
				continue
			}
			// A section over a thread input is the thread placeholder, like a jinja loop over it.
			if name, ok := threadName(v); ok {
				r.o.loopPlaceholder(name)
				continue
			}
			var items []any
			switch l := v.(type) {
			case []any:
				items = l
			case string, map[string]any, *Object, Object, bool, int, int64, float64:
			default:
				items, _ = listOf(v)
			}
			if items == nil {
				if err := r.push(mframe{v: v, root: root}, n.body); err != nil {
					return err
				}
				continue
			}
			for _, it := range items {
				if err := r.o.step(); err != nil {
					return err
				}
				if err := r.push(mframe{v: it, root: root}, n.body); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (r *mrun) push(f mframe, body []mnode) error {
	r.stack = append(r.stack, f)
	err := r.nodes(body)
	r.stack = r.stack[:len(r.stack)-1]
	return err
}

func (r *mrun) variable(n *mnode) error {
	v, root := r.lookup(n)
	switch th := v.(type) {
	case Thread:
		r.o.placeholder(th.Name)
		return nil
	case *Thread:
		if th != nil {
			r.o.placeholder(th.Name)
			return nil
		}
	}
	s, err := text(v)
	if err != nil {
		if errors.Is(err, errPlaceholderUse) {
			return errorAt(r.t.src, n.pos, "a thread input can only be rendered on its own ({{name}}), not inside another value")
		}
		return errorAt(r.t.src, n.pos, "%v", err)
	}
	strict := root != "" && r.strict[root]
	if strict && s != "" && ForgesRoleMarker(s) {
		return &StrictError{Input: root}
	}
	return r.o.interp(s, n.text, strict)
}

// mustacheRoleLoops appends to names the inputs of the sections of ns that write each item's role
// (`{{#H}}{{role}}:` …`{{/H}}`, H a plain name): the chat-history idiom in mustache.
func mustacheRoleLoops(ns []mnode, names []string) []string {
	for i := range ns {
		n := &ns[i]
		if n.kind != mSection && n.kind != mInverted {
			continue
		}
		if n.kind == mSection && len(n.parts) == 1 && mustacheWritesRole(n.body) && !slices.Contains(names, n.text) {
			names = append(names, n.text)
			continue
		}
		names = mustacheRoleLoops(n.body, names)
	}
	return names
}

// mustacheWritesRole reports whether a section body outputs `{{role}}` in its own context (also
// inside an inverted section, which keeps the context).
func mustacheWritesRole(body []mnode) bool {
	for i := range body {
		n := &body[i]
		switch n.kind {
		case mVar:
			if len(n.parts) == 1 && n.parts[0] == "role" {
				return true
			}
		case mInverted:
			if mustacheWritesRole(n.body) {
				return true
			}
		}
	}
	return false
}
