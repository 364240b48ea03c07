package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/weft-agents/weft"
)

type wireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireMessage struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content"`
	Refusal          *string        `json:"refusal,omitempty"`
	Reasoning        *string        `json:"reasoning,omitempty"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
	// ReasoningDetails are OpenRouter's structured reasoning blocks (text with signatures,
	// summaries, encrypted data), whole on a message, in fragments on a delta.
	ReasoningDetails json.RawMessage `json:"reasoning_details,omitempty"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	Cost *float64 `json:"cost"`
}

func (u *wireUsage) weft() weft.Usage {
	out := weft.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, Cost: u.Cost}
	if u.PromptTokensDetails != nil {
		out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

type wireChoice struct {
	Index        int          `json:"index"`
	Message      *wireMessage `json:"message,omitempty"`
	Delta        *wireMessage `json:"delta,omitempty"`
	FinishReason *string      `json:"finish_reason"`
}

type wireCompletion struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// finish maps a wire finish reason to weft's words.
func finish(s string) string {
	switch s {
	case "function_call":
		return "tool_calls"
	case "":
		return "stop"
	}
	return s
}

// inBandError classifies an error object sent with a 2xx status (OpenRouter does this).
func (p *Provider) inBandError(req *weft.Request, raw json.RawMessage) error {
	var e struct {
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &e)
	status := 0
	if f, ok := e.Code.(float64); ok {
		status = int(f)
	}
	msg := e.Message
	if msg == "" {
		msg = string(raw)
	}
	t := weft.ErrorTypeForStatus(status)
	if status == 0 {
		t = weft.ErrServer
	}
	return p.fail(t, status, redact(msg, req.APIKey), nil)
}

// readJSON reads a non-streamed completion.
func (p *Provider) readJSON(ctx context.Context, req *weft.Request, res *http.Response, names toolNames, onChunk func(weft.Chunk)) (*weft.Response, error) {
	b, err := io.ReadAll(res.Body)
	if err != nil {
		if ce := ctx.Err(); ce != nil {
			return nil, p.ctxError(ce)
		}
		return nil, p.fail(weft.ErrUnknown, res.StatusCode, "reading response: "+err.Error(), err)
	}
	var c wireCompletion
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, p.fail(weft.ErrUnknown, res.StatusCode, "malformed response JSON: "+err.Error(), err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return nil, p.inBandError(req, c.Error)
	}
	if len(c.Choices) == 0 || c.Choices[0].Message == nil {
		return nil, p.fail(weft.ErrUnknown, res.StatusCode, "response has no choices", nil)
	}
	ch := c.Choices[0]
	m := ch.Message
	out := &weft.Response{ModelID: c.Model, ResponseBody: b}
	if m.Content != nil {
		out.Text = *m.Content
	} else if m.Refusal != nil {
		out.Text = *m.Refusal
	}
	if m.ReasoningContent != nil {
		out.Reasoning = *m.ReasoningContent
	} else if m.Reasoning != nil {
		out.Reasoning = *m.Reasoning
	}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, weft.ToolCall{ID: tc.ID, Name: names.original(tc.Function.Name), Arguments: tc.Function.Arguments})
	}
	if p.opts.Name == "openrouter" {
		out.ReasoningBlocks = verbatimList(m.ReasoningDetails)
	}
	if ch.FinishReason != nil {
		out.FinishReason = finish(*ch.FinishReason)
	} else {
		out.FinishReason = "stop"
	}
	if c.Usage != nil {
		out.Usage = c.Usage.weft()
	}
	if onChunk != nil && (out.Reasoning != "" || out.Text != "") {
		if out.Reasoning != "" {
			onChunk(weft.Chunk{Reasoning: out.Reasoning})
		}
		if out.Text != "" {
			onChunk(weft.Chunk{Text: out.Text})
		}
	}
	return out, nil
}

// streamCall is a tool call being assembled from deltas.
type streamCall struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

// readStream reads a server-sent-event stream of completion chunks.
func (p *Provider) readStream(ctx context.Context, req *weft.Request, res *http.Response, names toolNames, onChunk func(weft.Chunk)) (*weft.Response, error) {
	dec := ssestream.NewDecoder(res)
	defer dec.Close()
	var (
		text, reasoning strings.Builder
		calls           []*streamCall
		finishReason    string
		usage           *wireUsage
		model, id       string
		done            bool
		details         reasoningDetails
	)
	for dec.Next() {
		data := bytes.TrimSpace(dec.Event().Data)
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, []byte("[DONE]")) {
			done = true
			break
		}
		var c wireCompletion
		if err := json.Unmarshal(data, &c); err != nil {
			return nil, p.fail(weft.ErrUnknown, res.StatusCode, "malformed stream chunk: "+err.Error(), err)
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			return nil, p.inBandError(req, c.Error)
		}
		if c.Model != "" {
			model = c.Model
		}
		if c.ID != "" {
			id = c.ID
		}
		if c.Usage != nil {
			usage = c.Usage // streamed usage replaces, never adds
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue
			}
			if d := ch.Delta; d != nil {
				r := ""
				if d.ReasoningContent != nil {
					r = *d.ReasoningContent
				} else if d.Reasoning != nil {
					r = *d.Reasoning
				}
				if p.opts.Name == "openrouter" {
					details.add(d.ReasoningDetails)
				}
				if r != "" {
					reasoning.WriteString(r)
					if onChunk != nil {
						onChunk(weft.Chunk{Reasoning: r})
					}
				}
				if d.Content != nil && *d.Content != "" {
					text.WriteString(*d.Content)
					if onChunk != nil {
						onChunk(weft.Chunk{Text: *d.Content})
					}
				}
				for _, tc := range d.ToolCalls {
					idx := len(calls)
					if tc.Index != nil {
						idx = *tc.Index
					} else if tc.ID == "" && len(calls) > 0 {
						idx = calls[len(calls)-1].index
					}
					var sc *streamCall
					for _, x := range calls {
						if x.index == idx {
							sc = x
							break
						}
					}
					if sc == nil {
						sc = &streamCall{index: idx}
						calls = append(calls, sc)
					}
					if tc.ID != "" {
						sc.id = tc.ID
					}
					if tc.Function.Name != "" && sc.name == "" {
						sc.name = tc.Function.Name
					}
					sc.args.WriteString(tc.Function.Arguments)
					if onChunk != nil {
						onChunk(weft.Chunk{}) // progress: resets the engine's stall timer
					}
				}
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				finishReason = *ch.FinishReason
			}
		}
	}
	if !done {
		if ce := ctx.Err(); ce != nil {
			return nil, p.ctxError(ce)
		}
		if err := dec.Err(); err != nil {
			return nil, p.fail(weft.ErrUnknown, res.StatusCode, "stream interrupted: "+err.Error(), err)
		}
		if finishReason == "" {
			return nil, p.fail(weft.ErrUnknown, res.StatusCode, "stream ended before the reply was complete", io.ErrUnexpectedEOF)
		}
	}
	if finishReason == "" && len(calls) == 0 && text.Len() == 0 && reasoning.Len() == 0 {
		return nil, p.fail(weft.ErrUnknown, res.StatusCode, "stream carried no choices", nil)
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].index < calls[j].index })
	out := &weft.Response{Text: text.String(), Reasoning: reasoning.String(), ModelID: model, FinishReason: finish(finishReason)}
	for _, sc := range calls {
		out.ToolCalls = append(out.ToolCalls, weft.ToolCall{ID: sc.id, Name: names.original(sc.name), Arguments: sc.args.String()})
	}
	if usage != nil {
		out.Usage = usage.weft()
	}
	out.ReasoningBlocks = details.json()
	out.ResponseBody = assembled(id, model, out, usage)
	return out, nil
}

// verbatimList returns raw when it is a non-empty JSON list, compacted; else nil.
func verbatimList(raw json.RawMessage) json.RawMessage {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return nil
	}
	return b.Bytes()
}

// reasoningDetails assembles OpenRouter's streamed reasoning_details. A stream sends each block in
// fragments that share its type and index; consecutive fragments are merged into one block (their
// text, summary and data concatenated, later values of other fields kept) so the block can be sent
// back whole. Fragments without an index are never merged.
type reasoningDetails []map[string]any

// add merges the fragments of one delta.
func (d *reasoningDetails) add(raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	var frags []map[string]any
	if json.Unmarshal(raw, &frags) != nil {
		return
	}
	for _, f := range frags {
		if f == nil {
			continue
		}
		n := len(*d)
		if n > 0 && sameBlock((*d)[n-1], f) {
			last := (*d)[n-1]
			for k, v := range f {
				switch k {
				case "text", "summary", "data":
					if s, ok := v.(string); ok {
						prev, _ := last[k].(string)
						last[k] = prev + s
						continue
					}
				}
				if v != nil && v != "" {
					last[k] = v
				}
			}
			continue
		}
		*d = append(*d, f)
	}
}

// sameBlock reports whether fragment f continues block b: same type and the same index.
func sameBlock(b, f map[string]any) bool {
	bi, ok1 := b["index"]
	fi, ok2 := f["index"]
	return ok1 && ok2 && bi == fi && b["type"] == f["type"]
}

// json returns the assembled blocks as a JSON list; nil when there are none.
func (d reasoningDetails) json() json.RawMessage {
	if len(d) == 0 {
		return nil
	}
	b, err := json.Marshal([]map[string]any(d))
	if err != nil {
		return nil
	}
	return b
}

// assembled renders a streamed reply as one chat.completion JSON object for the log.
func assembled(id, model string, r *weft.Response, usage *wireUsage) json.RawMessage {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	if r.Reasoning != "" {
		msg["reasoning"] = r.Reasoning
	}
	if len(r.ReasoningBlocks) > 0 {
		msg["reasoning_details"] = r.ReasoningBlocks
	}
	if len(r.ToolCalls) > 0 {
		tcs := make([]map[string]any, len(r.ToolCalls))
		for i, c := range r.ToolCalls {
			tcs[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		}
		msg["tool_calls"] = tcs
	}
	v := map[string]any{"id": id, "object": "chat.completion", "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": r.FinishReason}}}
	if usage != nil {
		v["usage"] = usage
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
