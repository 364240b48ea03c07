package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/jsonstr"
)

const (
	// maxDepth bounds the nesting of a script document (and of alias chains).
	maxDepth = 64
	// maxNodes bounds the nodes visited while converting arguments to JSON, alias expansion included.
	maxNodes = 1 << 20
	// maxErrors bounds the errors reported for one script.
	maxErrors = 100
)

// ParseError is one problem in a script: the file, the line, the entry (0 outside entries), the
// field path and the rule broken.
type ParseError struct {
	// File is the script's name.
	File string
	// Line is the line of the offending node, 0 when unknown.
	Line int
	// Entry is the 1-based index of the entry, 0 outside the responses.
	Entry int
	// EntryLine is the line where the entry starts.
	EntryLine int
	// Path is the field path within the entry or document, e.g. "expect.last_role".
	Path string
	// Message says which rule was broken.
	Message string
}

// Error formats `file:line: model script entry N (line L): path: message`.
func (e *ParseError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Entry > 0 {
		b.WriteString("model script entry " + strconv.Itoa(e.Entry))
		if e.EntryLine > 0 {
			b.WriteString(" (line " + strconv.Itoa(e.EntryLine) + ")")
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// ParseErrors lists every problem found in a script, in document order.
type ParseErrors []*ParseError

// Error joins the problems, one per line.
func (l ParseErrors) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap returns the problems so that errors.As finds a *ParseError.
func (l ParseErrors) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// Load reads and parses the script file at path.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model script: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a script from YAML or JSON: either a list of responses or a map {version: 1,
// options, responses}. name labels messages. Every problem is reported (as ParseErrors) with its
// line and entry.
func Parse(name string, data []byte) (*Script, error) {
	p := &parser{name: name}
	s := p.parse(data)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return s, nil
}

type parser struct {
	name      string
	errs      ParseErrors
	entry     int
	entryLine int
	nodes     int
}

func (p *parser) fail(n *yaml.Node, path, format string, args ...any) {
	if len(p.errs) >= maxErrors {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &ParseError{File: p.name, Line: line, Entry: p.entry, EntryLine: p.entryLine,
		Path: path, Message: fmt.Sprintf(format, args...)})
}

func (p *parser) parse(data []byte) *Script {
	s := &Script{Name: p.name}
	if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
		data = yamlSafeJSON(data)
	}
	var doc yaml.Node
	if err := unmarshal(data, &doc); err != nil {
		msg, line := strings.TrimPrefix(err.Error(), "yaml: "), 0
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if num, text, ok := strings.Cut(rest, ": "); ok {
				if n, err := strconv.Atoi(num); err == nil {
					msg, line = text, n
				}
			}
		}
		p.fail(&yaml.Node{Line: line}, "", "syntax error: %s", msg)
		return s
	}
	if len(doc.Content) == 0 {
		p.fail(nil, "", "file is empty")
		return s
	}
	root := p.resolve(doc.Content[0], "")
	if root == nil {
		return s
	}
	switch root.Kind {
	case yaml.SequenceNode:
		s.Responses = p.responses(root)
	case yaml.MappingNode:
		var sawResponses bool
		for _, kv := range p.mapping(root, "") {
			switch kv.key {
			case "version":
				if v, ok := p.integer(kv.val, "version"); ok && v != 1 {
					p.fail(kv.val, "version", "unsupported version %d (want 1)", v)
				}
			case "options":
				s.Options = p.options(kv.val)
			case "responses":
				sawResponses = true
				if n := p.resolve(kv.val, "responses"); n != nil {
					if n.Kind != yaml.SequenceNode {
						p.fail(n, "responses", "want a list of responses")
					} else {
						s.Responses = p.responses(n)
					}
				}
			default:
				hint := "want version, options or responses"
				if isEntryKey(kv.key) {
					hint += "; a single response still goes in a list"
				}
				p.fail(kv.keyNode, "", "unknown key %q (%s)", kv.key, hint)
			}
		}
		if !sawResponses && len(p.errs) == 0 {
			p.fail(root, "", "responses: missing (want a list of responses)")
		}
	case yaml.ScalarNode:
		if root.ShortTag() == "!!null" {
			p.fail(root, "", "file is empty")
		} else {
			p.fail(root, "", "want a list of responses or a map {version, options, responses}")
		}
	default:
		p.fail(root, "", "want a list of responses or a map {version, options, responses}")
	}
	return s
}

// yamlSafeJSON rewrites what valid JSON may hold that the YAML parser rejects, without moving any
// line: tabs between tokens become spaces, `\/` becomes `/`, and \u escapes of UTF-16 surrogates (a
// pair, as written by encoders that escape non-ASCII text) become the character itself (a lone one
// U+FFFD).
func yamlSafeJSON(data []byte) []byte {
	out := make([]byte, 0, len(data))
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case !inString && c == '\t':
			out = append(out, ' ')
		case c == '"':
			inString = !inString
			out = append(out, c)
		case inString && c == '\\' && i+1 < len(data):
			if data[i+1] == 'u' {
				if r, ok := hex4(data, i+2); ok && utf16.IsSurrogate(r) {
					if r2, ok := hex4(data, i+8); ok && r < 0xdc00 && i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
						if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
							out = utf8.AppendRune(out, pair)
							i += 11
							continue
						}
					}
					out = append(out, `\ufffd`...)
					i += 5
					continue
				}
			}
			if data[i+1] == '/' {
				out = append(out, '/')
			} else {
				out = append(out, c, data[i+1])
			}
			i++
		default:
			out = append(out, c)
		}
	}
	return out
}

// hex4 decodes the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(data[i:i+4]), 16, 32)
	return rune(v), err == nil
}

// unmarshal parses YAML into a node, turning a parser panic into an error.
func unmarshal(data []byte, doc *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return yaml.Unmarshal(data, doc)
}

func (p *parser) options(n *yaml.Node) Options {
	var o Options
	for _, kv := range p.mapping(n, "options") {
		path := "options." + kv.key
		switch kv.key {
		case "strict":
			o.Strict, _ = p.boolean(kv.val, path)
		case "on_exhausted":
			if v, ok := p.str(kv.val, path); ok {
				switch OnExhausted(v) {
				case ExhaustError, ExhaustRepeatLast:
					o.OnExhausted = OnExhausted(v)
				default:
					p.fail(kv.val, path, "invalid value %q (want error or repeat_last)", v)
				}
			}
		case "real_time":
			o.RealTime, _ = p.boolean(kv.val, path)
		case "chunk_size":
			if v, ok := p.integer(kv.val, path); ok {
				if v < 0 || v > math.MaxInt32 {
					p.fail(kv.val, path, "invalid value %d (want 0 or a positive number of runes)", v)
				} else {
					o.ChunkSize = int(v)
				}
			}
		case "chunk_delay":
			if v, ok := p.scalarValue(kv.val, path); ok {
				d, err := weft.ParseDuration(v)
				if err != nil {
					p.fail(kv.val, path, "%s", err.Error())
				} else {
					o.ChunkDelay = d.D()
				}
			}
		default:
			p.fail(kv.keyNode, "options", "unknown key %q (want strict, on_exhausted, real_time, chunk_size or chunk_delay)", kv.key)
		}
	}
	return o
}

func (p *parser) responses(n *yaml.Node) []Entry {
	entries := make([]Entry, 0, len(n.Content))
	for i, c := range n.Content {
		p.entry, p.entryLine = i+1, c.Line
		entries = append(entries, p.entryOf(c))
	}
	p.entry, p.entryLine = 0, 0
	return entries
}

// isEntryKey reports whether k is a key of a response entry.
func isEntryKey(k string) bool {
	switch k {
	case "text", "tool_calls", "reasoning", "error", "usage", "delay", "stall_after", "finish_reason",
		"match", "expect":
		return true
	}
	return false
}

func (p *parser) entryOf(n *yaml.Node) Entry {
	e := Entry{Index: p.entry, Line: n.Line}
	r := p.resolve(n, "")
	if r == nil {
		return e
	}
	if r.Kind != yaml.MappingNode {
		p.fail(r, "", "want a map with text, tool_calls, error, … (got %s)", describe(r))
		return e
	}
	var errNode, textNode, stallNode *yaml.Node
	for _, kv := range p.mapping(r, "") {
		switch kv.key {
		case "text":
			e.Text, _ = p.text(kv.val, "text")
			textNode = kv.keyNode
		case "reasoning":
			e.Reasoning, _ = p.text(kv.val, "reasoning")
			textNode = kv.keyNode
		case "tool_calls":
			e.ToolCalls = p.toolCalls(kv.val)
			textNode = kv.keyNode
		case "error":
			e.Error = p.errorSpec(kv.val)
			errNode = kv.keyNode
		case "usage":
			e.Usage = p.usage(kv.val)
		case "delay":
			if v, ok := p.scalarValue(kv.val, "delay"); ok {
				d, err := weft.ParseDuration(v)
				if err != nil {
					p.fail(kv.val, "delay", "%s", err.Error())
				} else {
					e.Delay = d.D()
				}
			}
		case "stall_after":
			if v, ok := p.integer(kv.val, "stall_after"); ok {
				if v < 0 || v > math.MaxInt32 {
					p.fail(kv.val, "stall_after", "invalid value %d (want a number of chunks ≥ 0)", v)
				} else {
					k := int(v)
					e.StallAfter = &k
				}
			}
			stallNode = kv.keyNode
		case "finish_reason":
			if v, ok := p.str(kv.val, "finish_reason"); ok {
				if v == "" {
					p.fail(kv.val, "finish_reason", "must not be empty")
				}
				e.FinishReason = v
			}
		case "match":
			e.Match = p.match(kv.val)
		case "expect":
			e.Expect = p.expect(kv.val)
		default:
			p.fail(kv.keyNode, "", "unknown key %q (want text, tool_calls, reasoning, error, usage, delay, stall_after, finish_reason, match or expect)", kv.key)
		}
	}
	if errNode != nil && textNode != nil {
		p.fail(textNode, "", "error cannot be combined with text, reasoning or tool_calls (a failed attempt has no reply)")
	}
	if errNode != nil && stallNode != nil {
		p.fail(stallNode, "", "error cannot be combined with stall_after")
	}
	return e
}

func (p *parser) toolCalls(n *yaml.Node) []ToolCallSpec {
	r := p.resolve(n, "tool_calls")
	if r == nil {
		return nil
	}
	if r.ShortTag() == "!!null" {
		return nil
	}
	if r.Kind != yaml.SequenceNode {
		p.fail(r, "tool_calls", "want a list of {name, arguments, id} (got %s)", describe(r))
		return nil
	}
	calls := make([]ToolCallSpec, 0, len(r.Content))
	for i, c := range r.Content {
		path := "tool_calls[" + strconv.Itoa(i) + "]"
		var tc ToolCallSpec
		cr := p.resolve(c, path)
		if cr == nil {
			continue
		}
		if cr.Kind != yaml.MappingNode {
			p.fail(cr, path, "want a map {name, arguments, id} (got %s)", describe(cr))
			continue
		}
		named := false
		for _, kv := range p.mapping(cr, path) {
			switch kv.key {
			case "name":
				if v, ok := p.str(kv.val, path+".name"); ok {
					if v == "" {
						p.fail(kv.val, path+".name", "must not be empty")
					}
					tc.Name, named = v, true
				} else {
					named = true
				}
			case "arguments":
				tc.Arguments = p.arguments(kv.val, path+".arguments")
			case "id":
				if v, ok := p.str(kv.val, path+".id"); ok {
					if v == "" {
						p.fail(kv.val, path+".id", "must not be empty (omit it for call_<k>)")
					}
					tc.ID = v
				}
			default:
				p.fail(kv.keyNode, path, "unknown key %q (want name, arguments or id)", kv.key)
			}
		}
		if !named {
			p.fail(cr, path, "tool call without name")
		}
		calls = append(calls, tc)
	}
	return calls
}

// arguments reads a map (→ compact JSON, keys in file order) or a string (kept verbatim, so that
// scripts can send malformed arguments on purpose).
func (p *parser) arguments(n *yaml.Node, path string) string {
	r := p.resolve(n, path)
	if r == nil {
		return ""
	}
	switch {
	case r.Kind == yaml.MappingNode:
		var b []byte
		b, err := p.appendJSON(b, r, 0)
		if err != "" {
			p.fail(r, path, "%s", err)
			return ""
		}
		return string(b)
	case r.Kind == yaml.ScalarNode && r.ShortTag() == "!!null":
		return ""
	case r.Kind == yaml.ScalarNode && r.ShortTag() == "!!str":
		return r.Value
	}
	p.fail(r, path, "want a map or a JSON string (got %s)", describe(r))
	return ""
}

// appendJSON writes a node as compact JSON; mapping keys keep their order.
func (p *parser) appendJSON(b []byte, n *yaml.Node, depth int) ([]byte, string) {
	p.nodes++
	if p.nodes > maxNodes {
		return b, "arguments are too large (alias expansion?)"
	}
	if depth > maxDepth {
		return b, fmt.Sprintf("arguments are nested deeper than %d levels", maxDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return b, "unresolved alias"
		}
		return p.appendJSON(b, n.Alias, depth+1)
	case yaml.MappingNode:
		b = append(b, '{')
		seen := make(map[string]struct{}, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolveShallow(n.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode {
				return b, "argument keys must be scalars"
			}
			key := k.Value
			if k.ShortTag() == "!!null" {
				key = ""
			}
			if key == "<<" && k.ShortTag() == "!!merge" {
				return b, "merge keys (<<) are not supported"
			}
			if _, dup := seen[key]; dup {
				return b, fmt.Sprintf("key %q is repeated", key)
			}
			seen[key] = struct{}{}
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, key)
			b = append(b, ':')
			var err string
			if b, err = p.appendJSON(b, n.Content[i+1], depth+1); err != "" {
				return b, err
			}
		}
		return append(b, '}'), ""
	case yaml.SequenceNode:
		b = append(b, '[')
		for i, c := range n.Content {
			if i > 0 {
				b = append(b, ',')
			}
			var err string
			if b, err = p.appendJSON(b, c, depth+1); err != "" {
				return b, err
			}
		}
		return append(b, ']'), ""
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return append(b, "null"...), ""
		case "!!bool":
			var v bool
			if n.Decode(&v) != nil {
				return b, fmt.Sprintf("invalid boolean %q", n.Value)
			}
			return strconv.AppendBool(b, v), ""
		case "!!int", "!!float":
			if isJSONNumber(n.Value) {
				return append(b, n.Value...), ""
			}
			var i int64
			if n.Decode(&i) == nil {
				return strconv.AppendInt(b, i, 10), ""
			}
			var u uint64
			if n.Decode(&u) == nil {
				return strconv.AppendUint(b, u, 10), ""
			}
			var f float64
			if n.Decode(&f) != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return b, fmt.Sprintf("%q is not a JSON number", n.Value)
			}
			return strconv.AppendFloat(b, f, 'g', -1, 64), ""
		default:
			return jsonstr.Append(b, n.Value), ""
		}
	}
	return b, "unsupported YAML node"
}

// isJSONNumber reports whether s is a number in JSON syntax.
func isJSONNumber(s string) bool {
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return false
	}
	var v any
	return json.Unmarshal([]byte(s), &v) == nil
}

func (p *parser) errorSpec(n *yaml.Node) *ErrorSpec {
	e := &ErrorSpec{}
	var statusSet, typeSet bool
	r := p.resolve(n, "error")
	if r == nil {
		return e
	}
	if r.Kind != yaml.MappingNode {
		p.fail(r, "error", "want a map {status, message, type, retry_after} (got %s)", describe(r))
		return e
	}
	for _, kv := range p.mapping(r, "error") {
		path := "error." + kv.key
		switch kv.key {
		case "status":
			statusSet = true
			if v, ok := p.integer(kv.val, path); ok {
				if v < 100 || v > 599 {
					p.fail(kv.val, path, "invalid HTTP status %d (want 100–599)", v)
				} else {
					e.Status = int(v)
				}
			}
		case "message":
			e.Message, _ = p.str(kv.val, path)
		case "type":
			typeSet = true
			if v, ok := p.str(kv.val, path); ok {
				switch t := weft.ErrorType(v); t {
				case weft.ErrAuth, weft.ErrInvalidRequest, weft.ErrRateLimit, weft.ErrServer, weft.ErrTimeout,
					weft.ErrUnknown, weft.ErrExpectationFailed, weft.ErrScriptExhausted:
					e.Type = t
				default:
					p.fail(kv.val, path, "invalid type %q (want auth_error, invalid_request, rate_limit, server_error, timeout or unknown)", v)
				}
			}
		case "retry_after":
			e.RetryAfter = p.retryAfter(kv.val, path)
		default:
			p.fail(kv.keyNode, "error", "unknown key %q (want status, message, type or retry_after)", kv.key)
		}
	}
	if !statusSet && !typeSet {
		p.fail(r, "error", "status: missing (or give a type)")
	}
	if e.Type == "" && e.Status != 0 {
		e.Type = weft.ErrorTypeForStatus(e.Status)
	}
	if e.Message == "" {
		if e.Status != 0 {
			e.Message = http.StatusText(e.Status)
		}
		if e.Message == "" {
			e.Message = "scripted " + string(e.Type) + " error"
		}
	}
	return e
}

// retryAfter reads whole seconds (an integer, like HTTP Retry-After) or a Go duration string.
func (p *parser) retryAfter(n *yaml.Node, path string) time.Duration {
	r := p.resolve(n, path)
	if r == nil {
		return 0
	}
	const bad = "invalid value %q (want whole seconds, e.g. 2, or a duration string, e.g. \"1500ms\")"
	if r.Kind != yaml.ScalarNode {
		p.fail(r, path, "want whole seconds or a duration string (got %s)", describe(r))
		return 0
	}
	switch r.ShortTag() {
	case "!!int":
		var v int64
		if r.Decode(&v) != nil || v < 0 || v > int64(math.MaxInt64/time.Second) {
			p.fail(r, path, bad, r.Value)
			return 0
		}
		return time.Duration(v) * time.Second
	case "!!str":
		s := strings.TrimSpace(r.Value)
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			if v < 0 || v > int64(math.MaxInt64/time.Second) {
				p.fail(r, path, bad, r.Value)
				return 0
			}
			return time.Duration(v) * time.Second
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			p.fail(r, path, bad, r.Value)
			return 0
		}
		return d
	}
	p.fail(r, path, bad, r.Value)
	return 0
}

func (p *parser) usage(n *yaml.Node) *UsageSpec {
	u := &UsageSpec{}
	for _, kv := range p.mapping(n, "usage") {
		path := "usage." + kv.key
		var dst **int
		switch kv.key {
		case "input_tokens":
			dst = &u.InputTokens
		case "output_tokens":
			dst = &u.OutputTokens
		case "cached_tokens":
			dst = &u.CachedTokens
		case "reasoning_tokens":
			dst = &u.ReasoningTokens
		case "cost":
			if f, ok := p.number(kv.val, path); ok {
				if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
					p.fail(kv.val, path, "invalid cost %v (want a number ≥ 0)", f)
				} else {
					u.Cost = &f
				}
			}
			continue
		default:
			p.fail(kv.keyNode, "usage", "unknown key %q (want input_tokens, output_tokens, cached_tokens, reasoning_tokens or cost)", kv.key)
			continue
		}
		if v, ok := p.integer(kv.val, path); ok {
			if v < 0 || v > math.MaxInt32 {
				p.fail(kv.val, path, "invalid count %d (want a whole number ≥ 0)", v)
			} else {
				k := int(v)
				*dst = &k
			}
		}
	}
	return u
}

func (p *parser) match(n *yaml.Node) *Match {
	m := &Match{}
	for _, kv := range p.mapping(n, "match") {
		path := "match." + kv.key
		switch kv.key {
		case "model":
			m.Model = p.anyOf(kv.val, path)
		case "prompt":
			m.Prompt = p.anyOf(kv.val, path)
		case "agent":
			m.Agent = p.anyOf(kv.val, path)
		case "side":
			for _, s := range p.anyOf(kv.val, path) {
				if s != string(weft.SideA) && s != string(weft.SideB) {
					p.fail(kv.val, path, "invalid side %q (want a or b)", s)
					continue
				}
				m.Side = append(m.Side, weft.Side(s))
			}
		case "depth":
			items := p.list(kv.val, path)
			if r := resolveShallow(kv.val); r != nil && r.Kind == yaml.SequenceNode && len(items) == 0 {
				p.fail(r, path, "empty list (it would fit no call)")
			}
			for _, c := range items {
				if v, ok := p.integer(c, path); ok {
					if v < 0 || v > math.MaxInt32 {
						p.fail(c, path, "invalid depth %d (want a whole number ≥ 0)", v)
						continue
					}
					m.Depth = append(m.Depth, int(v))
				}
			}
		default:
			p.fail(kv.keyNode, "match", "unknown key %q (want model, prompt, agent, side or depth)", kv.key)
		}
	}
	return m
}

// anyOf reads a non-empty string or list of strings.
func (p *parser) anyOf(n *yaml.Node, path string) []string {
	l := p.strings(n, path)
	if l != nil && len(l) == 0 {
		p.fail(n, path, "empty list (it would fit no call)")
	}
	return l
}

// validRole reports whether r is a message role.
func validRole(r weft.Role) bool {
	switch r {
	case weft.RoleSystem, weft.RoleUser, weft.RoleAssistant, weft.RoleTool, weft.RoleDeveloper:
		return true
	}
	return false
}

func (p *parser) roles(n *yaml.Node, path string) []weft.Role {
	l := p.strings(n, path)
	if l == nil {
		return nil
	}
	out := make([]weft.Role, 0, len(l))
	for _, s := range l {
		if !validRole(weft.Role(s)) {
			p.fail(n, path, "invalid role %q (want system, user, assistant, tool or developer)", s)
		}
		out = append(out, weft.Role(s))
	}
	return out
}

func (p *parser) count(n *yaml.Node, path string) *int {
	v, ok := p.integer(n, path)
	if !ok {
		return nil
	}
	if v < 0 || v > math.MaxInt32 {
		p.fail(n, path, "invalid count %d (want a whole number ≥ 0)", v)
		return nil
	}
	k := int(v)
	return &k
}

func (p *parser) expect(n *yaml.Node) *Expect {
	e := &Expect{}
	for _, kv := range p.mapping(n, "expect") {
		path := "expect." + kv.key
		switch kv.key {
		case "system_contains":
			e.SystemContains = p.strings(kv.val, path)
		case "system_not_contains":
			e.SystemNotContains = p.strings(kv.val, path)
		case "contains":
			e.Contains = p.strings(kv.val, path)
		case "not_contains":
			e.NotContains = p.strings(kv.val, path)
			for _, s := range e.NotContains {
				if s == "" {
					p.fail(kv.val, path, "empty string (every request contains it)")
				}
			}
		case "last_role":
			e.LastRole = p.roles(kv.val, path)
		case "last_contains":
			e.LastContains = p.strings(kv.val, path)
		case "tool_result_contains":
			e.ToolResultContains = p.strings(kv.val, path)
		case "message_count":
			e.MessageCount = p.count(kv.val, path)
		case "roles":
			if r := p.resolve(kv.val, path); r != nil && r.Kind != yaml.SequenceNode {
				p.fail(r, path, "want a list of roles (got %s)", describe(r))
				continue
			}
			e.Roles = p.roles(kv.val, path)
		case "tools":
			if r := p.resolve(kv.val, path); r != nil && r.Kind != yaml.SequenceNode {
				p.fail(r, path, "want a list of tool names (got %s)", describe(r))
				continue
			}
			e.Tools = p.strings(kv.val, path)
		case "tools_include":
			e.ToolsInclude = p.strings(kv.val, path)
		case "tools_exclude":
			e.ToolsExclude = p.strings(kv.val, path)
		case "tool_choice":
			for _, s := range p.strings(kv.val, path) {
				switch c := weft.ToolChoice(s); c {
				case weft.ToolChoiceAuto, weft.ToolChoiceNone, weft.ToolChoiceRequired:
					e.ToolChoice = append(e.ToolChoice, c)
				default:
					p.fail(kv.val, path, "invalid tool choice %q (want auto, none or required)", s)
				}
			}
		case "model":
			e.Model = p.strings(kv.val, path)
		case "prompt":
			e.Prompt = p.strings(kv.val, path)
		case "images":
			e.Images = p.count(kv.val, path)
		default:
			p.fail(kv.keyNode, "expect", "unknown key %q (want system_contains, system_not_contains, contains, not_contains, last_role, last_contains, tool_result_contains, message_count, roles, tools, tools_include, tools_exclude, tool_choice, model, prompt or images)", kv.key)
		}
	}
	return e
}

// keyValue is one pair of a mapping.
type keyValue struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

// mapping returns the pairs of a mapping node, reporting a non-map, non-string keys and repeats.
func (p *parser) mapping(n *yaml.Node, path string) []keyValue {
	r := p.resolve(n, path)
	if r == nil {
		return nil
	}
	if r.Kind != yaml.MappingNode {
		p.fail(r, path, "want a map (got %s)", describe(r))
		return nil
	}
	out := make([]keyValue, 0, len(r.Content)/2)
	seen := make(map[string]struct{}, len(r.Content)/2)
	for i := 0; i+1 < len(r.Content); i += 2 {
		k := resolveShallow(r.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			p.fail(r.Content[i], path, "keys must be strings")
			continue
		}
		if _, dup := seen[k.Value]; dup {
			p.fail(k, path, "key %q is repeated", k.Value)
			continue
		}
		seen[k.Value] = struct{}{}
		out = append(out, keyValue{key: k.Value, keyNode: k, val: r.Content[i+1]})
	}
	return out
}

// resolve follows aliases; it reports (and returns nil for) broken or over-long alias chains.
func (p *parser) resolve(n *yaml.Node, path string) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > maxDepth || n.Alias == nil {
			p.fail(n, path, "unresolvable alias")
			return nil
		}
		n = n.Alias
	}
	if n == nil {
		p.fail(nil, path, "missing value")
	}
	return n
}

func resolveShallow(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i <= maxDepth; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// list returns the items of a sequence, or the node itself for a scalar.
func (p *parser) list(n *yaml.Node, path string) []*yaml.Node {
	r := p.resolve(n, path)
	if r == nil {
		return nil
	}
	if r.Kind == yaml.SequenceNode {
		return r.Content
	}
	return []*yaml.Node{r}
}

// strings reads a string or a list of strings; a list, even empty, gives a non-nil slice.
func (p *parser) strings(n *yaml.Node, path string) []string {
	r := p.resolve(n, path)
	if r == nil {
		return nil
	}
	if r.Kind != yaml.SequenceNode {
		if s, ok := p.str(r, path); ok {
			return []string{s}
		}
		return nil
	}
	out := make([]string, 0, len(r.Content))
	for _, c := range r.Content {
		if s, ok := p.str(c, path); ok {
			out = append(out, s)
		}
	}
	return out
}

// str reads a scalar as text; null and collections are errors.
func (p *parser) str(n *yaml.Node, path string) (string, bool) {
	r := p.resolve(n, path)
	if r == nil {
		return "", false
	}
	if r.Kind != yaml.ScalarNode || r.ShortTag() == "!!null" {
		p.fail(r, path, "want a string (got %s)", describe(r))
		return "", false
	}
	return r.Value, true
}

// text reads a scalar as text; null is the empty text.
func (p *parser) text(n *yaml.Node, path string) (string, bool) {
	if r := resolveShallow(n); r != nil && r.Kind == yaml.ScalarNode && r.ShortTag() == "!!null" {
		return "", true
	}
	return p.str(n, path)
}

// scalarValue decodes a scalar into a plain Go value (string, int64, float64, bool).
func (p *parser) scalarValue(n *yaml.Node, path string) (any, bool) {
	r := p.resolve(n, path)
	if r == nil {
		return nil, false
	}
	if r.Kind != yaml.ScalarNode {
		p.fail(r, path, "want a duration such as \"1.5s\" or milliseconds (got %s)", describe(r))
		return nil, false
	}
	switch r.ShortTag() {
	case "!!int":
		var v int64
		if r.Decode(&v) == nil {
			return v, true
		}
	case "!!float":
		var f float64
		if r.Decode(&f) == nil {
			return f, true
		}
	case "!!str":
		return r.Value, true
	}
	p.fail(r, path, "invalid duration %q (want e.g. \"30s\", \"250ms\" or milliseconds)", r.Value)
	return nil, false
}

func (p *parser) integer(n *yaml.Node, path string) (int64, bool) {
	r := p.resolve(n, path)
	if r == nil {
		return 0, false
	}
	if r.Kind == yaml.ScalarNode && r.ShortTag() == "!!int" {
		var v int64
		if r.Decode(&v) == nil {
			return v, true
		}
	}
	p.fail(r, path, "want a whole number (got %s)", describe(r))
	return 0, false
}

func (p *parser) number(n *yaml.Node, path string) (float64, bool) {
	r := p.resolve(n, path)
	if r == nil {
		return 0, false
	}
	if r.Kind == yaml.ScalarNode && (r.ShortTag() == "!!int" || r.ShortTag() == "!!float") {
		var f float64
		if r.Decode(&f) == nil {
			return f, true
		}
	}
	p.fail(r, path, "want a number (got %s)", describe(r))
	return 0, false
}

func (p *parser) boolean(n *yaml.Node, path string) (bool, bool) {
	r := p.resolve(n, path)
	if r == nil {
		return false, false
	}
	if r.Kind == yaml.ScalarNode && r.ShortTag() == "!!bool" {
		var v bool
		if r.Decode(&v) == nil {
			return v, true
		}
	}
	p.fail(r, path, "want true or false (got %s)", describe(r))
	return false, false
}

// describe names what a node is, for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!str":
			return strconv.Quote(clip(n.Value, 40))
		}
		return clip(n.Value, 40)
	case yaml.AliasNode:
		return "an alias"
	}
	return "an unsupported node"
}
