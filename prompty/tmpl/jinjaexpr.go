package tmpl

import (
	"strconv"
	"strings"
)

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
