package scripted

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/jsonstr"
)

// The parts of an entry: tool calls and their arguments as JSON, errors, usage, matching and
// expectations.

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
