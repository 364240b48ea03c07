package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/providertest"
)

// fake encodes replies in the Gemini wire format for the conformance suite. The suite compares
// tool call ids, so the fake sends functionCall.id (which real Gemini usually omits).
type fake struct{}

func fakeUsage(r providertest.Reply, final bool) map[string]any {
	u := map[string]any{"promptTokenCount": r.Usage.InputTokens, "totalTokenCount": r.Usage.InputTokens + r.Usage.OutputTokens}
	if final {
		u["candidatesTokenCount"] = r.Usage.OutputTokens - r.Usage.ReasoningTokens
		if r.Usage.ReasoningTokens > 0 {
			u["thoughtsTokenCount"] = r.Usage.ReasoningTokens
		}
	} else {
		u["candidatesTokenCount"] = 1
	}
	if r.Usage.CachedTokens > 0 {
		u["cachedContentTokenCount"] = r.Usage.CachedTokens
	}
	return u
}

func fakeFinish(r providertest.Reply) string {
	if r.FinishReason == "length" {
		return "MAX_TOKENS"
	}
	return "STOP"
}

func fakeCall(tc weft.ToolCall) map[string]any {
	return map[string]any{"functionCall": map[string]any{"id": tc.ID, "name": tc.Name, "args": json.RawMessage(tc.Arguments)}}
}

func (fake) Encode(r providertest.Reply, stream bool) (string, []byte) {
	if !stream {
		var parts []any
		if s := r.Reasoning(); s != "" {
			parts = append(parts, map[string]any{"text": s, "thought": true})
		}
		if s := r.Text(); s != "" {
			parts = append(parts, map[string]any{"text": s})
		}
		for _, tc := range r.ToolCalls {
			parts = append(parts, fakeCall(tc))
		}
		b, _ := json.Marshal(map[string]any{
			"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": fakeFinish(r), "index": 0}},
			"usageMetadata": fakeUsage(r, true), "modelVersion": r.Model, "responseId": "resp_1"})
		return "application/json", b
	}
	var buf bytes.Buffer
	ev := func(parts []any, finish string, final bool) {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		b, _ := json.Marshal(map[string]any{"candidates": []any{cand}, "usageMetadata": fakeUsage(r, final),
			"modelVersion": r.Model, "responseId": "resp_1"})
		fmt.Fprintf(&buf, "data: %s\n\n", b)
	}
	for _, c := range r.Chunks {
		if c.Reasoning != "" {
			ev([]any{map[string]any{"text": c.Reasoning, "thought": true}}, "", false)
		} else {
			ev([]any{map[string]any{"text": c.Text}}, "", false)
		}
	}
	for _, tc := range r.ToolCalls {
		ev([]any{fakeCall(tc)}, "", false)
	}
	ev([]any{map[string]any{"text": ""}}, fakeFinish(r), true)
	return "text/event-stream", buf.Bytes()
}

var fakeStatus = map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
	404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}

func (fake) EncodeError(status int, msg string) (string, []byte) {
	st := fakeStatus[status]
	if st == "" {
		st = "UNKNOWN"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}})
	return "application/json", b
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(baseURL string) weft.Provider { return New(Options{BaseURL: baseURL}) }, fake{})
}

func TestEngineOverTheWire(t *testing.T) {
	providertest.RunEngine(t, providertest.Target{Provider: "google", KeyVar: "GOOGLE_API_KEY"},
		func(baseURL string) weft.Provider { return New(Options{BaseURL: baseURL}) }, fake{})
}
