package tmpl

import (
	"errors"
	"slices"
	"strconv"
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

// --- expression lexer ---------------------------------------------------------

type ekind uint8

const (
	ekEOF ekind = iota
	ekName
	ekString
	ekNumber
	ekOp
)

type etok struct {
	kind ekind
	s    string
	num  any
	pos  int
}

func (t etok) isOp(s string) bool { return t.kind == ekOp && t.s == s }

func reserved(name string) bool {
	switch name {
	case "and", "or", "not", "in", "is", "if", "else", "true", "false", "none", "null", "True", "False", "None":
		return true
	}
	return false
}

// lex splits a tag's inner source into expression tokens, ending with an EOF token.
func (p *jparser) lex(t *jtok) ([]etok, error) {
	s, base := t.text, t.inner
	var toks []etok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			start := i
			var b strings.Builder
			i++
			for i < len(s) && s[i] != c {
				if s[i] == '\\' && i+1 < len(s) {
					switch s[i+1] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case 'r':
						b.WriteByte('\r')
					case '\\', '\'', '"':
						b.WriteByte(s[i+1])
					default:
						b.WriteByte('\\')
						b.WriteByte(s[i+1])
					}
					i += 2
					continue
				}
				b.WriteByte(s[i])
				i++
			}
			if i >= len(s) {
				return nil, errorAt(p.src, base+start, "unterminated string")
			}
			i++
			toks = append(toks, etok{kind: ekString, s: b.String(), pos: base + start})
		case isDigit(c) || (c == '-' && i+1 < len(s) && isDigit(s[i+1])):
			start := i
			i++
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			isFloat := false
			if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
				isFloat = true
				i++
				for i < len(s) && isDigit(s[i]) {
					i++
				}
			}
			lit := s[start:i]
			var v any
			if isFloat {
				f, err := strconv.ParseFloat(lit, 64)
				if err != nil {
					return nil, errorAt(p.src, base+start, "bad number %q", lit)
				}
				v = f
			} else {
				n, err := strconv.ParseInt(lit, 10, 64)
				if err != nil {
					return nil, errorAt(p.src, base+start, "bad number %q", lit)
				}
				v = n
			}
			toks = append(toks, etok{kind: ekNumber, s: lit, num: v, pos: base + start})
		case c == '_' || (c|0x20) >= 'a' && (c|0x20) <= 'z':
			start := i
			for i < len(s) && (s[i] == '_' || isDigit(s[i]) || (s[i]|0x20) >= 'a' && (s[i]|0x20) <= 'z') {
				i++
			}
			toks = append(toks, etok{kind: ekName, s: s[start:i], pos: base + start})
		default:
			if i+1 < len(s) {
				switch s[i : i+2] {
				case "==", "!=", "<=", ">=":
					toks = append(toks, etok{kind: ekOp, s: s[i : i+2], pos: base + i})
					i += 2
					continue
				}
			}
			switch c {
			case '(', ')', '[', ']', '.', ',', '|', '<', '>':
				toks = append(toks, etok{kind: ekOp, s: s[i : i+1], pos: base + i})
				i++
				continue
			case '+', '-', '*', '/', '%', '~':
				return nil, errorAt(p.src, base+i, "operator %q is not supported (no arithmetic or concatenation in the Prompty Jinja subset)", c)
			case '=':
				return nil, errorAt(p.src, base+i, "assignment is not supported")
			}
			r := []rune(s[i:])[0]
			return nil, errorAt(p.src, base+i, "unexpected character %q", r)
		}
	}
	toks = append(toks, etok{kind: ekEOF, pos: base + len(s)})
	return toks, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// --- expression parser --------------------------------------------------------

type exprParser struct {
	p     *jparser
	toks  []etok
	i     int
	depth int
}

func (ep *exprParser) peek() etok { return ep.toks[ep.i] }

func (ep *exprParser) isName(s string) bool {
	t := ep.toks[ep.i]
	return t.kind == ekName && t.s == s
}

func (ep *exprParser) err(t etok, format string, args ...any) error {
	return errorAt(ep.p.src, t.pos, format, args...)
}

func (ep *exprParser) parseAll() (*jexpr, error) {
	if ep.toks[0].kind == ekEOF {
		return nil, ep.err(ep.toks[0], "missing expression")
	}
	e, err := ep.or()
	if err != nil {
		return nil, err
	}
	if t := ep.peek(); t.kind != ekEOF {
		return nil, ep.err(t, "unexpected %s", describe(t))
	}
	return e, nil
}

func describe(t etok) string {
	switch t.kind {
	case ekEOF:
		return "end of expression"
	case ekString:
		return "string " + strconv.Quote(t.s)
	}
	return "`" + t.s + "`"
}

func (ep *exprParser) nest(t etok) error {
	ep.depth++
	if ep.depth > maxNesting {
		return ep.err(t, "expression nested deeper than %d", maxNesting)
	}
	return nil
}

func (ep *exprParser) or() (*jexpr, error) {
	if err := ep.nest(ep.peek()); err != nil {
		return nil, err
	}
	defer func() { ep.depth-- }()
	l, err := ep.and()
	if err != nil {
		return nil, err
	}
	for ep.isName("or") {
		t := ep.peek()
		ep.i++
		r, err := ep.and()
		if err != nil {
			return nil, err
		}
		l = &jexpr{op: opOr, pos: t.pos, x: l, y: r}
	}
	return l, nil
}

func (ep *exprParser) and() (*jexpr, error) {
	l, err := ep.not()
	if err != nil {
		return nil, err
	}
	for ep.isName("and") {
		t := ep.peek()
		ep.i++
		r, err := ep.not()
		if err != nil {
			return nil, err
		}
		l = &jexpr{op: opAnd, pos: t.pos, x: l, y: r}
	}
	return l, nil
}

func (ep *exprParser) not() (*jexpr, error) {
	if ep.isName("not") {
		t := ep.peek()
		if err := ep.nest(t); err != nil {
			return nil, err
		}
		defer func() { ep.depth-- }()
		ep.i++
		x, err := ep.not()
		if err != nil {
			return nil, err
		}
		return &jexpr{op: opNot, pos: t.pos, x: x}, nil
	}
	return ep.comparison()
}

func (ep *exprParser) comparison() (*jexpr, error) {
	l, err := ep.filtered()
	if err != nil {
		return nil, err
	}
	t := ep.peek()
	var op jop
	switch {
	case t.kind == ekOp && t.s == "==":
		op = opEq
	case t.kind == ekOp && t.s == "!=":
		op = opNe
	case t.kind == ekOp && t.s == "<":
		op = opLt
	case t.kind == ekOp && t.s == ">":
		op = opGt
	case t.kind == ekOp && t.s == "<=":
		op = opLe
	case t.kind == ekOp && t.s == ">=":
		op = opGe
	case t.kind == ekName && t.s == "in":
		op = opIn
	case t.kind == ekName && t.s == "not" && ep.toks[ep.i+1].kind == ekName && ep.toks[ep.i+1].s == "in":
		op = opNotIn
		ep.i++
	case t.kind == ekName && t.s == "is":
		return ep.isTest(l)
	default:
		return l, nil
	}
	ep.i++
	r, err := ep.filtered()
	if err != nil {
		return nil, err
	}
	return &jexpr{op: op, pos: t.pos, x: l, y: r}, nil
}

// isTest parses the rest of `x is [not] defined|undefined|none`.
func (ep *exprParser) isTest(x *jexpr) (*jexpr, error) {
	is := ep.peek()
	ep.i++
	neg := false
	if t := ep.peek(); t.kind == ekName && t.s == "not" {
		neg = true
		ep.i++
	}
	t := ep.peek()
	var e *jexpr
	switch {
	case t.kind == ekName && t.s == "defined":
		e = &jexpr{op: opDefined, pos: is.pos, x: x}
	case t.kind == ekName && t.s == "undefined":
		e = &jexpr{op: opNot, pos: is.pos, x: &jexpr{op: opDefined, pos: is.pos, x: x}}
	case t.kind == ekName && (t.s == "none" || t.s == "None"):
		e = &jexpr{op: opIsNone, pos: is.pos, x: x}
	default:
		return nil, ep.err(t, "unsupported test after `is` (supported: defined, undefined, none)")
	}
	ep.i++
	if neg {
		e = &jexpr{op: opNot, pos: is.pos, x: e}
	}
	return e, nil
}

func (ep *exprParser) filtered() (*jexpr, error) {
	x, err := ep.primary()
	if err != nil {
		return nil, err
	}
	for ep.peek().isOp("|") {
		ep.i++
		nt := ep.peek()
		if nt.kind != ekName {
			return nil, ep.err(nt, "expected a filter name after |")
		}
		ep.i++
		e := &jexpr{op: opFilter, pos: nt.pos, x: x, name: nt.s}
		minArgs, maxArgs := 0, 0
		switch nt.s {
		case "default", "d":
			e.filter, maxArgs = fDefault, 2
		case "upper":
			e.filter = fUpper
		case "lower":
			e.filter = fLower
		case "trim":
			e.filter = fTrim
		case "join":
			e.filter, maxArgs = fJoin, 1
		case "length", "count":
			e.filter = fLength
		case "replace":
			e.filter, minArgs, maxArgs = fReplace, 2, 3
		default:
			return nil, ep.err(nt, "unknown filter %q (supported: default, upper, lower, trim, join, length, replace)", nt.s)
		}
		if ep.peek().isOp("(") {
			ep.i++
			if !ep.peek().isOp(")") {
				for {
					a, err := ep.or()
					if err != nil {
						return nil, err
					}
					e.args = append(e.args, a)
					if !ep.peek().isOp(",") {
						break
					}
					ep.i++
				}
			}
			if t := ep.peek(); !t.isOp(")") {
				return nil, ep.err(t, "expected ) after filter arguments, found %s", describe(t))
			}
			ep.i++
		}
		if len(e.args) < minArgs || len(e.args) > maxArgs {
			return nil, ep.err(nt, "filter %s takes %d to %d arguments, got %d", nt.s, minArgs, maxArgs, len(e.args))
		}
		x = e
	}
	return x, nil
}

func (ep *exprParser) primary() (*jexpr, error) {
	t := ep.peek()
	switch t.kind {
	case ekEOF:
		return nil, ep.err(t, "unexpected end of expression")
	case ekString:
		ep.i++
		return ep.postfix(&jexpr{op: opLit, pos: t.pos, lit: t.s})
	case ekNumber:
		ep.i++
		return &jexpr{op: opLit, pos: t.pos, lit: t.num}, nil
	case ekOp:
		if t.s == "(" {
			ep.i++
			e, err := ep.or()
			if err != nil {
				return nil, err
			}
			if c := ep.peek(); !c.isOp(")") {
				return nil, ep.err(c, "expected ), found %s", describe(c))
			}
			ep.i++
			return ep.postfix(e)
		}
		if t.s == "[" {
			return nil, ep.err(t, "list literals are not supported")
		}
		return nil, ep.err(t, "unexpected %s", describe(t))
	}
	ep.i++
	switch t.s {
	case "true", "True":
		return &jexpr{op: opLit, pos: t.pos, lit: true}, nil
	case "false", "False":
		return &jexpr{op: opLit, pos: t.pos, lit: false}, nil
	case "none", "None", "null":
		return &jexpr{op: opLit, pos: t.pos, lit: nil}, nil
	}
	if reserved(t.s) {
		return nil, ep.err(t, "unexpected `%s`", t.s)
	}
	if strings.HasPrefix(t.s, "__") {
		return nil, ep.err(t, "names starting with __ are not allowed")
	}
	e := &jexpr{op: opVar, pos: t.pos, name: t.s}
	for k := len(ep.p.scopes) - 1; k >= 0; k-- {
		sc := ep.p.scopes[k]
		if sc.a == t.s || sc.b == t.s {
			e.op, e.slot = opLoopVar, sc.slot
			if sc.b == t.s {
				e.which = 1
			}
			break
		}
		if t.s == "loop" {
			e.op, e.slot = opLoop, sc.slot
			break
		}
	}
	if e.op == opLoop && ep.peek().isOp(".") && ep.toks[ep.i+1].kind == ekName {
		nt := ep.toks[ep.i+1]
		switch nt.s {
		case "index", "index0", "revindex", "revindex0", "first", "last", "length":
			ep.i += 2
			e = &jexpr{op: opLoopField, pos: nt.pos, slot: e.slot, name: nt.s}
		default:
			return nil, ep.err(nt, "unsupported loop attribute %q", nt.s)
		}
	}
	return ep.postfix(e)
}

// postfix parses `.name`, `.0` and `[expr]` accessors; calls are rejected.
func (ep *exprParser) postfix(e *jexpr) (*jexpr, error) {
	for {
		t := ep.peek()
		switch {
		case t.isOp("."):
			ep.i++
			nt := ep.peek()
			switch {
			case nt.kind == ekName:
				if strings.HasPrefix(nt.s, "__") {
					return nil, ep.err(nt, "attributes starting with __ are not allowed")
				}
			case nt.kind == ekNumber && !strings.ContainsAny(nt.s, ".-"):
			default:
				return nil, ep.err(nt, "expected an attribute name after .")
			}
			ep.i++
			e = &jexpr{op: opAttr, pos: nt.pos, x: e, name: nt.s}
		case t.isOp("["):
			if err := ep.nest(t); err != nil {
				return nil, err
			}
			ep.i++
			k, err := ep.or()
			ep.depth--
			if err != nil {
				return nil, err
			}
			if c := ep.peek(); !c.isOp("]") {
				if c.kind == ekOp && c.s == ":" {
					return nil, ep.err(c, "slices are not supported")
				}
				return nil, ep.err(c, "expected ], found %s", describe(c))
			}
			ep.i++
			e = &jexpr{op: opIndex, pos: t.pos, x: e, y: k}
		case t.isOp("("):
			return nil, ep.err(t, "calls are not supported")
		default:
			return e, nil
		}
	}
}

// --- rendering ------------------------------------------------------------------

type jinjaTemplate struct {
	src   string
	nodes []jnode
	loops int
	outs  int
}

type jframe struct {
	a, b any
	i, n int
}

type jrun struct {
	o      out
	src    *jinjaTemplate
	inputs map[string]any
	strict map[string]bool
	frames []jframe
}

// Render evaluates the template; see Template.
func (t *jinjaTemplate) Render(inputs map[string]any, strict map[string]bool) ([]Segment, error) {
	r := jrun{src: t, inputs: inputs, strict: strict}
	r.o.segs = make([]Segment, 0, 2*t.outs+1)
	if t.loops > 0 {
		r.frames = make([]jframe, t.loops)
	}
	if err := r.nodes(t.nodes); err != nil {
		return nil, err
	}
	return r.o.result(), nil
}

func (t *jinjaTemplate) renderText(inputs map[string]any) (string, error) {
	r := jrun{src: t, inputs: inputs}
	r.o.plain = true
	if t.loops > 0 {
		r.frames = make([]jframe, t.loops)
	}
	if err := r.nodes(t.nodes); err != nil {
		return "", err
	}
	return string(r.o.buf), nil
}

func (r *jrun) nodes(ns []jnode) error {
	for k := range ns {
		n := &ns[k]
		if err := r.o.step(); err != nil {
			return err
		}
		switch n.kind {
		case jnText:
			if err := r.o.literal(n.text); err != nil {
				return err
			}
		case jnOut:
			if err := r.output(n); err != nil {
				return err
			}
		case jnIf:
			done := false
			for i, c := range n.conds {
				v, err := r.eval(c)
				if err != nil {
					return r.positioned(c.pos, err)
				}
				if truthy(v) {
					if err := r.nodes(n.bodies[i]); err != nil {
						return err
					}
					done = true
					break
				}
			}
			if !done && n.elseBody != nil {
				if err := r.nodes(n.elseBody); err != nil {
					return err
				}
			}
		case jnFor:
			if err := r.loop(n); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *jrun) output(n *jnode) error {
	v, err := r.eval(n.expr)
	if err != nil {
		return r.positioned(n.pos, err)
	}
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
		return r.positioned(n.pos, err)
	}
	strict := false
	if r.strict != nil {
		for _, root := range n.roots {
			if r.strict[root] {
				strict = true
				if s != "" && ForgesRoleMarker(s) {
					return &StrictError{Input: root}
				}
				break
			}
		}
	}
	return r.o.interp(s, n.source, strict)
}

func (r *jrun) positioned(pos int, err error) error {
	var le limitError
	if errors.As(err, &le) {
		return err
	}
	if errors.Is(err, errPlaceholderUse) {
		return errorAt(r.src.src, pos, "a thread input can only be rendered on its own ({{ name }}), not through a filter or inside another value")
	}
	return errorAt(r.src.src, pos, "%v", err)
}

func (r *jrun) loop(n *jnode) error {
	v, err := r.eval(n.iter)
	if err != nil {
		return r.positioned(n.pos, err)
	}
	// A loop over a thread input (the chat-history idiom `{% for item in chat_history %}
	// {{item.role}}:\n{{item.content}}{% endfor %}`) is the thread placeholder: the history's
	// messages go there with their stored roles, and the body is not rendered, so no role ever
	// comes from an interpolated value.
	if name, ok := threadName(v); ok {
		r.o.loopPlaceholder(name)
		return nil
	}
	s := makeSeq(v)
	if s.n == 0 {
		if n.elseBody != nil {
			return r.nodes(n.elseBody)
		}
		return nil
	}
	f := &r.frames[n.slot]
	saved := *f
	for i := 0; i < s.n; i++ {
		if err := r.o.step(); err != nil {
			return err
		}
		f.i, f.n = i, s.n
		k := s.item(i)
		switch {
		case n.items && n.two:
			f.a, f.b = k, s.value(i)
		case n.items:
			f.a = []any{k, s.value(i)}
		default:
			f.a = k
		}
		if err := r.nodes(n.body); err != nil {
			return err
		}
	}
	*f = saved
	return nil
}

// seq is an iterable value: a list, a map's keys (Object order or sorted) or a string's characters.
type seq struct {
	list []any
	strs []string
	obj  any
	n    int
}

func makeSeq(v any) seq {
	switch x := v.(type) {
	case []any:
		return seq{list: x, n: len(x)}
	case []string:
		return seq{strs: x, n: len(x)}
	case string:
		chars := make([]string, 0, len(x))
		for _, c := range x {
			chars = append(chars, string(c))
		}
		return seq{strs: chars, n: len(chars)}
	case nil, undefined:
		return seq{}
	}
	if keys, ok := keysOf(v); ok {
		return seq{strs: keys, obj: v, n: len(keys)}
	}
	if l, ok := listOf(v); ok {
		return seq{list: l, n: len(l)}
	}
	return seq{}
}

func (s *seq) item(i int) any {
	if s.list != nil {
		return s.list[i]
	}
	return s.strs[i]
}

// value is the map value for the i-th key (`.items()`); undefined for lists.
func (s *seq) value(i int) any {
	if s.obj == nil {
		return undefined{}
	}
	v, _ := lookupKey(s.obj, s.strs[i])
	return v
}

func (r *jrun) eval(e *jexpr) (any, error) {
	switch e.op {
	case opLit:
		return e.lit, nil
	case opVar:
		if v, ok := r.inputs[e.name]; ok {
			return v, nil
		}
		return undefined{}, nil
	case opLoopVar:
		if e.which == 1 {
			return r.frames[e.slot].b, nil
		}
		return r.frames[e.slot].a, nil
	case opLoopField:
		f := &r.frames[e.slot]
		switch e.name {
		case "index":
			return f.i + 1, nil
		case "index0":
			return f.i, nil
		case "revindex":
			return f.n - f.i, nil
		case "revindex0":
			return f.n - f.i - 1, nil
		case "first":
			return f.i == 0, nil
		case "last":
			return f.i == f.n-1, nil
		case "length":
			return f.n, nil
		}
		return undefined{}, nil
	case opLoop:
		f := &r.frames[e.slot]
		return map[string]any{"index": f.i + 1, "index0": f.i, "revindex": f.n - f.i, "revindex0": f.n - f.i - 1,
			"first": f.i == 0, "last": f.i == f.n-1, "length": f.n}, nil
	case opAttr:
		x, err := r.eval(e.x)
		if err != nil {
			return nil, err
		}
		return attr(x, e.name), nil
	case opIndex:
		x, err := r.eval(e.x)
		if err != nil {
			return nil, err
		}
		k, err := r.eval(e.y)
		if err != nil {
			return nil, err
		}
		return index(x, k), nil
	case opFilter:
		return r.filter(e)
	case opNot:
		x, err := r.eval(e.x)
		if err != nil {
			return nil, err
		}
		return !truthy(x), nil
	case opDefined, opIsNone:
		x, err := r.eval(e.x)
		if err != nil {
			return nil, err
		}
		if _, undef := x.(undefined); e.op == opDefined {
			return !undef, nil
		}
		return x == nil, nil
	case opAnd, opOr:
		x, err := r.eval(e.x)
		if err != nil {
			return nil, err
		}
		if truthy(x) == (e.op == opOr) {
			return x, nil
		}
		return r.eval(e.y)
	}
	x, err := r.eval(e.x)
	if err != nil {
		return nil, err
	}
	y, err := r.eval(e.y)
	if err != nil {
		return nil, err
	}
	switch e.op {
	case opEq:
		return equal(x, y), nil
	case opNe:
		return !equal(x, y), nil
	case opIn:
		return contains(x, y), nil
	case opNotIn:
		return !contains(x, y), nil
	}
	c, ok := compare(x, y)
	if !ok {
		return false, nil
	}
	switch e.op {
	case opLt:
		return c < 0, nil
	case opGt:
		return c > 0, nil
	case opLe:
		return c <= 0, nil
	default:
		return c >= 0, nil
	}
}

func (r *jrun) filter(e *jexpr) (any, error) {
	v, err := r.eval(e.x)
	if err != nil {
		return nil, err
	}
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if args[i], err = r.eval(a); err != nil {
			return nil, err
		}
	}
	switch e.filter {
	case fDefault:
		useDefault := v == nil
		if _, ok := v.(undefined); ok {
			useDefault = true
		}
		if len(args) > 1 && truthy(args[1]) && !truthy(v) {
			useDefault = true
		}
		if !useDefault {
			return v, nil
		}
		if len(args) == 0 {
			return "", nil
		}
		return args[0], nil
	case fLength:
		return length(v), nil
	case fJoin:
		sep := ""
		if len(args) > 0 {
			if sep, err = text(args[0]); err != nil {
				return nil, err
			}
		}
		l, ok := listOf(v)
		if !ok {
			return "", nil
		}
		var b strings.Builder
		for i, x := range l {
			if i > 0 {
				b.WriteString(sep)
			}
			s, err := text(x)
			if err != nil {
				return nil, err
			}
			b.WriteString(s)
			if b.Len() > maxOutput {
				return nil, limitError{"join result too large"}
			}
		}
		return b.String(), nil
	}
	s, err := text(v)
	if err != nil {
		return nil, err
	}
	switch e.filter {
	case fUpper:
		return strings.ToUpper(s), nil
	case fLower:
		return strings.ToLower(s), nil
	case fTrim:
		return strings.TrimSpace(s), nil
	}
	// fReplace
	old, err := text(args[0])
	if err != nil {
		return nil, err
	}
	repl, err := text(args[1])
	if err != nil {
		return nil, err
	}
	count := -1
	if len(args) > 2 {
		if c, ok := toInt(args[2]); ok {
			count = c
		}
	}
	if n := strings.Count(s, old); len(repl) > len(old) && n > 0 {
		if count >= 0 && n > count {
			n = count
		}
		if (maxOutput-len(s))/n < len(repl)-len(old) {
			return nil, limitError{"replace result too large"}
		}
	}
	return strings.Replace(s, old, repl, count), nil
}

// RoleLoops returns the names of the inputs that t loops over writing each item's role — the
// chat-history idiom `{% for m in past_messages %}{{m.role}}:\n{{m.content}}{% endfor %}` — in
// template order, each once. For mustache it is the section form
// `{{#past_messages}}{{role}}:\n{{content}}{{/past_messages}}`.
func RoleLoops(t Template) []string {
	if mt, ok := t.(*mustacheTemplate); ok {
		return mustacheRoleLoops(mt.nodes, nil)
	}
	jt, ok := t.(*jinjaTemplate)
	if !ok {
		return nil
	}
	var names []string
	var walk func(nodes []jnode)
	walk = func(nodes []jnode) {
		for i := range nodes {
			n := &nodes[i]
			switch n.kind {
			case jnIf:
				for _, b := range n.bodies {
					walk(b)
				}
				walk(n.elseBody)
			case jnFor:
				if n.iter.op == opVar && !n.two && writesRole(n.body, n.slot) && !slices.Contains(names, n.iter.name) {
					names = append(names, n.iter.name)
				}
				walk(n.body)
			}
		}
	}
	walk(jt.nodes)
	return names
}

// writesRole reports whether body outputs the role of loop slot's item (`item.role`, `item["role"]`).
func writesRole(body []jnode, slot int) bool {
	for i := range body {
		n := &body[i]
		switch n.kind {
		case jnOut:
			e := n.expr
			isItem := e.x != nil && e.x.op == opLoopVar && e.x.slot == slot && e.x.which == 0
			if isItem && ((e.op == opAttr && e.name == "role") || (e.op == opIndex && e.y != nil && e.y.op == opLit && e.y.lit == "role")) {
				return true
			}
		case jnIf:
			for _, b := range n.bodies {
				if writesRole(b, slot) {
					return true
				}
			}
			if writesRole(n.elseBody, slot) {
				return true
			}
		}
	}
	return false
}
