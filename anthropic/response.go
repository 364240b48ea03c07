package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weft-agents/weft"
)

// wireUsage is Anthropic's usage object.
type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
}

// wireMessageResponse is a Messages API reply (also message_start's message).
type wireMessageResponse struct {
	Type       string            `json:"type"`
	ID         string            `json:"id"`
	Model      string            `json:"model"`
	Content    []json.RawMessage `json:"content"`
	StopReason string            `json:"stop_reason"`
	Usage      wireUsage         `json:"usage"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// wireContent is the union of response content blocks.
type wireContent struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	ToolUseID string          `json:"tool_use_id"`
}

// usage accumulates usage; later reports replace earlier ones, never add to them (Anthropic's
// message_delta output_tokens is already cumulative).
type usage struct {
	input, output, cacheRead, cacheWrite int
}

func (u *usage) apply(w wireUsage) {
	if w.InputTokens != nil {
		u.input = *w.InputTokens
	}
	if w.OutputTokens != nil {
		u.output = *w.OutputTokens
	}
	if w.CacheReadInputTokens != nil {
		u.cacheRead = *w.CacheReadInputTokens
	}
	if w.CacheCreationInputTokens != nil {
		u.cacheWrite = *w.CacheCreationInputTokens
	}
}

// weft reports input tokens including cached ones, so cost = (in−cached)·price + cached·cachedPrice.
func (u usage) weft() weft.Usage {
	return weft.Usage{InputTokens: u.input + u.cacheRead + u.cacheWrite, OutputTokens: u.output, CachedTokens: u.cacheRead}
}

// parseMessage decodes a non-streaming reply.
func parseMessage(raw []byte, names *nameMap) (*weft.Response, error) {
	var m wireMessageResponse
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &streamError{typ: weft.ErrServer, message: "anthropic: malformed response JSON: " + err.Error(), err: err}
	}
	if m.Error != nil {
		return nil, &streamError{typ: typeForError(m.Error.Type), message: m.Error.Message}
	}
	if m.Type != "" && m.Type != "message" {
		return nil, &streamError{typ: weft.ErrServer, message: "anthropic: unexpected response type " + strconv.Quote(m.Type)}
	}
	resp := &weft.Response{ModelID: m.Model, FinishReason: finishReason(m.StopReason), ResponseBody: raw}
	var text, reasoning strings.Builder
	var thinking []json.RawMessage
	var srv serverCalls
	for _, c := range m.Content {
		var b wireContent
		if err := json.Unmarshal(c, &b); err != nil {
			return nil, &streamError{typ: weft.ErrServer, message: "anthropic: malformed content block: " + err.Error(), err: err}
		}
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(b.Input)
			if args == "" || args == "null" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, weft.ToolCall{ID: b.ID, Name: names.weft(b.Name), Arguments: args})
		case "server_tool_use":
			if b.ID == "" {
				break // a call without an id cannot be paired with its result: ignored
			}
			args := string(b.Input)
			if args == "" || args == "null" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, weft.ToolCall{ID: b.ID, Name: names.serverName(b.Name), Arguments: args})
			srv.call(b.ID, b.Name, json.RawMessage(args), c)
		case "thinking":
			reasoning.WriteString(b.Thinking)
			thinking = append(thinking, c)
		case "redacted_thinking":
			thinking = append(thinking, c)
		default:
			if isServerResult(b.Type) {
				srv.result(c)
			}
		}
	}
	resp.ProviderResults = srv.results()
	resp.Text, resp.Reasoning = text.String(), reasoning.String()
	if len(thinking) > 0 {
		resp.ReasoningBlocks, _ = json.Marshal(thinking)
	}
	var u usage
	u.apply(m.Usage)
	resp.Usage = u.weft()
	return resp, nil
}

// streamEvent is the union of Messages streaming events.
type streamEvent struct {
	Type         string               `json:"type"`
	Index        int                  `json:"index"`
	Message      *wireMessageResponse `json:"message"`
	ContentBlock json.RawMessage      `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// blockState is a content block being streamed.
type blockState struct {
	index     int
	typ       string
	id, name  string
	text      strings.Builder // text, thinking, or tool input JSON
	signature string
	// raw is the verbatim start block of types kept as they came (redacted_thinking, server tool
	// results) and of server_tool_use, whose input is then filled in from the deltas.
	raw json.RawMessage
}

// readStream consumes a Messages event stream.
func readStream(ctx context.Context, res *http.Response, names *nameMap, onChunk func(weft.Chunk)) (*weft.Response, error) {
	if res == nil || res.Body == nil {
		return nil, &streamError{typ: weft.ErrServer, message: "anthropic: empty response"}
	}
	// Closing the body on cancellation unblocks a read of a stalled stream.
	stop := context.AfterFunc(ctx, func() { _ = res.Body.Close() })
	defer stop()
	defer func() { _ = res.Body.Close() }()

	if ct := res.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "text/event-stream") {
		// A plain JSON reply to a streaming request (some proxies do this).
		raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
		if err != nil {
			return nil, readErr(ctx, err)
		}
		return parseMessage(raw, names)
	}

	dec := sseDecoder(res)
	resp := &weft.Response{}
	var u usage
	var blocks []*blockState
	stopped := false
	find := func(i int) *blockState {
		for j := len(blocks) - 1; j >= 0; j-- {
			if blocks[j].index == i {
				return blocks[j]
			}
		}
		return nil
	}
	for !stopped && dec.Next() {
		ev := dec.Event()
		if len(ev.Data) == 0 {
			continue
		}
		var e streamEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return nil, &streamError{typ: weft.ErrServer, message: "anthropic: malformed stream event: " + err.Error(), err: err}
		}
		switch e.Type {
		case "message_start":
			if e.Message != nil {
				resp.ModelID = e.Message.Model
				u.apply(e.Message.Usage)
			}
		case "content_block_start":
			var c wireContent
			if err := json.Unmarshal(e.ContentBlock, &c); err != nil {
				return nil, &streamError{typ: weft.ErrServer, message: "anthropic: malformed content block: " + err.Error(), err: err}
			}
			b := &blockState{index: e.Index, typ: c.Type, id: c.ID, name: c.Name, signature: c.Signature}
			switch c.Type {
			case "text":
				b.text.WriteString(c.Text)
				if c.Text != "" && onChunk != nil {
					onChunk(weft.Chunk{Text: c.Text})
				}
			case "thinking":
				b.text.WriteString(c.Thinking)
				if c.Thinking != "" && onChunk != nil {
					onChunk(weft.Chunk{Reasoning: c.Thinking})
				}
			case "tool_use", "server_tool_use":
				if s := string(c.Input); s != "" && s != "{}" && s != "null" {
					b.text.WriteString(s)
				}
				if c.Type == "server_tool_use" {
					b.raw = append(json.RawMessage(nil), e.ContentBlock...)
				}
			default:
				b.raw = append(json.RawMessage(nil), e.ContentBlock...)
			}
			blocks = append(blocks, b)
		case "content_block_delta":
			b := find(e.Index)
			if b == nil {
				return nil, &streamError{typ: weft.ErrServer, message: "anthropic: delta for unknown content block " + strconv.Itoa(e.Index)}
			}
			switch e.Delta.Type {
			case "text_delta":
				b.text.WriteString(e.Delta.Text)
				if onChunk != nil && e.Delta.Text != "" {
					onChunk(weft.Chunk{Text: e.Delta.Text})
				}
			case "thinking_delta":
				b.text.WriteString(e.Delta.Thinking)
				if onChunk != nil && e.Delta.Thinking != "" {
					onChunk(weft.Chunk{Reasoning: e.Delta.Thinking})
				}
			case "signature_delta":
				b.signature += e.Delta.Signature
			case "input_json_delta":
				b.text.WriteString(e.Delta.PartialJSON)
				if onChunk != nil {
					onChunk(weft.Chunk{}) // progress: resets the engine's stall timer
				}
			}
		case "content_block_stop", "ping":
		case "message_delta":
			if e.Delta.StopReason != "" {
				resp.FinishReason = finishReason(e.Delta.StopReason)
			}
			if e.Usage != nil {
				u.apply(*e.Usage)
			}
		case "message_stop":
			stopped = true
		case "error":
			typ, msg := weft.ErrServer, "anthropic: stream error"
			if e.Error != nil {
				if e.Error.Type == "rate_limit_error" {
					typ = weft.ErrRateLimit
				}
				msg = e.Error.Message
				if msg == "" {
					msg = e.Error.Type
				}
			}
			return nil, &streamError{typ: typ, message: msg}
		}
	}
	if !stopped {
		if err := dec.Err(); err != nil {
			return nil, readErr(ctx, err)
		}
		if ctx.Err() != nil {
			return nil, readErr(ctx, ctx.Err())
		}
		return nil, &streamError{typ: weft.ErrServer, message: "anthropic: stream ended before message_stop (truncated response)"}
	}

	sort.SliceStable(blocks, func(i, j int) bool { return blocks[i].index < blocks[j].index })
	var text, reasoning strings.Builder
	var content, thinking []json.RawMessage
	var srv serverCalls
	for _, b := range blocks {
		var raw json.RawMessage
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
			raw, _ = json.Marshal(wireContent{Type: "text", Text: b.text.String()})
		case "thinking":
			reasoning.WriteString(b.text.String())
			raw, _ = json.Marshal(struct {
				Type      string `json:"type"`
				Thinking  string `json:"thinking"`
				Signature string `json:"signature"`
			}{"thinking", b.text.String(), b.signature})
			thinking = append(thinking, raw)
		case "tool_use":
			args := b.text.String()
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, weft.ToolCall{ID: b.id, Name: names.weft(b.name), Arguments: args})
			input := json.RawMessage(args)
			if !json.Valid(input) {
				input, _ = json.Marshal(args)
			}
			raw, _ = json.Marshal(struct {
				Type  string          `json:"type"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			}{"tool_use", b.id, b.name, input})
		case "server_tool_use":
			args := b.text.String()
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			raw = b.raw
			if b.id == "" {
				break // a call without an id cannot be paired with its result: ignored
			}
			resp.ToolCalls = append(resp.ToolCalls, weft.ToolCall{ID: b.id, Name: names.serverName(b.name), Arguments: args})
			// The verbatim block with its streamed input; a block whose input does not parse
			// cannot be sent back, so the call then keeps no raw blocks.
			var use json.RawMessage
			if json.Valid([]byte(args)) {
				use = withInput(b.raw, json.RawMessage(args))
			}
			if use != nil {
				raw = use
			}
			srv.call(b.id, b.name, json.RawMessage(args), use)
		default:
			raw = b.raw
			switch {
			case b.typ == "redacted_thinking":
				thinking = append(thinking, raw)
			case isServerResult(b.typ):
				srv.result(raw)
			}
		}
		if raw != nil {
			content = append(content, raw)
		}
	}
	resp.ProviderResults = srv.results()
	resp.Text, resp.Reasoning = text.String(), reasoning.String()
	if len(thinking) > 0 {
		resp.ReasoningBlocks, _ = json.Marshal(thinking)
	}
	resp.Usage = u.weft()
	// The log gets the reply assembled as one message.
	resp.ResponseBody, _ = json.Marshal(struct {
		Type       string            `json:"type"`
		Model      string            `json:"model"`
		Content    []json.RawMessage `json:"content"`
		StopReason string            `json:"stop_reason"`
		Usage      map[string]int    `json:"usage"`
	}{"message", resp.ModelID, content, resp.FinishReason,
		map[string]int{"input_tokens": u.input, "output_tokens": u.output, "cache_read_input_tokens": u.cacheRead,
			"cache_creation_input_tokens": u.cacheWrite}})
	return resp, nil
}

// withInput returns a streamed block with its input set, other fields kept as they came; nil when
// the block is not a JSON object.
func withInput(block, input json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(block, &m) != nil || m == nil {
		return nil
	}
	m["input"] = input
	out, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return out
}

// readErr describes a failed read of the response body.
func readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &streamError{typ: weft.ErrServer, message: "anthropic: stream truncated: " + err.Error(), err: err}
	}
	return &streamError{typ: weft.ErrServer, message: "anthropic: reading stream: " + err.Error(), err: err}
}

// retryAfter reads retry-after-ms or retry-after (seconds or an HTTP date).
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil {
			if d := time.Until(t); d > 0 {
				return d
			}
		}
	}
	return 0
}
