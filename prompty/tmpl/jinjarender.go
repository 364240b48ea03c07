package tmpl

import (
	"errors"
	"slices"
	"strings"
)

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
