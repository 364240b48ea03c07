package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/openai"
	"github.com/weft-agents/weft/providertest"
)

// respFake encodes replies in the Responses wire: a response object, or the event stream the API
// sends (response.created, output_item.added/done around the deltas of each item,
// response.completed with the whole response).
type respFake struct{}

// encryptedReasoning is the encrypted_content the fake puts on reasoning items.
const encryptedReasoning = "gAAAAenc-reasoning"

func respUsageJSON(u weft.Usage) map[string]any {
	return map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CachedTokens},
		"output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens}}
}

func reasoningItem(summary string) map[string]any {
	parts := []any{}
	if summary != "" {
		parts = append(parts, map[string]any{"type": "summary_text", "text": summary})
	}
	return map[string]any{"type": "reasoning", "id": "rs_1", "summary": parts, "encrypted_content": encryptedReasoning}
}

func messageItem(text string) map[string]any {
	content := []any{}
	if text != "" {
		content = append(content, map[string]any{"type": "output_text", "text": text, "annotations": []any{}})
	}
	return map[string]any{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": content}
}

func functionCallItem(i int, c weft.ToolCall, args string) map[string]any {
	return map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", i), "call_id": c.ID, "name": c.Name, "arguments": args, "status": "completed"}
}

// respObject is the response object of r with the given output items.
func respObject(r providertest.Reply, status string, output []any) map[string]any {
	v := map[string]any{"id": "resp_1", "object": "response", "created_at": 1700000000, "model": r.Model, "status": status,
		"error": nil, "incomplete_details": nil, "output": output, "usage": respUsageJSON(r.Usage)}
	if status == "in_progress" {
		v["usage"] = nil
	}
	if r.FinishReason == "length" && status != "in_progress" {
		v["status"] = "incomplete"
		v["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	}
	return v
}

func (respFake) outputItems(r providertest.Reply) []any {
	var out []any
	if r.Reasoning() != "" {
		out = append(out, reasoningItem(r.Reasoning()))
	}
	if r.Text() != "" {
		out = append(out, messageItem(r.Text()))
	}
	for i, c := range r.ToolCalls {
		out = append(out, functionCallItem(i, c, c.Arguments))
	}
	return out
}

func (f respFake) Encode(r providertest.Reply, stream bool) (string, []byte) {
	if !stream {
		b, _ := json.Marshal(respObject(r, "completed", f.outputItems(r)))
		return "application/json", b
	}
	var sb strings.Builder
	seq := 0
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		v["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(v)
		fmt.Fprintf(&sb, "event: %s\ndata: %s\n\n", typ, b)
	}
	ev("response.created", map[string]any{"response": respObject(r, "in_progress", []any{})})
	idx := 0
	if r.Reasoning() != "" {
		ev("response.output_item.added", map[string]any{"output_index": idx, "item": reasoningItem("")})
		ev("response.reasoning_summary_part.added", map[string]any{"item_id": "rs_1", "output_index": idx, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
		for _, c := range r.Chunks {
			if c.Reasoning != "" {
				ev("response.reasoning_summary_text.delta", map[string]any{"item_id": "rs_1", "output_index": idx, "summary_index": 0, "delta": c.Reasoning})
			}
		}
		ev("response.reasoning_summary_text.done", map[string]any{"item_id": "rs_1", "output_index": idx, "summary_index": 0, "text": r.Reasoning()})
		ev("response.output_item.done", map[string]any{"output_index": idx, "item": reasoningItem(r.Reasoning())})
		idx++
	}
	if r.Text() != "" {
		ev("response.output_item.added", map[string]any{"output_index": idx, "item": messageItem("")})
		ev("response.content_part.added", map[string]any{"item_id": "msg_1", "output_index": idx, "content_index": 0, "part": map[string]any{"type": "output_text", "text": ""}})
		for _, c := range r.Chunks {
			if c.Text != "" {
				ev("response.output_text.delta", map[string]any{"item_id": "msg_1", "output_index": idx, "content_index": 0, "delta": c.Text})
			}
		}
		ev("response.output_text.done", map[string]any{"item_id": "msg_1", "output_index": idx, "content_index": 0, "text": r.Text()})
		ev("response.output_item.done", map[string]any{"output_index": idx, "item": messageItem(r.Text())})
		idx++
	}
	for i, c := range r.ToolCalls {
		id := fmt.Sprintf("fc_%d", i)
		ev("response.output_item.added", map[string]any{"output_index": idx, "item": functionCallItem(i, c, "")})
		half := len(c.Arguments) / 2
		for _, part := range []string{c.Arguments[:half], c.Arguments[half:]} {
			ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": idx, "delta": part})
		}
		ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": idx, "arguments": c.Arguments})
		ev("response.output_item.done", map[string]any{"output_index": idx, "item": functionCallItem(i, c, c.Arguments)})
		idx++
	}
	typ := "response.completed"
	if r.FinishReason == "length" {
		typ = "response.incomplete"
	}
	ev(typ, map[string]any{"response": respObject(r, "completed", f.outputItems(r))})
	return "text/event-stream", []byte(sb.String())
}

func (respFake) EncodeError(status int, message string) (string, []byte) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": nil, "code": nil}})
	return "application/json", b
}

// onlyResponses fails the test when the adapter calls anything but {base}/responses.
type onlyResponses struct{ t *testing.T }

func (o onlyResponses) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.URL.Path, "/v1/responses") {
		o.t.Errorf("request to %s, want …/v1/responses", r.URL.Path)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// responsesMode wraps p so every request carries the option useResponsesApi.
func responsesMode(p weft.Provider) weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
		r := *req
		r.Options = map[string]any{"useResponsesApi": true}
		for k, v := range req.Options {
			r.Options[k] = v
		}
		return p.Call(ctx, &r, onChunk)
	})
}

func TestResponsesConformance(t *testing.T) {
	providertest.Run(t, func(baseURL string) weft.Provider {
		return responsesMode(openai.New(openai.Options{BaseURL: baseURL, HTTPClient: &http.Client{Transport: onlyResponses{t}}}))
	}, respFake{})
}

func TestResponsesEngineOverTheWire(t *testing.T) {
	providertest.RunEngine(t, providertest.Target{Provider: "openai", KeyVar: "OPENAI_API_KEY"}, func(baseURL string) weft.Provider {
		return responsesMode(openai.New(openai.Options{BaseURL: baseURL, HTTPClient: &http.Client{Transport: onlyResponses{t}}}))
	}, respFake{})
}
