package anthropic

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// wireRequest is the Messages API request body.
type wireRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	System        string          `json:"system,omitempty"`
	Messages      []wireMessage   `json:"messages"`
	Tools         []any           `json:"tools,omitempty"` // wireTool or a server tool object
	ToolChoice    *wireToolChoice `json:"tool_choice,omitempty"`
	Thinking      *wireThinking   `json:"thinking,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
}

// wireMessage is one message; Content is a string or a list of blocks (wireBlock or raw JSON).
type wireMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *wireSource     `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   any             `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type wireSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// wireTool is a function (client) tool.
type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	// Strict asks Anthropic to guarantee that calls match InputSchema (strictTools option).
	Strict bool `json:"strict,omitempty"`
}

type wireToolChoice struct {
	Type                   string `json:"type"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type wireThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// built is an encoded request and the tool-name mapping used for it.
type built struct {
	body  []byte
	names *nameMap
}

// transportKeys are options that configure the transport (or the adapter) and never reach the
// body; strictTools turns on strict function tools.
var transportKeys = map[string]bool{"baseUrl": true, "headers": true, "stream": true, "strictTools": true}

// mappedKeys are Weft model options translated into Anthropic fields.
var mappedKeys = map[string]bool{"maxOutputTokens": true, "max_tokens": true, "temperature": true,
	"topP": true, "top_p": true, "topK": true, "top_k": true, "stop": true, "stop_sequences": true,
	"seed": true}

// buildRequest encodes req as a Messages API body.
func buildRequest(req *weft.Request, stream bool) (built, error) {
	names := newNameMap(req)
	w := wireRequest{Model: req.Model.Model, Stream: stream}
	w.MaxTokens = maxTokens(req)

	if v, ok := weft.OptionNumber(req.Options, "temperature"); ok {
		w.Temperature = &v
	}
	if v, ok := weft.OptionNumber(req.Options, "topP", "top_p"); ok {
		w.TopP = &v
	}
	if v, ok := weft.OptionNumber(req.Options, "topK", "top_k"); ok {
		k := int(v)
		w.TopK = &k
	}
	w.StopSequences = weft.OptionStrings(req.Options, "stop", "stop_sequences")

	msgs := req.Messages
	var system []string
	for len(msgs) > 0 && (msgs[0].Role == weft.RoleSystem || msgs[0].Role == weft.RoleDeveloper) {
		if t := msgs[0].Text(); t != "" {
			system = append(system, t)
		}
		msgs = msgs[1:]
	}
	if req.Output != nil {
		// No native structured-output form here: the shape is asked for in the system prompt,
		// and the engine validates the answer (retrying with the error when it does not match).
		system = append(system, req.Output.OutputInstruction())
	}
	w.System = strings.Join(system, "\n\n")
	var err error
	if w.Messages, err = convertMessages(msgs, names); err != nil {
		return built{}, err
	}

	if len(req.Tools) > 0 && req.ToolChoice != weft.ToolChoiceNone {
		strict := optionBool(req.Option("strictTools"))
		for _, t := range req.Tools {
			if t.Provider != "" {
				// Server tools of this provider are sent natively; other providers' are not offered.
				if ownTool(t, req) {
					w.Tools = append(w.Tools, serverTool(t, req))
				}
				continue
			}
			wt := wireTool{Name: names.wire(t.Name), Description: t.Description, Strict: strict}
			if wt.InputSchema, err = inputSchema(t.Parameters, strict); err != nil {
				return built{}, fmt.Errorf("tool %s: %w", t.Name, err)
			}
			w.Tools = append(w.Tools, wt)
		}
		if len(w.Tools) > 0 {
			tc := &wireToolChoice{Type: "auto", DisableParallelToolUse: !req.ParallelToolCalls}
			if req.ToolChoice == weft.ToolChoiceRequired {
				tc.Type = "any"
			}
			w.ToolChoice = tc
		}
	}

	if r := req.Reasoning; r != nil && (r.MaxTokens > 0 || r.Effort != "") {
		budget := r.MaxTokens
		if budget == 0 {
			switch r.Effort {
			case "low", "minimal":
				budget = 1024
			case "high":
				budget = 16384
			default:
				budget = 8192
			}
		}
		budget = max(budget, 1024)
		// Anthropic requires budget_tokens < max_tokens: make room for the answer.
		if w.MaxTokens <= budget {
			w.MaxTokens = budget + DefaultMaxTokens
		}
		w.Thinking = &wireThinking{Type: "enabled", BudgetTokens: budget}
	}

	body, err := json.Marshal(w)
	if err != nil {
		return built{}, err
	}
	if extra := extraOptions(req, serverToolKeys(req)); len(extra) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return built{}, err
		}
		for k, v := range extra {
			raw, err := json.Marshal(v)
			if err != nil {
				return built{}, fmt.Errorf("option %s: %w", k, err)
			}
			m[k] = raw
		}
		if body, err = json.Marshal(m); err != nil {
			return built{}, err
		}
	}
	return built{body: body, names: names}, nil
}

// inputSchema encodes a function tool's argument schema; strict closes every object
// (additionalProperties: false), which Anthropic's strict tools require.
func inputSchema(s *weft.Schema, strict bool) (json.RawMessage, error) {
	if s == nil {
		if strict {
			return json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), nil
		}
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	if strict {
		s = schema.Strict(s, schema.Closed)
	}
	return json.Marshal(s)
}

// extraOptions are the request options merged verbatim into the body, leaving out transport and
// mapped keys and the options of offered server tools (skip), which go into the tool objects.
func extraOptions(req *weft.Request, skip map[string]bool) map[string]any {
	var out map[string]any
	for k, v := range req.Options {
		if transportKeys[k] || mappedKeys[k] || skip[k] {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v
	}
	return out
}

// maxTokens is max_tokens, which Anthropic requires: modelOptions.maxOutputTokens, else the
// capability, else 4096.
func maxTokens(req *weft.Request) int {
	if v, ok := weft.OptionNumber(req.Options, "maxOutputTokens", "max_tokens"); ok && v > 0 {
		return int(v)
	}
	if n := req.Model.Capabilities.MaxOutputTokens; n > 0 {
		return n
	}
	return DefaultMaxTokens
}

// convertMessages translates the conversation after the leading system messages, merging
// neighbours of the same role because the Messages API requires alternation.
//
// A server tool call of an earlier Anthropic reply is replayed from the verbatim blocks its tool
// message keeps (metadata provider_raw): the server_tool_use block and its result go into the
// assistant content, after the thinking blocks and before the text (the search or the code run
// came before the answer it informs), and the tool message itself sends nothing. A call without
// such blocks (made by another provider) is sent as an ordinary tool_use/tool_result pair.
func convertMessages(msgs []weft.LLMMessage, names *nameMap) ([]wireMessage, error) {
	var server map[string][]json.RawMessage // tool call id → kept server blocks
	for _, m := range msgs {
		if m.Role != weft.RoleTool || m.ToolCallID == "" {
			continue
		}
		if raw := providerRaw(m.Metadata); raw != nil {
			if server == nil {
				server = map[string][]json.RawMessage{}
			}
			server[m.ToolCallID] = raw
		}
	}
	out := make([]wireMessage, 0, len(msgs))
	for _, m := range msgs {
		var role string
		var blocks []any
		switch m.Role {
		case weft.RoleSystem, weft.RoleDeveloper:
			role = "user"
			if t := m.Text(); t != "" {
				blocks = []any{wireBlock{Type: "text", Text: "System note: " + t}}
			}
		case weft.RoleUser:
			role = "user"
			if len(m.Parts) == 0 && len(out) == 0 || len(m.Parts) == 0 && out[len(out)-1].Role != "user" {
				if m.Content != "" {
					// A lone text message keeps the compact string form.
					out = append(out, wireMessage{Role: role, Content: m.Content})
				}
				continue
			}
			blocks = userBlocks(m)
		case weft.RoleAssistant:
			role = "assistant"
			blocks = append(blocks, reasoningBlocks(m.Metadata)...)
			for _, tc := range m.ToolCalls {
				for _, b := range server[tc.ID] {
					blocks = append(blocks, b)
				}
			}
			if t := m.Text(); t != "" {
				blocks = append(blocks, wireBlock{Type: "text", Text: t})
			}
			for _, tc := range m.ToolCalls {
				if server[tc.ID] != nil {
					continue
				}
				input := json.RawMessage(strings.TrimSpace(tc.Arguments))
				if len(input) == 0 || input[0] != '{' || !json.Valid(input) {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, wireBlock{Type: "tool_use", ID: tc.ID, Name: names.wire(tc.Name), Input: input})
			}
		case weft.RoleTool:
			role = "user"
			if server[m.ToolCallID] != nil {
				continue // answered inside the assistant content
			}
			blocks = []any{toolResult(m)}
		default:
			return nil, fmt.Errorf("unsupported message role %q", m.Role)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(asBlocks(out[n-1].Content), blocks...)
			continue
		}
		out = append(out, wireMessage{Role: role, Content: blocks})
	}
	return out, nil
}

// asBlocks turns a string content into a block list.
func asBlocks(c any) []any {
	switch x := c.(type) {
	case string:
		return []any{wireBlock{Type: "text", Text: x}}
	case []any:
		return x
	}
	return nil
}

func userBlocks(m weft.LLMMessage) []any {
	if len(m.Parts) == 0 {
		if m.Content == "" {
			return nil
		}
		return []any{wireBlock{Type: "text", Text: m.Content}}
	}
	blocks := make([]any, 0, len(m.Parts))
	for _, p := range m.Parts {
		if b, ok := partBlock(p); ok {
			blocks = append(blocks, b)
		}
	}
	return blocks
}

// partBlock translates a content part: text, images (data: URIs as base64, http(s) URLs by
// reference), PDF files; other media become a short text note.
func partBlock(p weft.ContentPart) (wireBlock, bool) {
	switch p.Type {
	case weft.PartText:
		if p.Text == "" {
			return wireBlock{}, false
		}
		return wireBlock{Type: "text", Text: p.Text}, true
	case weft.PartImage, weft.PartFile:
		kind := "image"
		if p.Type == weft.PartFile {
			kind = "document"
		}
		if d, ok := weft.ParseDataURI(p.URL); ok && d.Base64 {
			mt, data := d.MediaType, d.Data
			if mt == "" {
				mt = p.MimeType
			}
			if p.Type == weft.PartFile && mt != "application/pdf" {
				break
			}
			return wireBlock{Type: kind, Source: &wireSource{Type: "base64", MediaType: mt, Data: data}}, true
		}
		if strings.HasPrefix(p.URL, "http://") || strings.HasPrefix(p.URL, "https://") {
			return wireBlock{Type: kind, Source: &wireSource{Type: "url", URL: p.URL}}, true
		}
	}
	desc := p.Description
	if desc == "" {
		desc = p.URL
	}
	return wireBlock{Type: "text", Text: fmt.Sprintf("[%s: %s]", p.Type, desc)}, true
}

// toolResult is a tool message as a tool_result block; text-only content is a plain string.
func toolResult(m weft.LLMMessage) wireBlock {
	b := wireBlock{Type: "tool_result", ToolUseID: m.ToolCallID, IsError: m.ToolStatus == weft.ToolError}
	media := false
	for _, p := range m.Parts {
		if p.Type != weft.PartText {
			media = true
		}
	}
	if media {
		b.Content = userBlocks(m)
	} else {
		b.Content = m.Text()
	}
	return b
}

// reasoningBlocks returns the verbatim thinking blocks kept on an assistant message.
func reasoningBlocks(md map[string]any) []any {
	raw, ok := weft.MetadataJSON(md["reasoning_blocks"])
	if !ok {
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		var one json.RawMessage
		if json.Unmarshal(raw, &one) != nil || len(one) == 0 || one[0] != '{' {
			return nil
		}
		list = []json.RawMessage{one}
	}
	out := make([]any, 0, len(list))
	for _, b := range list {
		out = append(out, b)
	}
	return out
}

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// nameMap maps tool names Anthropic would reject to valid ones and back, and the names of server
// tool calls to the Weft names of the server tools offered.
type nameMap struct {
	toWire   map[string]string
	fromWire map[string]string
	server   map[string]string // server tool name as Anthropic uses it → Weft tool name
}

func newNameMap(req *weft.Request) *nameMap {
	n := &nameMap{}
	for _, t := range req.Tools {
		if ownTool(t, req) {
			if n.server == nil {
				n.server = map[string]string{}
			}
			_, wire := serverToolWire(t.Name)
			n.server[wire] = t.Name
		}
	}
	add := func(name string) {
		if validName.MatchString(name) {
			return
		}
		if _, ok := n.toWire[name]; ok {
			return
		}
		if n.toWire == nil {
			n.toWire, n.fromWire = map[string]string{}, map[string]string{}
		}
		var b strings.Builder
		for _, r := range name {
			if r < 128 && (r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		base := b.String()
		if base == "" {
			base = "tool"
		}
		if len(base) > 64 {
			base = base[:64]
		}
		w := base
		for i := 2; n.fromWire[w] != "" || w != name && taken(req, w); i++ {
			suf := "_" + strconv.Itoa(i)
			w = base[:min(len(base), 64-len(suf))] + suf
		}
		n.toWire[name], n.fromWire[w] = w, name
	}
	for _, t := range req.Tools {
		add(t.Name)
	}
	for _, m := range req.Messages {
		for _, tc := range m.ToolCalls {
			add(tc.Name)
		}
	}
	return n
}

// taken reports whether a valid tool name already in use equals w.
func taken(req *weft.Request, w string) bool {
	for _, t := range req.Tools {
		if t.Name == w {
			return true
		}
	}
	return false
}

func (n *nameMap) wire(name string) string {
	if w, ok := n.toWire[name]; ok {
		return w
	}
	return name
}

// serverName returns the Weft name of a server tool call's tool. The code execution tool of
// 2025-08-25 and later calls sub-tools (bash_code_execution, text_editor_code_execution): they
// map to the offered code_execution tool. Unknown names are kept.
func (n *nameMap) serverName(name string) string {
	if n == nil {
		return name
	}
	if w, ok := n.server[name]; ok {
		return w
	}
	if strings.HasSuffix(name, "_code_execution") {
		if w, ok := n.server["code_execution"]; ok {
			return w
		}
	}
	return name
}

func (n *nameMap) weft(name string) string {
	if n != nil {
		if w, ok := n.fromWire[name]; ok {
			return w
		}
	}
	return name
}
