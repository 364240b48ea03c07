package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/providertest"
)

// fake encodes replies in the Messages wire format for the conformance suite.
type fake struct{}

func (fake) Encode(r providertest.Reply, stream bool) (string, []byte) {
	in := r.Usage.InputTokens - r.Usage.CachedTokens
	stop := map[string]string{"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}[r.FinishReason]
	if !stream {
		var content []any
		if s := r.Reasoning(); s != "" {
			content = append(content, map[string]any{"type": "thinking", "thinking": s, "signature": "sig-fake"})
		}
		if s := r.Text(); s != "" {
			content = append(content, map[string]any{"type": "text", "text": s})
		}
		for _, tc := range r.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": json.RawMessage(tc.Arguments)})
		}
		b, _ := json.Marshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": r.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": r.Usage.OutputTokens, "cache_read_input_tokens": r.Usage.CachedTokens}})
		return "application/json", b
	}
	var buf bytes.Buffer
	ev := func(typ string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", typ, b)
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message",
		"role": "assistant", "model": r.Model, "content": []any{}, "stop_reason": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": 1, "cache_read_input_tokens": r.Usage.CachedTokens}}})
	idx := 0
	open := ""
	closeBlock := func() {
		if open != "" {
			if open == "thinking" {
				ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "signature_delta", "signature": "sig-fake"}})
			}
			ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
			idx++
			open = ""
		}
	}
	for _, c := range r.Chunks {
		typ := "text"
		if c.Reasoning != "" {
			typ = "thinking"
		}
		if open != typ {
			closeBlock()
			open = typ
			blk := map[string]any{"type": "text", "text": ""}
			if typ == "thinking" {
				blk = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
			}
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": blk})
		}
		d := map[string]any{"type": "text_delta", "text": c.Text}
		if typ == "thinking" {
			d = map[string]any{"type": "thinking_delta", "thinking": c.Reasoning}
		}
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": d})
		ev("ping", map[string]any{"type": "ping"})
	}
	closeBlock()
	for _, tc := range r.ToolCalls {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}})
		half := len(tc.Arguments) / 2
		for _, part := range []string{tc.Arguments[:half], tc.Arguments[half:]} {
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	// Cumulative output tokens: a first delta with a partial count, then the final count.
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": nil}, "usage": map[string]any{"output_tokens": 2}})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": r.Usage.OutputTokens}})
	ev("message_stop", map[string]any{"type": "message_stop"})
	return "text/event-stream", buf.Bytes()
}

// ReasoningInOutput: Anthropic counts thinking tokens inside output_tokens.
func (fake) ReasoningInOutput() bool { return true }

func (fake) EncodeError(status int, msg string) (string, []byte) {
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
	if typ == "" {
		typ = "api_error"
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	return "application/json", b
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(baseURL string) weft.Provider { return New(Options{BaseURL: baseURL}) }, fake{})
}

func TestEngineOverTheWire(t *testing.T) {
	providertest.RunEngine(t, providertest.Target{Provider: "anthropic", KeyVar: "ANTHROPIC_API_KEY"},
		func(baseURL string) weft.Provider { return New(Options{BaseURL: baseURL}) }, fake{})
}
