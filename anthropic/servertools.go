package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weft-agents/weft"
)

// ProviderName is this adapter's provider name. A weft.ToolSpec whose Provider
// is ProviderName, or the request model's own provider name (a custom provider based on anthropic),
// is a server tool: Anthropic runs it and the reply carries its result, stored as the call's
// tool message.
const ProviderName = "anthropic"

// serverToolTypes are the versioned tool types of the server tools Weft knows by their plain name.
// Any other name is sent as {"type": name, "name": name}, or, when it ends in a date
// (web_search_20260209), as {"type": name, "name": <name without the date>}.
var serverToolTypes = map[string]string{
	"web_search":     "web_search_20250305",
	"code_execution": "code_execution_20250522",
	"web_fetch":      "web_fetch_20250910",
}

// datedType matches a versioned server tool type such as web_search_20250305.
var datedType = regexp.MustCompile(`^([a-z0-9_]+?)_(\d{8})$`)

// maxSummary bounds the text of one result summary (a fetched page can be long).
const maxSummary = 16 << 10

// ownTool reports whether t is a provider-executed tool of this adapter.
func ownTool(t weft.ToolSpec, req *weft.Request) bool {
	if t.Provider == "" {
		return false
	}
	return t.Provider == ProviderName || req.Model != nil && t.Provider == req.Model.Provider
}

// serverToolWire returns the tool type and the name Anthropic uses for the Weft server tool name.
func serverToolWire(name string) (typ, wire string) {
	if t, ok := serverToolTypes[name]; ok {
		return t, name
	}
	if m := datedType.FindStringSubmatch(name); m != nil {
		return name, m[1]
	}
	return name, name
}

// serverTool is the tool object of a server tool. The keys of a map-valued request option named
// after the tool (e.g. web_search: {max_uses: 3, allowed_domains: [...]}) are merged into it; they
// may replace the type (to pick a newer tool version) but not the name, which pairs calls with the
// offered tool.
func serverTool(t weft.ToolSpec, req *weft.Request) map[string]any {
	typ, wire := serverToolWire(t.Name)
	obj := map[string]any{"type": typ, "name": wire}
	switch opts := req.Option(t.Name).(type) {
	case map[string]any:
		for k, v := range opts {
			if k != "name" {
				obj[k] = v
			}
		}
	case map[string]string:
		for k, v := range opts {
			if k != "name" {
				obj[k] = v
			}
		}
	}
	return obj
}

// serverToolKeys are the request options that configure offered server tools (one per tool,
// named after it); they go into the tool objects, never into the request body.
func serverToolKeys(req *weft.Request) map[string]bool {
	var keys map[string]bool
	for _, t := range req.Tools {
		if ownTool(t, req) {
			if keys == nil {
				keys = map[string]bool{}
			}
			keys[t.Name] = true
		}
	}
	return keys
}

// optionBool reads a boolean request option (a bool, or a string strconv.ParseBool accepts).
func optionBool(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		b, _ := strconv.ParseBool(x)
		return b
	}
	return false
}

// isServerResult reports whether a content block type is the result of a server tool call
// (web_search_tool_result, code_execution_tool_result, …); tool_result is the client's own.
func isServerResult(typ string) bool {
	return typ != "tool_result" && strings.HasSuffix(typ, "_tool_result")
}

// rawBlock is what the adapter reads of a kept server block.
type rawBlock struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	ToolUseID string `json:"tool_use_id"`
}

// providerRaw returns the verbatim server blocks a tool message keeps in metadata provider_raw
// (json.RawMessage, bytes, a JSON string, or the decoded JSON after a round trip through a store),
// or nil when there are none or they are not Anthropic's: exactly one server_tool_use block and
// one or more result blocks answering it. Anything else (another provider's raw items, a damaged
// value) is ignored, and the call is then sent as an ordinary tool_use/tool_result pair.
func providerRaw(md map[string]any) []json.RawMessage {
	raw, ok := weft.MetadataJSON(md["provider_raw"])
	if !ok {
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil || len(list) < 2 {
		return nil
	}
	id := ""
	blocks := make([]rawBlock, len(list))
	for i, b := range list {
		rb := &blocks[i]
		if b = bytes.TrimSpace(b); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, rb) != nil {
			return nil
		}
		if rb.Type == "server_tool_use" {
			if id != "" || rb.ID == "" {
				return nil
			}
			id = rb.ID
		}
	}
	if id == "" {
		return nil
	}
	for _, rb := range blocks {
		if rb.Type != "server_tool_use" && (!isServerResult(rb.Type) || rb.ToolUseID != id) {
			return nil
		}
	}
	return list
}

// serverCall is a server_tool_use block of a reply and the result blocks answering it.
type serverCall struct {
	id, name string
	input    json.RawMessage
	use      json.RawMessage // the verbatim block; nil when it cannot be replayed
	results  []json.RawMessage
}

// serverCalls pairs a reply's server_tool_use blocks with their result blocks.
type serverCalls struct {
	calls []*serverCall
}

// call records a server_tool_use block.
func (s *serverCalls) call(id, name string, input, use json.RawMessage) {
	s.calls = append(s.calls, &serverCall{id: id, name: name, input: input, use: use})
}

// result records a result block; one that answers no recorded call is ignored.
func (s *serverCalls) result(block json.RawMessage) {
	var rb rawBlock
	if json.Unmarshal(block, &rb) != nil || rb.ToolUseID == "" {
		return
	}
	for _, c := range s.calls {
		if c.id == rb.ToolUseID {
			c.results = append(c.results, block)
			return
		}
	}
}

// results returns one weft.ProviderToolResult per recorded call, in call order. A call without a
// result (a reply cut short) is an error result without Raw: a server_tool_use block without its
// result cannot be sent back, so later requests carry it as an ordinary tool_use/tool_result pair.
func (s *serverCalls) results() []weft.ProviderToolResult {
	if len(s.calls) == 0 {
		return nil
	}
	out := make([]weft.ProviderToolResult, 0, len(s.calls))
	for _, c := range s.calls {
		r := weft.ProviderToolResult{CallID: c.id, Status: weft.ToolSuccess}
		if len(c.results) == 0 {
			r.Status = weft.ToolError
			r.Content = "anthropic: the reply carries no result for this " + c.name + " call"
			out = append(out, r)
			continue
		}
		texts := make([]string, 0, len(c.results))
		for _, res := range c.results {
			text, failed := summarize(c, res)
			if failed {
				r.Status = weft.ToolError
			}
			if text != "" {
				texts = append(texts, text)
			}
		}
		r.Content = clip(strings.Join(texts, "\n\n"), maxSummary)
		if c.use != nil {
			r.Raw, _ = json.Marshal(append([]json.RawMessage{c.use}, c.results...))
		}
		out = append(out, r)
	}
	return out
}

// resultBlock is the common shape of server tool result blocks.
type resultBlock struct {
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
}

// resultContent is the union of the result payloads Weft summarizes: web search results, code
// execution output, fetched documents and errors.
type resultContent struct {
	Type         string          `json:"type"`
	ErrorCode    string          `json:"error_code"`
	ErrorMessage string          `json:"error_message"`
	Title        string          `json:"title"`
	URL          string          `json:"url"`
	PageAge      string          `json:"page_age"`
	Stdout       *string         `json:"stdout"`
	Stderr       *string         `json:"stderr"`
	ReturnCode   *int            `json:"return_code"`
	RetrievedAt  string          `json:"retrieved_at"`
	Content      json.RawMessage `json:"content"`
	Text         string          `json:"text"`
}

// document is a fetched document (web_fetch_result.content).
type document struct {
	Title  string `json:"title"`
	Source struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// summarize renders a result block as readable text: the titles and URLs of search results,
// the output of code execution, a fetched page's text. failed reports an *_error result.
func summarize(c *serverCall, block json.RawMessage) (text string, failed bool) {
	var rb resultBlock
	if json.Unmarshal(block, &rb) != nil {
		return "", false
	}
	tool := strings.TrimSuffix(rb.Type, "_tool_result")
	content := bytes.TrimSpace(rb.Content)
	if len(content) == 0 || string(content) == "null" {
		return "", false
	}
	switch content[0] {
	case '"':
		var s string
		_ = json.Unmarshal(content, &s)
		return s, false
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(content, &items) != nil {
			return "", false
		}
		var b strings.Builder
		n := 0
		for _, it := range items {
			var rc resultContent
			if json.Unmarshal(it, &rc) != nil {
				continue
			}
			switch {
			case rc.URL != "" || rc.Title != "":
				n++
				fmt.Fprintf(&b, "%d. %s\n   %s\n", n, firstNonEmpty(rc.Title, rc.URL), rc.URL)
			case rc.Text != "":
				b.WriteString(rc.Text + "\n")
			}
		}
		body := strings.TrimRight(b.String(), "\n")
		if body == "" {
			body = "No results."
		}
		if q := queryOf(c.input); q != "" {
			body = "Web search: " + q + "\n" + body
		}
		return body, false
	case '{':
		var rc resultContent
		if json.Unmarshal(content, &rc) != nil {
			return "", false
		}
		switch {
		case strings.HasSuffix(rc.Type, "_error"):
			msg := tool + " failed: " + firstNonEmpty(rc.ErrorCode, rc.Type)
			if rc.ErrorMessage != "" {
				msg += ": " + rc.ErrorMessage
			}
			return msg, true
		case rc.Stdout != nil || rc.Stderr != nil || rc.ReturnCode != nil:
			return codeOutput(rc), false
		case rc.Type == "web_fetch_result":
			return fetched(rc), false
		case rc.Text != "":
			return rc.Text, false
		}
		if len(rc.Content) > 0 && rc.Content[0] == '"' {
			var s string
			if json.Unmarshal(rc.Content, &s) == nil {
				return s, false
			}
		}
	}
	// Unknown result shapes are shown as their compact JSON rather than lost.
	var buf bytes.Buffer
	if json.Compact(&buf, content) != nil {
		return "", false
	}
	return buf.String(), false
}

// codeOutput renders code execution output: return code, stdout, stderr.
func codeOutput(rc resultContent) string {
	var b strings.Builder
	if rc.ReturnCode != nil {
		fmt.Fprintf(&b, "return code: %d\n", *rc.ReturnCode)
	}
	if rc.Stdout != nil && *rc.Stdout != "" {
		b.WriteString("stdout:\n" + strings.TrimRight(*rc.Stdout, "\n") + "\n")
	}
	if rc.Stderr != nil && *rc.Stderr != "" {
		b.WriteString("stderr:\n" + strings.TrimRight(*rc.Stderr, "\n") + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// fetched renders a web_fetch_result: the URL, the title and the text of a text document.
func fetched(rc resultContent) string {
	var b strings.Builder
	b.WriteString("Fetched " + rc.URL)
	var doc document
	if len(rc.Content) > 0 && json.Unmarshal(rc.Content, &doc) == nil {
		if doc.Title != "" {
			b.WriteString("\nTitle: " + doc.Title)
		}
		switch {
		case doc.Source.Type == "text" && doc.Source.Data != "":
			b.WriteString("\n\n" + doc.Source.Data)
		case doc.Source.MediaType != "":
			b.WriteString("\n[" + doc.Source.MediaType + " document]")
		}
	}
	return b.String()
}

// queryOf returns the query of a web search call's input.
func queryOf(input json.RawMessage) string {
	var in struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	return in.Query
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… [truncated]"
}
