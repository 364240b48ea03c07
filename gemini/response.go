package gemini

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/weft-agents/weft"
)

// wireResponse is a GenerateContentResponse (also one streamed chunk).
type wireResponse struct {
	Candidates     []wireCandidate `json:"candidates"`
	PromptFeedback *struct {
		BlockReason        string `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	} `json:"promptFeedback"`
	UsageMetadata *wireUsage `json:"usageMetadata"`
	ModelVersion  string     `json:"modelVersion"`
	ResponseID    string     `json:"responseId"`
	Error         *wireError `json:"error"`
}

type wireCandidate struct {
	Content *struct {
		Role  string     `json:"role"`
		Parts []wirePart `json:"parts"`
	} `json:"content"`
	FinishReason  string `json:"finishReason"`
	FinishMessage string `json:"finishMessage"`
	Index         int    `json:"index"`
	// GroundingMetadata and URLContextMetadata report Google Search and URL context use.
	GroundingMetadata  json.RawMessage `json:"groundingMetadata"`
	URLContextMetadata json.RawMessage `json:"urlContextMetadata"`
}

// wireUsage is Gemini's usageMetadata.
type wireUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

// weft converts usage: input includes cached and tool-use prompt tokens; output includes the
// thought tokens, which are also reported apart as reasoning tokens.
func (u *wireUsage) weft() weft.Usage {
	if u == nil {
		return weft.Usage{}
	}
	return weft.Usage{
		InputTokens:     u.PromptTokenCount + u.ToolUsePromptTokenCount,
		OutputTokens:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
		CachedTokens:    u.CachedContentTokenCount,
		ReasoningTokens: u.ThoughtsTokenCount,
	}
}

// assembler builds a weft.Response from one response or a sequence of streamed chunks.
type assembler struct {
	text, reasoning strings.Builder
	calls           []weft.ToolCall // function calls and code runs, in part order
	funcCalls       int             // how many of calls are function calls
	runs            []*codeRun
	grounding       json.RawMessage // the latest groundingMetadata
	urlContext      json.RawMessage // the latest urlContextMetadata
	metaCalls       int             // calls made from grounding and URL context metadata, last in calls
	sigs            []signatureBlock
	anySig          bool
	finish          string
	usage           *wireUsage
	model           string
	responseID      string
	tools           *builtins
	onChunk         func(weft.Chunk)
}

// newAssembler returns an assembler naming built-in tool calls after bt (nil: default names).
func newAssembler(bt *builtins, onChunk func(weft.Chunk)) *assembler {
	if bt == nil {
		bt = offeredBuiltins(&weft.Request{})
	}
	return &assembler{tools: bt, onChunk: onChunk}
}

// add folds one response (or chunk) in, decoded from data; it fails on an error object or a
// blocked prompt.
func (a *assembler) add(r *wireResponse, data []byte) error {
	if r.Error != nil {
		typ := typeForStatus(r.Error.Status)
		if typ == weft.ErrUnknown {
			typ = weft.ErrServer
		}
		msg := r.Error.Message
		if msg == "" {
			msg = "gemini: stream error " + r.Error.Status
		}
		return &callError{typ: typ, message: msg}
	}
	if r.ModelVersion != "" {
		a.model = r.ModelVersion
	}
	if r.ResponseID != "" {
		a.responseID = r.ResponseID
	}
	if r.UsageMetadata != nil {
		a.usage = r.UsageMetadata // later reports replace earlier ones
	}
	if len(r.Candidates) == 0 {
		if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
			msg := "gemini: prompt blocked: " + pf.BlockReason
			if pf.BlockReasonMessage != "" {
				msg += " (" + pf.BlockReasonMessage + ")"
			}
			return &callError{typ: weft.ErrInvalidRequest, message: msg}
		}
		return nil
	}
	c := r.Candidates[0]
	if present(c.GroundingMetadata) {
		a.grounding = c.GroundingMetadata // a later report replaces an earlier one
	}
	if present(c.URLContextMetadata) {
		a.urlContext = c.URLContextMetadata
	}
	if c.Content != nil {
		var raws []json.RawMessage
		for i, p := range c.Content.Parts {
			if p.ExecutableCode != nil || p.CodeExecutionResult != nil {
				// Code execution parts are kept verbatim; the chunk is decoded a second time for
				// their bytes only when it has some (most chunks have none).
				if raws == nil {
					raws = rawParts(data)
				}
				if i < len(raws) {
					p.raw = raws[i]
				} else {
					p.raw, _ = json.Marshal(plainPart(p))
				}
			}
			switch {
			case p.ExecutableCode != nil:
				a.calls = append(a.calls, weft.ToolCall{Name: a.tools.code, Arguments: codeArgs(p.ExecutableCode)})
				a.runs = append(a.runs, &codeRun{call: len(a.calls) - 1, id: p.ExecutableCode.ID, code: p.raw})
				a.sigs = append(a.sigs, signatureBlock{Kind: "providerCall"})
			case p.CodeExecutionResult != nil:
				a.addResult(p)
			case p.FunctionCall != nil:
				if a.onChunk != nil {
					a.onChunk(weft.Chunk{}) // progress: resets the engine's stall timer
				}
				args := strings.TrimSpace(string(p.FunctionCall.Args))
				if args == "" || args == "null" {
					args = "{}"
				} else {
					var buf bytes.Buffer
					if json.Compact(&buf, []byte(args)) == nil {
						args = buf.String()
					}
				}
				a.calls = append(a.calls, weft.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Arguments: args})
				a.funcCalls++
				a.sigs = append(a.sigs, signatureBlock{Kind: "functionCall", ThoughtSignature: p.ThoughtSignature})
			case p.Thought:
				a.reasoning.WriteString(p.Text)
				if p.Text != "" && a.onChunk != nil {
					a.onChunk(weft.Chunk{Reasoning: p.Text})
				}
			default:
				a.text.WriteString(p.Text)
				if p.Text != "" && a.onChunk != nil {
					a.onChunk(weft.Chunk{Text: p.Text})
				}
				if p.ThoughtSignature != "" {
					a.sigs = append(a.sigs, signatureBlock{Kind: "text", ThoughtSignature: p.ThoughtSignature})
				}
			}
			if p.ThoughtSignature != "" {
				a.anySig = true
			}
		}
	}
	if c.FinishReason != "" {
		a.finish = c.FinishReason
	}
	return nil
}

// addResult pairs a codeExecutionResult part with its executableCode: the one with the same id,
// else the latest without a result. A result without its code is ignored.
func (a *assembler) addResult(p wirePart) {
	id := p.CodeExecutionResult.ID
	for i := len(a.runs) - 1; i >= 0; i-- {
		r := a.runs[i]
		if r.result != nil || id != "" && r.id != "" && r.id != id {
			continue
		}
		r.result, r.outcome, r.output = p.raw, p.CodeExecutionResult.Outcome, p.CodeExecutionResult.Output
		return
	}
}

// rawParts returns the parts of a response's first candidate as sent (an empty list when there
// are none).
func rawParts(data []byte) []json.RawMessage {
	var r struct {
		Candidates []struct {
			Content *struct {
				Parts []json.RawMessage `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if json.Unmarshal(data, &r) != nil || len(r.Candidates) == 0 || r.Candidates[0].Content == nil {
		return []json.RawMessage{}
	}
	return r.Candidates[0].Content.Parts
}

// present reports whether a raw JSON field was sent with a value.
func present(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// providerCalls gives the code runs their ids and results, and adds the calls and results of
// Google Search grounding and URL context.
func (a *assembler) providerCalls() []weft.ProviderToolResult {
	if len(a.runs) == 0 && a.grounding == nil && a.urlContext == nil {
		return nil
	}
	prefix := callPrefix(a.responseID)
	var out []weft.ProviderToolResult
	for i, r := range a.runs {
		id := runID(prefix, i+1)
		a.calls[r.call].ID = id
		out = append(out, codeResult(id, r))
	}
	if a.grounding != nil {
		if call, res, ok := groundingCall(prefix+"_search", a.tools.search, a.grounding); ok {
			a.calls = append(a.calls, call)
			a.sigs = append(a.sigs, signatureBlock{Kind: "providerCall"})
			a.metaCalls++
			out = append(out, res)
		}
	}
	if a.urlContext != nil {
		if call, res, ok := urlContextCall(prefix+"_url_context", a.tools.urls, a.urlContext); ok {
			a.calls = append(a.calls, call)
			a.sigs = append(a.sigs, signatureBlock{Kind: "providerCall"})
			a.metaCalls++
			out = append(out, res)
		}
	}
	return out
}

// response returns the assembled reply; raw is the wire body for the log (nil: build one). A reply
// whose only calls are provider-executed finishes with stop, not tool_calls: nothing is left for
// Weft to run.
func (a *assembler) response(raw []byte) *weft.Response {
	results := a.providerCalls()
	resp := &weft.Response{Text: a.text.String(), Reasoning: a.reasoning.String(), ToolCalls: a.calls,
		ProviderResults: results, FinishReason: finishReason(a.finish, a.funcCalls > 0), Usage: a.usage.weft(), ModelID: a.model}
	if a.anySig {
		resp.ReasoningBlocks, _ = json.Marshal(a.sigs)
	}
	if raw == nil {
		raw = a.wireBody()
	}
	resp.ResponseBody = raw
	return resp
}

// wireBody renders the assembled reply as one generateContent response for the log.
func (a *assembler) wireBody() []byte {
	var parts []wirePart
	if s := a.reasoning.String(); s != "" {
		parts = append(parts, wirePart{Text: s, Thought: true})
	}
	if s := a.text.String(); s != "" {
		parts = append(parts, wirePart{Text: s})
	}
	var runs map[int]*codeRun // call index → code run
	for _, r := range a.runs {
		if runs == nil {
			runs = map[int]*codeRun{}
		}
		runs[r.call] = r
	}
	for i, c := range a.calls {
		if r := runs[i]; r != nil {
			parts = append(parts, wirePart{raw: r.code})
			if r.result != nil {
				parts = append(parts, wirePart{raw: r.result})
			}
			continue
		}
		if i >= len(a.calls)-a.metaCalls {
			break // grounding and URL context calls are candidate metadata, not parts
		}
		args := json.RawMessage(c.Arguments)
		if !json.Valid(args) {
			args, _ = json.Marshal(c.Arguments)
		}
		parts = append(parts, wirePart{FunctionCall: &wireFunctionCall{ID: c.ID, Name: c.Name, Args: args}})
	}
	type content struct {
		Role  string     `json:"role"`
		Parts []wirePart `json:"parts"`
	}
	type candidate struct {
		Content            content         `json:"content"`
		FinishReason       string          `json:"finishReason,omitempty"`
		GroundingMetadata  json.RawMessage `json:"groundingMetadata,omitempty"`
		URLContextMetadata json.RawMessage `json:"urlContextMetadata,omitempty"`
	}
	b, _ := json.Marshal(struct {
		Candidates    []candidate `json:"candidates"`
		UsageMetadata *wireUsage  `json:"usageMetadata,omitempty"`
		ModelVersion  string      `json:"modelVersion,omitempty"`
		ResponseID    string      `json:"responseId,omitempty"`
	}{[]candidate{{content{"model", parts}, a.finish, a.grounding, a.urlContext}}, a.usage, a.model, a.responseID})
	return b
}

// finishReason maps Gemini's finishReason to Weft's words.
func finishReason(s string, calls bool) string {
	switch s {
	case "STOP", "":
		if calls {
			return "tool_calls"
		}
		if s == "" {
			return ""
		}
		return "stop"
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return "content_filter"
	}
	return strings.ToLower(s)
}

// malformed is the error of an undecodable body or event.
func malformed(what string, err error) error {
	return &callError{typ: weft.ErrServer, message: "gemini: malformed " + what + ": " + err.Error(), err: err}
}

// parseResponse decodes a non-streaming reply.
func parseResponse(raw []byte, bt *builtins) (*weft.Response, error) {
	var r wireResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, malformed("response JSON", err)
	}
	a := newAssembler(bt, nil)
	if err := a.add(&r, raw); err != nil {
		return nil, err
	}
	if len(r.Candidates) == 0 {
		return nil, &callError{typ: weft.ErrServer, message: "gemini: response has no candidates"}
	}
	return a.response(raw), nil
}

// parseJSONStream decodes a JSON reply to a streaming request: one response or an array of chunks.
func parseJSONStream(raw []byte, bt *builtins, onChunk func(weft.Chunk)) (*weft.Response, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '[' {
		return parseResponse(raw, bt)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(t, &list); err != nil {
		return nil, malformed("response JSON", err)
	}
	a := newAssembler(bt, onChunk)
	for i := range list {
		var r wireResponse
		if err := json.Unmarshal(list[i], &r); err != nil {
			return nil, malformed("response JSON", err)
		}
		if err := a.add(&r, list[i]); err != nil {
			return nil, err
		}
	}
	if a.finish == "" {
		return nil, &callError{typ: weft.ErrServer, message: "gemini: response ended without a finish reason (truncated response)"}
	}
	return a.response(nil), nil
}

// readStream consumes a server-sent-event stream of GenerateContentResponse chunks. Gemini ends a
// stream by closing it after the chunk with the finish reason; a stream that ends before one is
// truncated.
func readStream(ctx context.Context, body io.Reader, bt *builtins, onChunk func(weft.Chunk)) (*weft.Response, error) {
	br := bufio.NewReaderSize(body, 16<<10)
	a := newAssembler(bt, onChunk)
	var data []byte
	var line []byte
	dispatch := func() error {
		if len(data) == 0 {
			return nil
		}
		var r wireResponse
		if err := json.Unmarshal(data, &r); err != nil {
			return malformed("stream event", err)
		}
		err := a.add(&r, data)
		data = data[:0]
		return err
	}
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(line) > 0 && err == io.EOF {
			// A last line without its newline: the stream was cut mid-event.
			return nil, &callError{typ: weft.ErrServer, message: "gemini: stream truncated mid-event"}
		}
		if err != nil {
			if err != io.EOF {
				return nil, readErr(ctx, err)
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if len(data) > 0 {
				return nil, &callError{typ: weft.ErrServer, message: "gemini: stream truncated mid-event"}
			}
			if a.finish == "" {
				return nil, &callError{typ: weft.ErrServer, message: "gemini: stream ended without a finish reason (truncated response)"}
			}
			return a.response(nil), nil
		}
		l := bytes.TrimRight(line, "\r\n")
		switch {
		case len(l) == 0:
			if err := dispatch(); err != nil {
				return nil, err
			}
		case bytes.HasPrefix(l, []byte("data:")):
			v := bytes.TrimPrefix(l[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
		line = line[:0]
	}
}
