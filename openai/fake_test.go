package openai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/openai"
	"github.com/weft-agents/weft/providertest"
)

// fake encodes replies in the chat-completions wire.
type fake struct{}

func usageJSON(u weft.Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens,
		"total_tokens":              u.InputTokens + u.OutputTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens}}
}

func (fake) Encode(r providertest.Reply, stream bool) (string, []byte) {
	if !stream {
		msg := map[string]any{"role": "assistant", "content": r.Text()}
		if r.Reasoning() != "" {
			msg["reasoning_content"] = r.Reasoning()
		}
		if len(r.ToolCalls) > 0 {
			msg["content"] = nil
			var tcs []any
			for _, c := range r.ToolCalls {
				tcs = append(tcs, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
			}
			msg["tool_calls"] = tcs
		}
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": r.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": r.FinishReason}}, "usage": usageJSON(r.Usage)})
		return "application/json", b
	}
	var sb strings.Builder
	ev := func(choice map[string]any, usage any) {
		v := map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": r.Model, "choices": []any{}}
		if choice != nil {
			v["choices"] = []any{choice}
		}
		if usage != nil {
			v["usage"] = usage
		}
		b, _ := json.Marshal(v)
		fmt.Fprintf(&sb, "data: %s\n\n", b)
	}
	ev(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil}, nil)
	for _, c := range r.Chunks {
		d := map[string]any{}
		if c.Reasoning != "" {
			d["reasoning_content"] = c.Reasoning
		} else {
			d["content"] = c.Text
		}
		ev(map[string]any{"index": 0, "delta": d, "finish_reason": nil}, nil)
	}
	for i, c := range r.ToolCalls {
		half := len(c.Arguments) / 2
		ev(map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}}, nil)
		for _, part := range []string{c.Arguments[:half], c.Arguments[half:]} {
			ev(map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": part}}}}}, nil)
		}
	}
	ev(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": r.FinishReason}, nil)
	ev(nil, usageJSON(r.Usage))
	sb.WriteString("data: [DONE]\n\n")
	return "text/event-stream", []byte(sb.String())
}

func (fake) EncodeError(status int, message string) (string, []byte) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": nil, "code": fmt.Sprint(status)}})
	return "application/json", b
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(baseURL string) weft.Provider {
		return openai.New(openai.Options{BaseURL: baseURL, HTTPClient: &http.Client{}})
	}, fake{})
}

func TestEngineOverTheWire(t *testing.T) {
	for _, name := range []string{"openai", "openrouter", "openai-compatible"} {
		t.Run(name, func(t *testing.T) {
			key := map[string]string{"openai": "OPENAI_API_KEY", "openrouter": "OPENROUTER_API_KEY", "openai-compatible": "COMPAT_KEY"}[name]
			providertest.RunEngine(t, providertest.Target{Provider: name, KeyVar: key}, func(baseURL string) weft.Provider {
				return openai.New(openai.Options{BaseURL: baseURL, Name: name})
			}, fake{})
		})
	}
}
