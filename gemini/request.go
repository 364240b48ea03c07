package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
)

// wireRequest is the generateContent request body.
type wireRequest struct {
	SystemInstruction *wireContent    `json:"systemInstruction,omitempty"`
	Contents          []wireContent   `json:"contents"`
	Tools             []any           `json:"tools,omitempty"` // wireTool or a built-in tool object
	ToolConfig        *wireToolConfig `json:"toolConfig,omitempty"`
	GenerationConfig  *wireGenConfig  `json:"generationConfig,omitempty"`
}

// wireContent is one turn (role user or model) or the system instruction (no role).
type wireContent struct {
	Role  string     `json:"role,omitempty"`
	Parts []wirePart `json:"parts"`
}

// wirePart is the union of the parts Weft sends and reads.
type wirePart struct {
	Text                string                `json:"text,omitempty"`
	Thought             bool                  `json:"thought,omitempty"`
	ThoughtSignature    string                `json:"thoughtSignature,omitempty"`
	InlineData          *wireBlob             `json:"inlineData,omitempty"`
	FileData            *wireFileData         `json:"fileData,omitempty"`
	FunctionCall        *wireFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse    *wireFunctionResponse `json:"functionResponse,omitempty"`
	ExecutableCode      *wireExecutableCode   `json:"executableCode,omitempty"`
	CodeExecutionResult *wireCodeResult       `json:"codeExecutionResult,omitempty"`
	// raw is a part exactly as Gemini sent it, set for code execution parts: they go back to
	// Gemini verbatim (thought signature and fields Weft does not know included).
	raw json.RawMessage
}

// plainPart is wirePart without its JSON methods.
type plainPart wirePart

// MarshalJSON writes a kept part verbatim, any other part field by field.
func (p wirePart) MarshalJSON() ([]byte, error) {
	if p.raw != nil {
		return p.raw, nil
	}
	return json.Marshal(plainPart(p))
}

type wireBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type wireFileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type wireFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type wireFunctionResponse struct {
	Name     string            `json:"name"`
	Response map[string]string `json:"response"`
}

type wireTool struct {
	FunctionDeclarations []wireFunctionDecl `json:"functionDeclarations"`
}

type wireFunctionDecl struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

type wireToolConfig struct {
	FunctionCallingConfig struct {
		Mode string `json:"mode"`
	} `json:"functionCallingConfig"`
}

type wireGenConfig struct {
	Temperature     *float64            `json:"temperature,omitempty"`
	TopP            *float64            `json:"topP,omitempty"`
	TopK            *int                `json:"topK,omitempty"`
	MaxOutputTokens *int                `json:"maxOutputTokens,omitempty"`
	StopSequences   []string            `json:"stopSequences,omitempty"`
	Seed            *int64              `json:"seed,omitempty"`
	ThinkingConfig  *wireThinkingConfig `json:"thinkingConfig,omitempty"`
	// ResponseMimeType and ResponseSchema ask for a structured answer.
	ResponseMimeType string         `json:"responseMimeType,omitempty"`
	ResponseSchema   map[string]any `json:"responseSchema,omitempty"`
}

type wireThinkingConfig struct {
	ThinkingBudget  int  `json:"thinkingBudget"`
	IncludeThoughts bool `json:"includeThoughts,omitempty"`
}

// transportKeys are options that configure the transport (or the adapter) and never reach the
// body. strictTools asks other adapters for strict function tools; Gemini has no strict mode (its
// function declarations take an OpenAPI schema subset and no strict flag), so it is ignored here.
var transportKeys = map[string]bool{"baseUrl": true, "headers": true, "stream": true, "strictTools": true}

// mappedKeys are Weft model options translated into generationConfig fields.
var mappedKeys = map[string]bool{"temperature": true, "maxOutputTokens": true, "max_tokens": true,
	"topP": true, "top_p": true, "topK": true, "top_k": true, "stop": true, "stopSequences": true,
	"seed": true}

// effortBudgets are the thinking budgets of the reasoning efforts when no maxTokens is given.
var effortBudgets = map[string]int{"minimal": 1024, "low": 1024, "medium": 8192, "high": 24576}

// buildRequest encodes req as a generateContent body; bt are the request's built-in tools.
func buildRequest(req *weft.Request, bt *builtins) ([]byte, error) {
	var w wireRequest
	msgs := req.Messages
	var system []wirePart
	for len(msgs) > 0 && (msgs[0].Role == weft.RoleSystem || msgs[0].Role == weft.RoleDeveloper) {
		if t := msgs[0].Text(); t != "" {
			system = append(system, wirePart{Text: t})
		}
		msgs = msgs[1:]
	}
	if len(system) > 0 {
		w.SystemInstruction = &wireContent{Parts: system}
	}
	var err error
	if w.Contents, err = convertMessages(msgs); err != nil {
		return nil, err
	}

	var decls []wireFunctionDecl
	for _, t := range req.Tools {
		if t.Provider != "" {
			continue // built-in tools come from bt; other providers' are not offered here
		}
		d := wireFunctionDecl{Name: t.Name, Description: t.Description}
		if t.Parameters != nil {
			if d.Parameters, err = translateSchema(t.Parameters); err != nil {
				return nil, fmt.Errorf("tool %s: %w", t.Name, err)
			}
		}
		decls = append(decls, d)
	}
	if len(decls) > 0 {
		w.Tools = []any{wireTool{FunctionDeclarations: decls}}
		tc := &wireToolConfig{}
		switch req.ToolChoice {
		case weft.ToolChoiceNone:
			tc.FunctionCallingConfig.Mode = "NONE"
		case weft.ToolChoiceRequired:
			tc.FunctionCallingConfig.Mode = "ANY"
		default:
			tc.FunctionCallingConfig.Mode = "AUTO"
		}
		w.ToolConfig = tc
	}
	w.Tools = append(w.Tools, bt.tools...)

	gc := generationConfig(req)
	if req.Output != nil {
		rs, err := translateSchema(req.Output.Schema)
		if err != nil {
			return nil, err
		}
		gc.ResponseMimeType, gc.ResponseSchema = "application/json", rs
	}
	if !gc.empty() {
		w.GenerationConfig = gc
	}

	body, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	return mergeOptions(body, req.Options, bt.options)
}

func (g *wireGenConfig) empty() bool {
	return g.Temperature == nil && g.TopP == nil && g.TopK == nil && g.MaxOutputTokens == nil &&
		g.StopSequences == nil && g.Seed == nil && g.ThinkingConfig == nil && g.ResponseMimeType == ""
}

// generationConfig maps modelOptions and reasoning.
func generationConfig(req *weft.Request) *wireGenConfig {
	gc := &wireGenConfig{}
	if v, ok := weft.OptionNumber(req.Options, "temperature"); ok {
		gc.Temperature = &v
	}
	if v, ok := weft.OptionNumber(req.Options, "topP", "top_p"); ok {
		gc.TopP = &v
	}
	if v, ok := weft.OptionNumber(req.Options, "topK", "top_k"); ok {
		k := int(v)
		gc.TopK = &k
	}
	if v, ok := weft.OptionNumber(req.Options, "maxOutputTokens", "max_tokens"); ok && v > 0 {
		n := int(v)
		gc.MaxOutputTokens = &n
	}
	if v, ok := weft.OptionNumber(req.Options, "seed"); ok {
		s := int64(v)
		gc.Seed = &s
	}
	gc.StopSequences = weft.OptionStrings(req.Options, "stop", "stopSequences")
	if r := req.Reasoning; r != nil && (r.MaxTokens > 0 || r.Effort != "") {
		budget := r.MaxTokens
		if budget <= 0 {
			budget = effortBudgets[r.Effort]
			if budget == 0 {
				budget = effortBudgets["medium"]
			}
		}
		gc.ThinkingConfig = &wireThinkingConfig{ThinkingBudget: budget, IncludeThoughts: !r.Exclude}
	}
	return gc
}

// mergeOptions merges the options that are neither transport nor mapped keys nor built-in tool
// settings (skip) into the body; an object option merges key by key into an object the adapter
// built (e.g. generationConfig).
func mergeOptions(body []byte, opts map[string]any, skip map[string]bool) ([]byte, error) {
	var extra map[string]any
	for k, v := range opts {
		if transportKeys[k] || mappedKeys[k] || skip[k] {
			continue
		}
		if extra == nil {
			extra = map[string]any{}
		}
		extra[k] = v
	}
	if len(extra) == 0 {
		return body, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	for k, v := range extra {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("option %s: %w", k, err)
		}
		if old, ok := m[k]; ok && len(old) > 0 && old[0] == '{' && len(raw) > 0 && raw[0] == '{' {
			var a, b map[string]json.RawMessage
			if json.Unmarshal(old, &a) == nil && json.Unmarshal(raw, &b) == nil {
				for bk, bv := range b {
					a[bk] = bv
				}
				if raw, err = json.Marshal(a); err != nil {
					return nil, err
				}
			}
		}
		m[k] = raw
	}
	return json.Marshal(m)
}

// convertMessages translates the conversation after the leading system messages into user/model
// turns, merging neighbours of the same role (consecutive tool results form one user turn).
//
// A provider-executed call of an earlier Gemini reply is replayed from what its tool message keeps
// in metadata provider_raw: code execution as its verbatim executableCode and codeExecutionResult
// parts in the model turn, before the text (the code ran before the answer it informs); Google
// Search grounding and URL context not at all, as Gemini takes no such parts (the text they
// informed stays). Either way the tool message sends nothing. A call without provider_raw (made
// by another provider) goes as an ordinary functionCall/functionResponse pair.
func convertMessages(msgs []weft.LLMMessage) ([]wireContent, error) {
	var replays map[string]replay // tool call id → how the provider-executed call goes back
	for _, m := range msgs {
		if m.Role != weft.RoleTool || m.ToolCallID == "" {
			continue
		}
		if r, ok := providerRaw(m.Metadata); ok {
			if replays == nil {
				replays = map[string]replay{}
			}
			replays[m.ToolCallID] = r
		}
	}
	out := make([]wireContent, 0, len(msgs))
	callNames := map[string]string{} // tool call id → name, for tool results without a name
	for _, m := range msgs {
		var role string
		var parts []wirePart
		switch m.Role {
		case weft.RoleSystem, weft.RoleDeveloper:
			role = "user"
			if t := m.Text(); t != "" {
				parts = []wirePart{{Text: "System note: " + t}}
			}
		case weft.RoleUser:
			role = "user"
			parts = userParts(m)
		case weft.RoleAssistant:
			role = "model"
			sigs := signatures(m.Metadata)
			for _, tc := range m.ToolCalls {
				for _, p := range replays[tc.ID].parts {
					parts = append(parts, wirePart{raw: p})
				}
			}
			if t := m.Text(); t != "" {
				parts = append(parts, wirePart{Text: t, ThoughtSignature: sigs.text})
			}
			for i, tc := range m.ToolCalls {
				if _, ok := replays[tc.ID]; ok {
					continue
				}
				if tc.ID != "" {
					callNames[tc.ID] = tc.Name
				}
				args := json.RawMessage(strings.TrimSpace(tc.Arguments))
				if len(args) == 0 || args[0] != '{' || !json.Valid(args) {
					args = json.RawMessage(`{}`)
				}
				part := wirePart{FunctionCall: &wireFunctionCall{Name: tc.Name, Args: args}}
				if i < len(sigs.calls) {
					part.ThoughtSignature = sigs.calls[i]
				}
				parts = append(parts, part)
			}
		case weft.RoleTool:
			role = "user"
			if _, ok := replays[m.ToolCallID]; ok {
				continue // replayed inside the model turn, or not replayable
			}
			parts = toolResultParts(m, callNames)
		default:
			return nil, fmt.Errorf("unsupported message role %q", m.Role)
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			continue
		}
		out = append(out, wireContent{Role: role, Parts: parts})
	}
	return out, nil
}

func userParts(m weft.LLMMessage) []wirePart {
	if len(m.Parts) == 0 {
		if m.Content == "" {
			return nil
		}
		return []wirePart{{Text: m.Content}}
	}
	parts := make([]wirePart, 0, len(m.Parts))
	for _, p := range m.Parts {
		if wp, ok := mediaPart(p); ok {
			parts = append(parts, wp)
		}
	}
	return parts
}

// mediaPart translates a content part: text; media as inlineData from data: URIs and fileData
// from http(s)/gs URLs; other references become a short text note.
func mediaPart(p weft.ContentPart) (wirePart, bool) {
	if p.Type == weft.PartText {
		return wirePart{Text: p.Text}, p.Text != ""
	}
	if d, ok := weft.ParseDataURI(p.URL); ok && d.Base64 {
		mt, data := d.MediaType, d.Data
		if mt == "" {
			mt = p.MimeType
		}
		return wirePart{InlineData: &wireBlob{MimeType: mt, Data: data}}, true
	}
	if strings.HasPrefix(p.URL, "http://") || strings.HasPrefix(p.URL, "https://") || strings.HasPrefix(p.URL, "gs://") {
		return wirePart{FileData: &wireFileData{MimeType: p.MimeType, FileURI: p.URL}}, true
	}
	desc := p.Description
	if desc == "" {
		desc = p.URL
	}
	return wirePart{Text: fmt.Sprintf("[%s: %s]", p.Type, desc)}, true
}

// toolResultParts is a tool message as a functionResponse part ({result} or {error}), followed by
// its media parts.
func toolResultParts(m weft.LLMMessage, callNames map[string]string) []wirePart {
	name := m.Name
	if name == "" {
		name = callNames[m.ToolCallID]
	}
	key := "result"
	if m.ToolStatus == weft.ToolError {
		key = "error"
	}
	parts := []wirePart{{FunctionResponse: &wireFunctionResponse{Name: name, Response: map[string]string{key: m.Text()}}}}
	for _, p := range m.Parts {
		if p.Type == weft.PartText {
			continue
		}
		if wp, ok := mediaPart(p); ok {
			parts = append(parts, wp)
		}
	}
	return parts
}

// sigSet are the thought signatures kept on an assistant message for replay.
type sigSet struct {
	text  string
	calls []string
}

// signatures reads metadata.reasoning_blocks as written from Response.ReasoningBlocks: the list
// of {kind: text|functionCall|providerCall, thoughtSignature} entries in part order. There is one
// functionCall or providerCall entry per tool call, in ToolCalls order; providerCall entries
// (provider-executed calls, whose signatures travel inside their kept parts) only hold the place.
func signatures(md map[string]any) sigSet {
	raw, ok := weft.MetadataJSON(md["reasoning_blocks"])
	if !ok {
		return sigSet{}
	}
	var list []signatureBlock
	if json.Unmarshal(raw, &list) != nil {
		return sigSet{}
	}
	var s sigSet
	for _, b := range list {
		switch b.Kind {
		case "text":
			if s.text == "" {
				s.text = b.ThoughtSignature
			}
		case "functionCall", "providerCall":
			s.calls = append(s.calls, b.ThoughtSignature)
		}
	}
	return s
}

// signatureBlock is one thought signature kept in Response.ReasoningBlocks.
type signatureBlock struct {
	Kind             string `json:"kind"`
	ThoughtSignature string `json:"thoughtSignature"`
}
