package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/weft-agents/weft"
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
