package tmpl

import (
	"strings"
	"unicode"
)

// CompileJinja compiles a template in the Prompty Jinja subset: `{{ expr }}` with
// variables, `.name`, `[index]` and `["key"]` access, string/number/true/false/none literals,
// `and`/`or`/`not`, comparisons, `in`/`not in` and the filters default, upper, lower, trim, join,
// length and replace; `{% if %}`/`elif`/`else`/`endif`; `{% for x in xs %}` and
// `{% for k, v in m.items() %}` with `else` and loop.index/index0/revindex/revindex0/first/last/
// length; `{# comments #}` and the `-` trim markers. Text is kept byte for byte (no trim_blocks,
// no lstrip_blocks). Anything else is an *Error with the line and column of the construct.
func CompileJinja(src string) (Template, error) {
	toks, err := jinjaTokens(src)
	if err != nil {
		return nil, err
	}
	p := &jparser{src: src, toks: toks}
	nodes, end, err := p.body()
	if err != nil {
		return nil, err
	}
	if end != nil {
		return nil, errorAt(src, end.pos, "unexpected {%% %s %%}", end.head)
	}
	return &jinjaTemplate{src: src, nodes: nodes, loops: p.maxLoops, outs: p.outs}, nil
}

// --- tokens -----------------------------------------------------------------

type jtokKind uint8

const (
	jtText jtokKind = iota
	jtExpr
	jtStmt
	jtComment
)

type jtok struct {
	kind         jtokKind
	text         string // text, or the tag's inner source without trim markers
	pos          int    // offset of the text or of the tag's opening brace
	inner        int    // offset of text's first byte within src (tags)
	trimL, trimR bool
}

// jinjaTokens splits src into text and tags and applies the trim markers.
func jinjaTokens(src string) ([]jtok, error) {
	var toks []jtok
	textStart := 0
	i := 0
	for {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 || i+j+1 >= len(src) {
			break
		}
		i += j
		var kind jtokKind
		var closer string
		switch src[i+1] {
		case '{':
			kind, closer = jtExpr, "}}"
		case '%':
			kind, closer = jtStmt, "%}"
		case '#':
			kind, closer = jtComment, "#}"
		default:
			i++
			continue
		}
		if i > textStart {
			toks = append(toks, jtok{kind: jtText, text: src[textStart:i], pos: textStart})
		}
		start := i + 2
		t := jtok{kind: kind, pos: i}
		if start < len(src) && src[start] == '-' {
			t.trimL = true
			start++
		}
		var end int
		if kind == jtComment {
			k := strings.Index(src[start:], closer)
			if k < 0 {
				return nil, errorAt(src, i, "unclosed comment")
			}
			end = start + k
		} else {
			end = -1
			for k := start; k+1 < len(src); k++ {
				c := src[k]
				if c == '\'' || c == '"' {
					q := c
					for k++; k < len(src) && src[k] != q; k++ {
						if src[k] == '\\' {
							k++
						}
					}
					if k >= len(src) {
						break
					}
					continue
				}
				if c == closer[0] && src[k+1] == '}' {
					end = k
					break
				}
			}
			if end < 0 {
				what := "{{"
				if kind == jtStmt {
					what = "{%"
				}
				return nil, errorAt(src, i, "unclosed %s tag", what)
			}
		}
		if end > start && src[end-1] == '-' {
			t.trimR = true
			t.text, t.inner = src[start:end-1], start
		} else {
			t.text, t.inner = src[start:end], start
		}
		toks = append(toks, t)
		i = end + 2
		textStart = i
	}
	if textStart < len(src) {
		toks = append(toks, jtok{kind: jtText, text: src[textStart:], pos: textStart})
	}
	for k := range toks {
		t := &toks[k]
		if t.kind == jtText {
			continue
		}
		if t.trimL && k > 0 && toks[k-1].kind == jtText {
			toks[k-1].text = strings.TrimRightFunc(toks[k-1].text, unicode.IsSpace)
		}
		if t.trimR && k+1 < len(toks) && toks[k+1].kind == jtText {
			toks[k+1].text = strings.TrimLeftFunc(toks[k+1].text, unicode.IsSpace)
		}
	}
	return toks, nil
}

// --- AST --------------------------------------------------------------------

type jnodeKind uint8

const (
	jnText jnodeKind = iota
	jnOut
	jnIf
	jnFor
)

type jnode struct {
	kind jnodeKind
	pos  int
	text string // jnText

	// jnOut
	expr   *jexpr
	source string
	roots  []string // inputs the value may come from (strictness)

	// jnIf: conds[i] selects bodies[i]; elseBody otherwise.
	conds    []*jexpr
	bodies   [][]jnode
	elseBody []jnode

	// jnFor
	slot  int  // loop frame index
	two   bool // two targets (k, v)
	items bool // iterating m.items()
	iter  *jexpr
	body  []jnode
}

type jop uint8

const (
	opLit jop = iota
	opVar
	opLoopVar   // the loop frame's first (which 0) or second (which 1) target
	opLoop      // the bare loop object
	opLoopField // loop.<name>
	opAttr
	opIndex
	opFilter
	opNot
	opAnd
	opOr
	opEq
	opNe
	opLt
	opGt
	opLe
	opGe
	opIn
	opNotIn
	opDefined // x is defined
	opIsNone  // x is none
)

type jfilter uint8

const (
	fDefault jfilter = iota
	fUpper
	fLower
	fTrim
	fJoin
	fLength
	fReplace
)

type jexpr struct {
	op     jop
	pos    int
	lit    any
	name   string
	slot   int
	which  int
	filter jfilter
	x, y   *jexpr
	args   []*jexpr
}

// --- parser -----------------------------------------------------------------

type jscope struct {
	a, b  string // target names ("" when absent)
	slot  int
	roots []string
}

type jparser struct {
	src      string
	toks     []jtok
	pos      int
	scopes   []jscope
	depth    int
	maxLoops int
	outs     int
}

// jend is the statement that ended a body (elif, else, endif, endfor).
type jend struct {
	head string
	pos  int
	rest []etok
}

// body parses nodes until a block-ending statement or the end of the template.
func (p *jparser) body() ([]jnode, *jend, error) {
	var nodes []jnode
	for p.pos < len(p.toks) {
		t := &p.toks[p.pos]
		p.pos++
		switch t.kind {
		case jtText:
			if t.text != "" {
				nodes = append(nodes, jnode{kind: jnText, pos: t.pos, text: t.text})
			}
		case jtComment:
		case jtExpr:
			toks, err := p.lex(t)
			if err != nil {
				return nil, nil, err
			}
			if len(toks) == 1 {
				return nil, nil, errorAt(p.src, t.pos, "empty expression")
			}
			ep := &exprParser{p: p, toks: toks}
			e, err := ep.parseAll()
			if err != nil {
				return nil, nil, err
			}
			p.outs++
			nodes = append(nodes, jnode{kind: jnOut, pos: t.pos, expr: e, source: strings.TrimSpace(t.text), roots: p.roots(e, nil)})
		case jtStmt:
			head, at := stmtHead(t)
			switch head {
			case "if", "for", "elif", "else", "endif", "endfor":
			case "":
				return nil, nil, errorAt(p.src, at, "expected a statement name after {%%")
			default:
				return nil, nil, errorAt(p.src, at, "unsupported tag {%% %s %%} (the Prompty Jinja subset has only if and for)", head)
			}
			toks, err := p.lex(t)
			if err != nil {
				return nil, nil, err
			}
			switch head {
			case "if":
				n, err := p.parseIf(t, toks[1:])
				if err != nil {
					return nil, nil, err
				}
				nodes = append(nodes, n)
			case "for":
				n, err := p.parseFor(t, toks[1:])
				if err != nil {
					return nil, nil, err
				}
				nodes = append(nodes, n)
			default:
				return nodes, &jend{head: head, pos: t.pos, rest: toks[1:]}, nil
			}
		}
	}
	return nodes, nil, nil
}

// stmtHead returns a statement's leading word and its offset ("" when it does not start with one).
func stmtHead(t *jtok) (string, int) {
	s := t.text
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	j := i
	for j < len(s) && (s[j] == '_' || isDigit(s[j]) || (s[j]|0x20) >= 'a' && (s[j]|0x20) <= 'z') {
		j++
	}
	if j == i || isDigit(s[i]) {
		return "", t.inner + i
	}
	return s[i:j], t.inner + i
}

func (p *jparser) enter(pos int) error {
	p.depth++
	if p.depth > maxNesting {
		return errorAt(p.src, pos, "blocks nested deeper than %d", maxNesting)
	}
	return nil
}

func (p *jparser) parseIf(t *jtok, rest []etok) (jnode, error) {
	if err := p.enter(t.pos); err != nil {
		return jnode{}, err
	}
	defer func() { p.depth-- }()
	n := jnode{kind: jnIf, pos: t.pos}
	cond, err := (&exprParser{p: p, toks: rest}).parseAll()
	if err != nil {
		return n, err
	}
	for {
		body, end, err := p.body()
		if err != nil {
			return n, err
		}
		if end == nil {
			return n, errorAt(p.src, t.pos, "unclosed {%% if %%}: missing {%% endif %%}")
		}
		if cond != nil {
			n.conds = append(n.conds, cond)
			n.bodies = append(n.bodies, body)
		} else {
			n.elseBody = body
		}
		switch end.head {
		case "elif":
			if cond == nil {
				return n, errorAt(p.src, end.pos, "{%% elif %%} after {%% else %%}")
			}
			if cond, err = (&exprParser{p: p, toks: end.rest}).parseAll(); err != nil {
				return n, err
			}
		case "else":
			if cond == nil {
				return n, errorAt(p.src, end.pos, "second {%% else %%} in {%% if %%}")
			}
			if err := noArgs(p.src, end); err != nil {
				return n, err
			}
			cond = nil
		case "endif":
			return n, noArgs(p.src, end)
		default:
			return n, errorAt(p.src, end.pos, "unexpected {%% %s %%} inside {%% if %%}", end.head)
		}
	}
}

func noArgs(src string, end *jend) error {
	if len(end.rest) > 1 {
		return errorAt(src, end.rest[0].pos, "unexpected text after %s", end.head)
	}
	return nil
}

func (p *jparser) parseFor(t *jtok, rest []etok) (jnode, error) {
	if err := p.enter(t.pos); err != nil {
		return jnode{}, err
	}
	defer func() { p.depth-- }()
	n := jnode{kind: jnFor, pos: t.pos}
	var a, b string
	i := 0
	target := func() (string, error) {
		if i >= len(rest) || rest[i].kind != ekName || reserved(rest[i].s) {
			return "", errorAt(p.src, rest[min(i, len(rest)-1)].pos, "expected a loop variable name")
		}
		if strings.HasPrefix(rest[i].s, "__") {
			return "", errorAt(p.src, rest[i].pos, "names starting with __ are not allowed")
		}
		i++
		return rest[i-1].s, nil
	}
	var err error
	if a, err = target(); err != nil {
		return n, err
	}
	if rest[i].kind == ekOp && rest[i].s == "," {
		i++
		if b, err = target(); err != nil {
			return n, err
		}
		n.two = true
	}
	if !(rest[i].kind == ekName && rest[i].s == "in") {
		return n, errorAt(p.src, rest[i].pos, "expected `in` in {%% for %%}")
	}
	i++
	it := rest[i:]
	// `.items()` at the end of the iterable: iterate key/value pairs.
	if k := len(it) - 5; k >= 1 && it[k].isOp(".") && it[k+1].kind == ekName && it[k+1].s == "items" && it[k+2].isOp("(") && it[k+3].isOp(")") {
		n.items = true
		it = append(it[:k:k], it[k+4])
	}
	if n.two && !n.items {
		return n, errorAt(p.src, rest[0].pos, "two loop variables need `in <map>.items()`")
	}
	if n.iter, err = (&exprParser{p: p, toks: it}).parseAll(); err != nil {
		return n, err
	}
	n.slot = len(p.scopes)
	if n.slot+1 > p.maxLoops {
		p.maxLoops = n.slot + 1
	}
	p.scopes = append(p.scopes, jscope{a: a, b: b, slot: n.slot, roots: p.roots(n.iter, nil)})
	body, end, err := p.body()
	if err != nil {
		return n, err
	}
	if end != nil && end.head == "else" {
		if err := noArgs(p.src, end); err != nil {
			return n, err
		}
		p.scopes = p.scopes[:len(p.scopes)-1]
		n.elseBody, end, err = p.body()
		if err != nil {
			return n, err
		}
	} else {
		p.scopes = p.scopes[:len(p.scopes)-1]
	}
	n.body = body
	if end == nil {
		return n, errorAt(p.src, t.pos, "unclosed {%% for %%}: missing {%% endfor %%}")
	}
	if end.head != "endfor" {
		return n, errorAt(p.src, end.pos, "unexpected {%% %s %%} inside {%% for %%}", end.head)
	}
	return n, noArgs(p.src, end)
}

// roots collects the inputs an expression's value may derive from (through loop variables too).
func (p *jparser) roots(e *jexpr, acc []string) []string {
	if e == nil {
		return acc
	}
	add := func(names ...string) {
		for _, nm := range names {
			found := false
			for _, x := range acc {
				if x == nm {
					found = true
					break
				}
			}
			if !found {
				acc = append(acc, nm)
			}
		}
	}
	switch e.op {
	case opVar:
		add(e.name)
	case opLoopVar, opLoop, opLoopField:
		if e.op == opLoopVar {
			add(p.scopes[e.slot].roots...)
		}
	}
	acc = p.roots(e.x, acc)
	acc = p.roots(e.y, acc)
	for _, a := range e.args {
		acc = p.roots(a, acc)
	}
	return acc
}
