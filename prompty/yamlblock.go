package prompty

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	weft "github.com/weft-agents/weft"
)

// tokPrefix starts the stand-in for an interp value while the structure of a YAML body is decided
// from template text alone.
const tokPrefix = "__weft_v"

// yamlValue is one interp value inside a YAML body.
type yamlValue struct {
	text string
	src  string
	pos  int
}

// yamlBlock decodes the YAML body [s, e). Its structure comes from template text
// only: every interp value is first replaced by a plain token, and the document decoded that way
// must match the real one with each value lying inside one scalar. A value with a newline, or one
// that changes the structure, is the error `unsafe value for "x" in YAML block`.
func (p *parser) yamlBlock(s, e int, what string) (any, error) {
	b := p.buf
	var vals []yamlValue
	var tok []byte
	for i := s; i < e; {
		if p.lit(i) {
			j := i
			for j < e && p.lit(j) {
				j++
			}
			tok = append(tok, b[i:j]...)
			i = j
			continue
		}
		sp := p.spans[p.owner[i]]
		end := min(sp.end, e)
		if containsByte(b[i:end], '\n') {
			return nil, p.errAt(i, fmt.Sprintf("unsafe value for %q in YAML block", sp.src), nil)
		}
		tok = append(tok, tokPrefix...)
		tok = strconv.AppendInt(tok, int64(len(vals)), 10)
		tok = append(tok, '_')
		vals = append(vals, yamlValue{text: string(b[i:end]), src: sp.src, pos: i})
		i = end
	}
	if len(vals) == 0 {
		v, yerr := decodeYAMLBlock(b[s:e])
		if yerr != nil {
			return nil, p.yamlErr(s, what, yerr)
		}
		return v, nil
	}
	tv, yerr := decodeYAMLBlock(tok)
	if yerr != nil {
		return nil, p.yamlErr(s, what, yerr)
	}
	dv, derr := decodeYAMLBlock(b[s:e])
	y := &yamlCheck{vals: vals, bad: -1}
	if derr != nil {
		return nil, p.unsafeYAML(y.blameLine(p, s, derr))
	}
	out, ok := y.merge(tv, dv)
	if !ok {
		i := y.bad
		if i < 0 {
			i = 0
		}
		return nil, p.unsafeYAML(vals[i])
	}
	return out, nil
}

func (p *parser) unsafeYAML(v yamlValue) error {
	return p.errAt(v.pos, fmt.Sprintf("unsafe value for %q in YAML block", v.src), nil)
}

// yamlErr reports a YAML error of the body starting at s, at its file line.
func (p *parser) yamlErr(s int, what string, yerr *yamlError) error {
	line, _ := p.lineOf(s)
	return &Error{File: p.opt.File, Line: line + max(yerr.line, 1) - 1, Col: yerr.col,
		Msg: fmt.Sprintf("invalid YAML in %s: %s", what, yerr.msg), Err: yerr.err}
}

// yamlError is a YAML decoding error with its position inside the decoded text.
type yamlError struct {
	line, col int
	msg       string
	err       error
}

// decodeYAMLBlock decodes YAML into plain Go values, never panicking.
func decodeYAMLBlock(data []byte) (v any, yerr *yamlError) {
	defer func() {
		if r := recover(); r != nil {
			v, yerr = nil, &yamlError{msg: fmt.Sprint("YAML decoder failed: ", r)}
		}
	}()
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, newYAMLError(err)
	}
	budget := maxYAMLNodes
	v, err := normalize(v, &budget)
	if err != nil {
		return nil, &yamlError{msg: err.Error(), err: err}
	}
	return v, nil
}

func newYAMLError(err error) *yamlError {
	ye := &yamlError{msg: err.Error(), err: err}
	var ge yaml.Error
	if errors.As(err, &ge) {
		ye.msg = ge.GetMessage()
		if tk := ge.GetToken(); tk != nil && tk.Position != nil {
			ye.line, ye.col = tk.Position.Line, tk.Position.Column
		}
	}
	return ye
}

// yamlCheck matches a token-structured document against the real one.
type yamlCheck struct {
	vals []yamlValue
	bad  int
}

// blameLine picks the value on the line of a YAML error in the real document.
func (y *yamlCheck) blameLine(p *parser, s int, yerr *yamlError) yamlValue {
	line0, _ := p.lineOf(s)
	for _, v := range y.vals {
		if l, _ := p.lineOf(v.pos); l == line0+yerr.line-1 {
			return v
		}
	}
	return y.vals[0]
}

// tokenAt returns the index of the token starting at s[i:] and its length, or -1.
func (y *yamlCheck) tokenAt(s string, i int) (idx, n int) {
	if !strings.HasPrefix(s[i:], tokPrefix) {
		return -1, 0
	}
	j := i + len(tokPrefix)
	k := j
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k == j || k >= len(s) || s[k] != '_' {
		return -1, 0
	}
	v, err := strconv.Atoi(s[j:k])
	if err != nil || v >= len(y.vals) {
		return -1, 0
	}
	return v, k + 1 - i
}

// subst replaces the tokens in s by their values; first is the first token's index (-1 if none).
func (y *yamlCheck) subst(s string) (out string, first int) {
	first = -1
	if !strings.Contains(s, tokPrefix) {
		return s, -1
	}
	var sb strings.Builder
	for i := 0; i < len(s); {
		if idx, n := y.tokenAt(s, i); idx >= 0 {
			if first < 0 {
				first = idx
			}
			sb.WriteString(y.vals[idx].text)
			i += n
			continue
		}
		sb.WriteByte(s[i])
		i++
	}
	return sb.String(), first
}

// firstToken finds the first token in a token-structured value (-1 if none).
func (y *yamlCheck) firstToken(v any) int {
	switch t := v.(type) {
	case string:
		_, f := y.subst(t)
		return f
	case map[string]any:
		for k, x := range t {
			if _, f := y.subst(k); f >= 0 {
				return f
			}
			if f := y.firstToken(x); f >= 0 {
				return f
			}
		}
	case []any:
		for _, x := range t {
			if f := y.firstToken(x); f >= 0 {
				return f
			}
		}
	}
	return -1
}

func (y *yamlCheck) fail(t any) (any, bool) {
	if y.bad < 0 {
		y.bad = y.firstToken(t)
	}
	return nil, false
}

// merge checks the real value d against the token-structured value t and returns the real value.
func (y *yamlCheck) merge(t, d any) (any, bool) {
	switch tv := t.(type) {
	case map[string]any:
		dm, ok := d.(map[string]any)
		if !ok || len(dm) != len(tv) {
			return y.fail(t)
		}
		out := make(map[string]any, len(tv))
		for k, v := range tv {
			dk, f := y.subst(k)
			dval, ok := dm[dk]
			if !ok {
				if f >= 0 {
					y.bad = f
				}
				return y.fail(v)
			}
			mv, ok := y.merge(v, dval)
			if !ok {
				return nil, false
			}
			out[dk] = mv
		}
		return out, true
	case []any:
		dl, ok := d.([]any)
		if !ok || len(dl) != len(tv) {
			return y.fail(t)
		}
		out := make([]any, len(tv))
		for i := range tv {
			mv, ok := y.merge(tv[i], dl[i])
			if !ok {
				return nil, false
			}
			out[i] = mv
		}
		return out, true
	case string:
		if idx, n := y.tokenAt(tv, 0); idx >= 0 && n == len(tv) {
			text := y.vals[idx].text
			switch dv := d.(type) {
			case map[string]any, []any:
			case string:
				if dv == text || dv == strings.TrimSpace(text) {
					return dv, true
				}
			default:
				if !strings.Contains(text, "#") {
					return dv, true
				}
			}
			y.bad = idx
			return nil, false
		}
		exp, f := y.subst(tv)
		if ds, ok := d.(string); ok && ds == exp {
			return ds, true
		}
		if f >= 0 {
			y.bad = f
		}
		return nil, false
	default:
		if scalarEqual(t, d) {
			return d, true
		}
		return nil, false
	}
}

func scalarEqual(a, b any) bool {
	if fa, ok := a.(float64); ok {
		if fb, ok := b.(float64); ok && math.IsNaN(fa) && math.IsNaN(fb) {
			return true
		}
	}
	return reflect.DeepEqual(a, b)
}

// toolsBlock decodes the body's `tools:` block: a YAML list of tool entries; `id` stands for `name`.
func (p *parser) toolsBlock(s, e int) ([]any, error) {
	v, err := p.yamlBlock(s, e, "tools section")
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, p.errAt(s, "tools section must be a YAML list of tool entries", nil)
	}
	for i, t := range list {
		if m, ok := t.(map[string]any); ok {
			if _, has := m["name"]; !has {
				if id, has := m["id"]; has {
					m["name"] = id
					list[i] = m
				}
			}
		}
	}
	return list, nil
}

// toolCallBlock decodes an `assistant[type="tool_call"]:` body: one mapping or a list of
// {id, type: function, function: {name, arguments}}, arguments a mapping or a JSON string.
func (p *parser) toolCallBlock(s, e int) ([]weft.ToolCall, error) {
	v, err := p.yamlBlock(s, e, "tool call")
	if err != nil {
		return nil, err
	}
	var entries []any
	switch t := v.(type) {
	case map[string]any:
		entries = []any{t}
	case []any:
		entries = t
	default:
		return nil, p.errAt(s, "a tool call body must be a YAML mapping or a list of mappings", nil)
	}
	calls := make([]weft.ToolCall, 0, len(entries))
	for i, x := range entries {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, p.errAt(s, fmt.Sprintf("tool call %d must be a mapping", i+1), nil)
		}
		id, _ := m["id"].(string)
		if id == "" {
			if n, ok := m["id"].(int); ok {
				id = strconv.Itoa(n)
			}
		}
		if id == "" {
			return nil, p.errAt(s, fmt.Sprintf("tool call %d needs an id", i+1), nil)
		}
		if t, has := m["type"]; has && t != "function" {
			return nil, p.errAt(s, fmt.Sprintf("tool call %q: type must be \"function\"", id), nil)
		}
		fn, ok := m["function"].(map[string]any)
		if !ok {
			return nil, p.errAt(s, fmt.Sprintf("tool call %q needs a function mapping", id), nil)
		}
		name, _ := fn["name"].(string)
		if name == "" {
			return nil, p.errAt(s, fmt.Sprintf("tool call %q needs function.name", id), nil)
		}
		var args string
		switch a := fn["arguments"].(type) {
		case nil:
			args = "{}"
		case string:
			args = a
		case map[string]any, []any:
			js, err := compactJSON(a)
			if err != nil {
				return nil, p.errAt(s, fmt.Sprintf("tool call %q: arguments: %v", id, err), err)
			}
			args = js
		default:
			return nil, p.errAt(s, fmt.Sprintf("tool call %q: arguments must be a mapping or a JSON string", id), nil)
		}
		calls = append(calls, weft.ToolCall{ID: id, Name: name, Arguments: args})
	}
	return calls, nil
}

// compactJSON encodes v as compact JSON without HTML escaping.
func compactJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// maxYAMLNodes caps the expanded size of a decoded YAML document (aliases can multiply it).
const maxYAMLNodes = 200000

// errTooLarge reports a decoded document over maxYAMLNodes values.
var errTooLarge = errors.New("document too large (aliases expand to more than 200000 values)")

// normalize turns decoded YAML into plain values in place: integers become int (int64 range) and
// keys of any map become strings. budget counts the values visited.
func normalize(v any, budget *int) (any, error) {
	*budget--
	if *budget < 0 {
		return nil, errTooLarge
	}
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			n, err := normalize(x, budget)
			if err != nil {
				return nil, err
			}
			t[k] = n
		}
		return t, nil
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			n, err := normalize(x, budget)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = n
		}
		return m, nil
	case []any:
		for i, x := range t {
			n, err := normalize(x, budget)
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
		return t, nil
	case int64:
		return int(t), nil
	case uint64:
		if t <= math.MaxInt64 {
			return int(t), nil
		}
		return float64(t), nil
	case int:
		return t, nil
	}
	return v, nil
}
