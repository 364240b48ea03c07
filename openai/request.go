package openai

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// toolNames maps wire tool names back to the names the request used.
type toolNames map[string]string

// original returns the request's name for a wire name.
func (n toolNames) original(wire string) string {
	if o, ok := n[wire]; ok {
		return o
	}
	return wire
}

// WireToolName returns the name sent for a tool: the name itself when it matches
// ^[a-zA-Z0-9_-]{1,64}$, else a deterministic replacement (invalid characters as '_', cut to fit,
// with 8 hex digits of the name's SHA-256) that responses map back.
func WireToolName(name string) string {
	if validToolName(name) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		if r < 0x80 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 55 {
		s = s[:55]
	}
	sum := sha256.Sum256([]byte(name))
	return s + "_" + hex.EncodeToString(sum[:4])
}

func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// modelOptionKeys maps Weft's camelCase model options to chat-completions fields.
var modelOptionKeys = map[string]string{
	"temperature":      "temperature",
	"maxOutputTokens":  "max_completion_tokens",
	"topP":             "top_p",
	"stop":             "stop",
	"seed":             "seed",
	"topK":             "top_k",
	"frequencyPenalty": "frequency_penalty",
	"presencePenalty":  "presence_penalty",
}

// transportKeys are options that configure the adapter rather than the model and never go into
// the body: the transport (baseUrl, headers, Azure's apiVersion), the wire (useResponsesApi) and the tool form
// (strictTools). The options named after offered provider-executed tools stay out too (see
// bodyOptions).
var transportKeys = map[string]bool{"baseUrl": true, "headers": true, "useResponsesApi": true, "strictTools": true, "apiVersion": true}

// ownTool reports whether t is a provider-executed tool this adapter runs natively: its Provider is
// openai, this adapter's name, or the model's provider (a custom provider based on openai).
func (p *Provider) ownTool(t weft.ToolSpec, req *weft.Request) bool {
	if t.Provider == "" {
		return false
	}
	return t.Provider == "openai" || t.Provider == p.opts.Name || req.Model != nil && t.Provider == req.Model.Provider
}

// bodyOptions returns the providerOptions overlaid by the request options that go into the body,
// renamed through keys (an empty name drops the option): transport keys and the options named after
// offered provider-executed tools (their settings, e.g. web_search: {search_context_size: low}) are
// left out.
func (p *Provider) bodyOptions(req *weft.Request, keys map[string]string) map[string]any {
	body := map[string]any{}
	for _, m := range []map[string]any{req.Model.ProviderOptions, req.Options} {
		for k, v := range m {
			if transportKeys[k] || p.isToolOption(req, k) {
				continue
			}
			if w, ok := keys[k]; ok {
				if w == "" {
					continue
				}
				k = w
			}
			body[k] = v
		}
	}
	return body
}

// isToolOption reports whether the option key is the name of an offered provider-executed tool.
func (p *Provider) isToolOption(req *weft.Request, key string) bool {
	for _, t := range req.Tools {
		if t.Name == key && p.ownTool(t, req) {
			return true
		}
	}
	return false
}

// strictTools reports whether function tools go out in strict form (option strictTools: true). The
// engine reads the same option to drop the nulls a strict model returns for optional properties.
func strictTools(req *weft.Request) bool { return req.Option("strictTools") == true }

// emptyParameters is the schema offered for a tool without arguments.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// toolParameters is the JSON schema sent for a function tool: its Parameters (the empty object
// schema when it has none), converted to OpenAI's strict form when strict.
func toolParameters(t weft.ToolSpec, strict bool) (json.RawMessage, error) {
	s := t.Parameters
	if s == nil {
		if !strict {
			return emptyParameters, nil
		}
		s = schema.NoArgs()
	}
	if strict {
		s = schema.Strict(s, schema.OpenAIStrict)
	}
	return json.Marshal(s)
}

// outputSchema is a structured answer's schema in OpenAI's strict form (every property required,
// optional ones nullable, no additional properties); the engine drops the nulls it brings back.
func outputSchema(o *weft.OutputSpec) (json.RawMessage, error) {
	return json.Marshal(schema.Strict(o.Schema, schema.OpenAIStrict))
}

// outputName is the name OpenAI wants for a response format: ^[a-zA-Z0-9_-]{1,64}$.
func outputName(o *weft.OutputSpec) string {
	if o.Name == "" {
		return "answer"
	}
	return WireToolName(o.Name)
}

// buildBody builds the JSON request body and the wire→request tool name map.
func (p *Provider) buildBody(req *weft.Request, stream bool) ([]byte, toolNames, error) {
	body := p.bodyOptions(req, modelOptionKeys)
	if v, ok := body["max_completion_tokens"]; ok && p.azure != nil && !azureTakesMaxCompletion(p.azureVersion(req)) {
		// Azure api-versions before 2024-09-01-preview refuse max_completion_tokens (400).
		delete(body, "max_completion_tokens")
		body["max_tokens"] = v
	}
	names := toolNames{}
	wire := func(n string) string {
		w := WireToolName(n)
		if w != n {
			names[w] = n
		}
		return w
	}

	msgs := make([]map[string]any, 0, len(req.Messages))
	for _, m := range req.Messages {
		msgs = append(msgs, p.message(m, wire))
	}
	body["model"] = req.Model.Model
	body["messages"] = msgs
	if req.Output != nil {
		js, err := outputSchema(req.Output)
		if err != nil {
			return nil, nil, err
		}
		body["response_format"] = map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": outputName(req.Output), "schema": js, "strict": true}}
	}

	caps := req.Model.Capabilities
	if caps.ToolCalls() && len(req.Tools) > 0 && req.ToolChoice != weft.ToolChoiceNone {
		tools := make([]map[string]any, 0, len(req.Tools))
		strict := strictTools(req)
		for _, t := range req.Tools {
			if t.Provider != "" {
				continue // provider-executed tools have no chat-completions form
			}
			params, err := toolParameters(t, strict)
			if err != nil {
				return nil, nil, err
			}
			fn := map[string]any{"name": wire(t.Name), "parameters": params}
			if t.Description != "" {
				fn["description"] = t.Description
			}
			if strict {
				fn["strict"] = true
			}
			tools = append(tools, map[string]any{"type": "function", "function": fn})
		}
		setTools(body, req, tools)
	} else {
		clearTools(body)
	}

	if r := req.Reasoning; r != nil {
		if p.opts.Name == "openrouter" {
			ro := map[string]any{}
			if r.Effort != "" {
				ro["effort"] = r.Effort
			} else if r.MaxTokens > 0 {
				ro["max_tokens"] = r.MaxTokens
			}
			if r.Exclude {
				ro["exclude"] = true
			}
			if len(ro) > 0 {
				body["reasoning"] = ro
			}
		} else if r.Effort != "" {
			body["reasoning_effort"] = r.Effort
		}
	}

	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
	} else {
		delete(body, "stream")
		delete(body, "stream_options")
	}
	b, err := json.Marshal(body)
	return b, names, err
}

// message maps one LLMMessage to its wire form.
func (p *Provider) message(m weft.LLMMessage, wire func(string) string) map[string]any {
	out := map[string]any{}
	switch m.Role {
	case weft.RoleTool:
		out["role"] = "tool"
		out["tool_call_id"] = m.ToolCallID
		out["content"] = m.Text() // always a plain string
		return out
	case weft.RoleDeveloper:
		if p.opts.Name == "openai" {
			out["role"] = "developer"
		} else {
			out["role"] = "system"
		}
		out["content"] = m.Text()
	case weft.RoleSystem:
		out["role"] = "system"
		out["content"] = m.Text()
	case weft.RoleAssistant:
		out["role"] = "assistant"
		text := m.Text()
		if text != "" || len(m.ToolCalls) == 0 {
			out["content"] = text
		} else {
			out["content"] = nil
		}
		if len(m.ToolCalls) > 0 {
			calls := make([]map[string]any, len(m.ToolCalls))
			for i, c := range m.ToolCalls {
				args := c.Arguments
				if args == "" {
					args = "{}"
				}
				calls[i] = map[string]any{"id": c.ID, "type": "function",
					"function": map[string]any{"name": wire(c.Name), "arguments": args}}
			}
			out["tool_calls"] = calls
		}
		if p.opts.Name == "openrouter" {
			// OpenRouter wants the reasoning it returned back on the same assistant message, verbatim,
			// to continue reasoning across tool use; other providers' blocks are left out.
			if d := metadataBlocks(m.Metadata, "reasoning_blocks", isReasoningDetail); len(d) > 0 {
				out["reasoning_details"] = d
			}
		}
	default:
		out["role"] = string(m.Role)
		if len(m.Parts) == 0 {
			out["content"] = m.Content
		} else {
			out["content"] = contentParts(m.Parts)
		}
	}
	if m.Name != "" {
		out["name"] = m.Name
	}
	return out
}

// contentParts maps multi-part user content: text, image_url for images, file for data: files,
// input_audio for data: audio; media the wire cannot carry becomes a text note.
func contentParts(parts []weft.ContentPart) []map[string]any {
	out := make([]map[string]any, 0, len(parts))
	for _, pt := range parts {
		switch pt.Type {
		case weft.PartText:
			out = append(out, map[string]any{"type": "text", "text": pt.Text})
		case weft.PartImage:
			if !sendableURL(pt.URL) {
				out = append(out, note("Image", pt))
				continue
			}
			iu := map[string]any{"url": pt.URL}
			if d, ok := pt.Options["detail"].(string); ok && d != "" {
				iu["detail"] = d
			}
			out = append(out, map[string]any{"type": "image_url", "image_url": iu})
		case weft.PartFile:
			if !strings.HasPrefix(pt.URL, "data:") {
				out = append(out, note("File", pt))
				continue
			}
			f := map[string]any{"file_data": pt.URL}
			if pt.Description != "" {
				f["filename"] = pt.Description
			} else {
				f["filename"] = "file"
			}
			out = append(out, map[string]any{"type": "file", "file": f})
		case weft.PartAudio:
			if a, ok := inputAudio(pt); ok {
				out = append(out, a)
			} else {
				out = append(out, note("Audio", pt))
			}
		default:
			out = append(out, map[string]any{"type": "text", "text": pt.Text})
		}
	}
	return out
}

// setTools puts the offered tools with the tool choice and the parallel flag into body (both
// wires name them alike); with no tools, any such keys the options brought are removed.
func setTools[T any](body map[string]any, req *weft.Request, tools []T) {
	if len(tools) == 0 {
		clearTools(body)
		return
	}
	body["tools"] = tools
	if req.ToolChoice != "" {
		body["tool_choice"] = string(req.ToolChoice)
	}
	body["parallel_tool_calls"] = req.ParallelToolCalls
}

// clearTools removes the tool keys a request without tools must not carry.
func clearTools(body map[string]any) {
	delete(body, "tools")
	delete(body, "tool_choice")
	delete(body, "parallel_tool_calls")
}

// inputAudio is an audio part as both wires take it (base64 data and wav/mp3 format); false when
// the part is not a data: URI.
func inputAudio(pt weft.ContentPart) (map[string]any, bool) {
	d, ok := weft.ParseDataURI(pt.URL)
	if !ok || !d.Base64 {
		return nil, false
	}
	format := "wav"
	if strings.Contains(d.MediaType, "mp3") || strings.Contains(d.MediaType, "mpeg") {
		format = "mp3"
	}
	return map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": d.Data, "format": format}}, true
}

func sendableURL(u string) bool {
	return strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

func note(kind string, pt weft.ContentPart) map[string]any {
	s := "[" + kind + ": " + pt.URL
	if pt.Description != "" {
		s += " (" + pt.Description + ")"
	}
	return map[string]any{"type": "text", "text": s + "]"}
}

// metadataBlocks returns the JSON objects of the list kept under key (a single object counts as a
// list of one) that keep accepts; nil when there are none or the value is not JSON.
func metadataBlocks(md map[string]any, key string, keep func(json.RawMessage) bool) []json.RawMessage {
	raw, ok := weft.MetadataJSON(md[key])
	if !ok {
		return nil
	}
	var list []json.RawMessage
	if raw[0] == '{' {
		list = []json.RawMessage{raw}
	} else if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	out := make([]json.RawMessage, 0, len(list))
	for _, b := range list {
		if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '{' && keep(b) {
			out = append(out, b)
		}
	}
	return out
}

// blockType returns the "type" field of a JSON object.
func blockType(b json.RawMessage) string {
	var v struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Type
}

// isReasoningDetail accepts OpenRouter reasoning_details entries (reasoning.text,
// reasoning.summary, reasoning.encrypted).
func isReasoningDetail(b json.RawMessage) bool { return strings.HasPrefix(blockType(b), "reasoning.") }
