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
	calls           []weft.ToolCall
	sigs            []signatureBlock
	anySig          bool
	finish          string
	usage           *wireUsage
	model           string
	responseID      string
	onChunk         func(weft.Chunk)
}

// add folds one response (or chunk) in; it fails on an error object or a blocked prompt.
func (a *assembler) add(r *wireResponse) error {
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
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			switch {
			case p.FunctionCall != nil:
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

// response returns the assembled reply; raw is the wire body for the log (nil: build one).
func (a *assembler) response(raw []byte) *weft.Response {
	resp := &weft.Response{Text: a.text.String(), Reasoning: a.reasoning.String(), ToolCalls: a.calls,
		FinishReason: finishReason(a.finish, len(a.calls) > 0), Usage: a.usage.weft(), ModelID: a.model}
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
	for _, c := range a.calls {
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
		Content      content `json:"content"`
		FinishReason string  `json:"finishReason,omitempty"`
	}
	b, _ := json.Marshal(struct {
		Candidates    []candidate `json:"candidates"`
		UsageMetadata *wireUsage  `json:"usageMetadata,omitempty"`
		ModelVersion  string      `json:"modelVersion,omitempty"`
		ResponseID    string      `json:"responseId,omitempty"`
	}{[]candidate{{content{"model", parts}, a.finish}}, a.usage, a.model, a.responseID})
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
func parseResponse(raw []byte) (*weft.Response, error) {
	var r wireResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, malformed("response JSON", err)
	}
	a := &assembler{}
	if err := a.add(&r); err != nil {
		return nil, err
	}
	if len(r.Candidates) == 0 {
		return nil, &callError{typ: weft.ErrServer, message: "gemini: response has no candidates"}
	}
	return a.response(raw), nil
}

// parseJSONStream decodes a JSON reply to a streaming request: one response or an array of chunks.
func parseJSONStream(raw []byte, onChunk func(weft.Chunk)) (*weft.Response, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '[' {
		return parseResponse(raw)
	}
	var list []wireResponse
	if err := json.Unmarshal(t, &list); err != nil {
		return nil, malformed("response JSON", err)
	}
	a := &assembler{onChunk: onChunk}
	for i := range list {
		if err := a.add(&list[i]); err != nil {
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
func readStream(ctx context.Context, body io.Reader, onChunk func(weft.Chunk)) (*weft.Response, error) {
	br := bufio.NewReaderSize(body, 16<<10)
	a := &assembler{onChunk: onChunk}
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
		data = data[:0]
		return a.add(&r)
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
