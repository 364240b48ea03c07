package openai

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/weft-agents/weft"
)

// responsesOptionKeys maps Weft's camelCase model options to Responses fields. An empty value drops
// the option: the Responses API has no stop, seed, top_k or penalty fields and rejects a request
// that carries an unknown parameter, so a model option meant for chat completions is left out
// instead of failing every call.
var responsesOptionKeys = map[string]string{
	"temperature":      "temperature",
	"maxOutputTokens":  "max_output_tokens",
	"topP":             "top_p",
	"stop":             "",
	"seed":             "",
	"topK":             "",
	"frequencyPenalty": "",
	"presencePenalty":  "",
}

// responsesTools maps the names a Responses reply uses back to the request's tools.
type responsesTools struct {
	// names maps wire function names to the request's tool names.
	names toolNames
	// hosted maps the output item type of a hosted tool's call (web_search_call) to the Weft name of
	// the provider tool that was offered for it.
	hosted map[string]string
}

// hostedCallTypes are the output items of OpenAI-hosted tools recognised even when the request did
// not name the tool (a reply is still read whole); the Weft name is then the tool type.
var hostedCallTypes = map[string]bool{
	"web_search_call":       true,
	"code_interpreter_call": true,
	"file_search_call":      true,
	"image_generation_call": true,
	"mcp_call":              true,
}

// hostedTool returns the Responses tool entry of the provider-executed tool t: the hosted tool type
// is its name (web_search, web_search_preview, file_search, image_generation, any type OpenAI adds),
// code_interpreter gets an automatic container, and the keys of a map-valued request option named
// after the tool are added and may override those fields (vector_store_ids for file_search,
// search_context_size for web_search, a type for a tool offered under another name).
func hostedTool(t weft.ToolSpec, req *weft.Request) map[string]any {
	obj := map[string]any{"type": t.Name}
	if t.Name == "code_interpreter" {
		obj["container"] = map[string]any{"type": "auto"}
	}
	switch opts := req.Option(t.Name).(type) {
	case map[string]any:
		for k, v := range opts {
			obj[k] = v
		}
	case map[string]string:
		for k, v := range opts {
			obj[k] = v
		}
	}
	return obj
}

// hostedCallType is the output item type of a hosted tool's calls.
func hostedCallType(toolType string) string {
	if strings.HasPrefix(toolType, "web_search") { // web_search, web_search_preview, dated variants
		return "web_search_call"
	}
	return toolType + "_call"
}

// callResponses sends one request to {baseURL}/responses and reads the reply, streamed when the
// model's capabilities allow.
func (p *Provider) callResponses(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
	stream := req.Model.Capabilities.Streaming()
	body, tools, err := p.buildResponsesBody(req, stream)
	if err != nil {
		return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Message: p.opts.Name + ": " + err.Error(), Err: err}
	}
	res, err := p.post(ctx, req, "responses", body, stream)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	res.Body = weft.LimitReply(res.Body, req.Model.ReplyLimit())
	var out *weft.Response
	if stream && isEventStream(res) {
		out, err = p.readResponsesStream(ctx, req, res, tools, onChunk)
	} else {
		out, err = p.readResponsesJSON(ctx, req, res, tools, onChunk)
	}
	if err != nil {
		return nil, err
	}
	out.RequestBody = body
	return out, nil
}

// buildResponsesBody builds the JSON body of a Responses request and the name maps to read its
// reply with.
func (p *Provider) buildResponsesBody(req *weft.Request, stream bool) ([]byte, responsesTools, error) {
	body := p.bodyOptions(req, responsesOptionKeys)
	rt := responsesTools{names: toolNames{}, hosted: map[string]string{}}
	wire := func(n string) string {
		w := WireToolName(n)
		if w != n {
			rt.names[w] = n
		}
		return w
	}

	// Weft owns the conversation: nothing is kept on OpenAI's side unless providerOptions ask for it.
	if _, set := body["store"]; !set {
		body["store"] = false
	}
	stored := body["store"] != false

	if r := req.Reasoning; r != nil {
		ro := map[string]any{}
		if prev, ok := body["reasoning"].(map[string]any); ok {
			for k, v := range prev {
				ro[k] = v
			}
		}
		if r.Effort != "" {
			ro["effort"] = r.Effort
		}
		if _, set := ro["summary"]; !set && !r.Exclude {
			ro["summary"] = "auto" // the readable reasoning is only the summary on this wire
		}
		if len(ro) > 0 {
			body["reasoning"] = ro
		}
	}
	// Without storage, reasoning can only be carried to the next request as encrypted content. Asked
	// only when reasoning is in use: models without reasoning reject the include.
	reasoning := body["reasoning"] != nil || len(req.Model.Capabilities.ReasoningLevels) > 0
	if !stored && reasoning && (req.Reasoning == nil || !req.Reasoning.Exclude) {
		body["include"] = withInclude(body["include"], "reasoning.encrypted_content")
	}

	body["model"] = req.Model.Model
	body["input"] = p.responsesInput(req.Messages, wire, stored)
	if req.Output != nil {
		js, err := outputSchema(req.Output)
		if err != nil {
			return nil, rt, err
		}
		text, _ := body["text"].(map[string]any)
		if text == nil {
			text = map[string]any{}
		}
		text["format"] = map[string]any{"type": "json_schema", "name": outputName(req.Output), "schema": js, "strict": true}
		body["text"] = text
	}

	caps := req.Model.Capabilities
	if caps.ToolCalls() && len(req.Tools) > 0 && req.ToolChoice != weft.ToolChoiceNone {
		strict := strictTools(req)
		tools := make([]map[string]any, 0, len(req.Tools))
		for _, t := range req.Tools {
			if t.Provider != "" {
				if !p.ownTool(t, req) {
					continue // another provider's tool has no form here
				}
				ht := hostedTool(t, req)
				typ, _ := ht["type"].(string)
				rt.hosted[hostedCallType(typ)] = t.Name
				tools = append(tools, ht)
				continue
			}
			params, err := toolParameters(t, strict)
			if err != nil {
				return nil, rt, err
			}
			// strict is always sent: the Responses API defaults it to true, which would reject the
			// non-strict schemas Weft offers without the strictTools option.
			fn := map[string]any{"type": "function", "name": wire(t.Name), "parameters": params, "strict": strict}
			if t.Description != "" {
				fn["description"] = t.Description
			}
			tools = append(tools, fn)
		}
		setTools(body, req, tools)
	} else {
		clearTools(body)
	}

	if stream {
		body["stream"] = true
	} else {
		delete(body, "stream")
	}
	delete(body, "stream_options")
	b, err := json.Marshal(body)
	return b, rt, err
}

// withInclude returns the include list v (a []string or []any from options) with s added once.
func withInclude(v any, s string) []any {
	var out []any
	switch x := v.(type) {
	case []any:
		out = append(out, x...)
	case []string:
		for _, e := range x {
			out = append(out, e)
		}
	case string:
		out = append(out, x)
	}
	for _, e := range out {
		if e == s {
			return out
		}
	}
	return append(out, s)
}

// responsesInput maps the messages to input items. An assistant message becomes its replayed
// reasoning items, then its text as a message item, then one item per call: the provider's own item
// for a provider-executed call whose tool message carries metadata provider_raw, a function_call
// otherwise. Tool messages become function_call_output items, except those of provider-executed
// calls, whose result is inside the replayed item.
func (p *Provider) responsesInput(msgs []weft.LLMMessage, wire func(string) string, stored bool) []json.RawMessage {
	raws := map[string]json.RawMessage{}
	for _, m := range msgs {
		if m.Role != weft.RoleTool || m.ToolCallID == "" {
			continue
		}
		if raw, ok := weft.MetadataJSON(m.Metadata["provider_raw"]); ok && raw[0] == '{' {
			raws[m.ToolCallID] = raw
		}
	}
	sent := map[string]bool{}
	items := make([]json.RawMessage, 0, len(msgs)+2)
	add := func(v any) {
		if b, err := json.Marshal(v); err == nil {
			items = append(items, b)
		}
	}
	for _, m := range msgs {
		switch m.Role {
		case weft.RoleSystem:
			add(inputMessage{Type: "message", Role: "system", Content: m.Text()})
		case weft.RoleDeveloper:
			role := "system"
			if p.opts.Name == "openai" {
				role = "developer"
			}
			add(inputMessage{Type: "message", Role: role, Content: m.Text()})
		case weft.RoleAssistant:
			items = append(items, metadataBlocks(m.Metadata, "reasoning_blocks", func(b json.RawMessage) bool {
				return replayableReasoning(b, stored)
			})...)
			if text := m.Text(); text != "" {
				add(inputMessage{Type: "message", Role: "assistant", Content: text})
			}
			for _, c := range m.ToolCalls {
				if raw, ok := raws[c.ID]; ok {
					if !sent[c.ID] {
						items = append(items, raw)
						sent[c.ID] = true
					}
					continue
				}
				args := c.Arguments
				if args == "" {
					args = "{}"
				}
				add(functionCall{Type: "function_call", CallID: c.ID, Name: wire(c.Name), Arguments: args})
			}
		case weft.RoleTool:
			if raw, ok := raws[m.ToolCallID]; ok {
				if !sent[m.ToolCallID] { // its call is not in the history: the item still carries the result
					items = append(items, raw)
					sent[m.ToolCallID] = true
				}
				continue
			}
			add(functionCallOutput{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Text()})
		default:
			role := string(m.Role)
			if len(m.Parts) == 0 {
				add(inputMessage{Type: "message", Role: role, Content: m.Content})
			} else {
				add(inputMessage{Type: "message", Role: role, Content: responsesParts(m.Parts)})
			}
		}
	}
	return items
}

// replayableReasoning accepts a kept reasoning output item that can go back as input: a
// reasoning item, which without storage must carry its encrypted content (an id alone refers to
// nothing stored). Blocks of other providers (after a fallback) are left out.
func replayableReasoning(b json.RawMessage, stored bool) bool {
	var v struct {
		Type             string  `json:"type"`
		EncryptedContent *string `json:"encrypted_content"`
	}
	if json.Unmarshal(b, &v) != nil || v.Type != "reasoning" {
		return false
	}
	return stored || v.EncryptedContent != nil && *v.EncryptedContent != ""
}

// inputMessage is a Responses message input item; Content is a string or a list of parts.
type inputMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// functionCall is a function_call input item (a call the model made earlier).
type functionCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// functionCallOutput is a function_call_output input item; the output is a plain string.
type functionCallOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// responsesParts maps multi-part content to Responses input parts: input_text, input_image (http or
// data: URLs), input_file (data: or http URLs) and input_audio (data: URIs); media the wire cannot
// carry becomes a text note.
func responsesParts(parts []weft.ContentPart) []map[string]any {
	out := make([]map[string]any, 0, len(parts))
	textNote := func(kind string, pt weft.ContentPart) map[string]any {
		return map[string]any{"type": "input_text", "text": note(kind, pt)["text"]}
	}
	for _, pt := range parts {
		switch pt.Type {
		case weft.PartImage:
			if !sendableURL(pt.URL) {
				out = append(out, textNote("Image", pt))
				continue
			}
			detail := "auto"
			if d, ok := pt.Options["detail"].(string); ok && d != "" {
				detail = d
			}
			out = append(out, map[string]any{"type": "input_image", "image_url": pt.URL, "detail": detail})
		case weft.PartFile:
			switch {
			case strings.HasPrefix(pt.URL, "data:"):
				name := pt.Description
				if name == "" {
					name = "file"
				}
				out = append(out, map[string]any{"type": "input_file", "file_data": pt.URL, "filename": name})
			case sendableURL(pt.URL):
				out = append(out, map[string]any{"type": "input_file", "file_url": pt.URL})
			default:
				out = append(out, textNote("File", pt))
			}
		case weft.PartAudio:
			if a, ok := inputAudio(pt); ok {
				out = append(out, a)
			} else {
				out = append(out, textNote("Audio", pt))
			}
		default:
			out = append(out, map[string]any{"type": "input_text", "text": pt.Text})
		}
	}
	return out
}
