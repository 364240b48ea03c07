package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/openai"
)

const orDetails = `[{"type":"reasoning.text","text":"think","signature":"sig","format":"anthropic-claude-v1","index":0},{"type":"reasoning.encrypted","data":"abc","format":"anthropic-claude-v1","index":1}]`

const orJSON = `{"id":"gen-1","model":"anthropic/claude","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning":"think",` +
	`"reasoning_details":` + orDetails + `},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`

// orStream sends the same reply in chunks: reasoning_details arrive in fragments sharing type and
// index (text split, the signature last), which must be merged back into whole blocks.
var orStream = strings.Join([]string{
	`{"id":"gen-1","model":"anthropic/claude","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"thi","reasoning_details":[{"type":"reasoning.text","text":"thi","format":"anthropic-claude-v1","index":0}]}}]}`,
	`{"id":"gen-1","choices":[{"index":0,"delta":{"reasoning":"nk","reasoning_details":[{"type":"reasoning.text","text":"nk","format":"anthropic-claude-v1","index":0}]}}]}`,
	`{"id":"gen-1","choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.text","text":"","signature":"sig","format":"anthropic-claude-v1","index":0}]}}]}`,
	`{"id":"gen-1","choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.encrypted","data":"abc","format":"anthropic-claude-v1","index":1}]}}]}`,
	`{"id":"gen-1","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`,
	`{"id":"gen-1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
	`[DONE]`,
}, "\n\n") + "\n\n"

func chatModel(stream bool) *weft.Model {
	return &weft.Model{Name: "m", Model: "anthropic/claude", Capabilities: weft.Capabilities{SupportsStreaming: &stream}}
}

// TestReasoningDetailsCaptured: OpenRouter's reasoning_details become Response.ReasoningBlocks —
// verbatim from a message, merged from stream fragments — and only in the openrouter dialect.
func TestReasoningDetailsCaptured(t *testing.T) {
	for _, tc := range []struct {
		name, dialect string
		stream        bool
		want          string
	}{
		{"json", "openrouter", false, orDetails},
		{"stream", "openrouter", true, orDetails},
		{"json_other_dialect", "openai", false, ""},
		{"stream_other_dialect", "openai", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := "application/json", orJSON
			if tc.stream {
				ct, body = "text/event-stream", "data: "+strings.ReplaceAll(orStream, "\n\n", "\n\ndata: ")
				body = strings.TrimSuffix(body, "data: ")
			}
			srv, _ := newServer(t, 200, nil, ct, body)
			p := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Name: tc.dialect})
			resp, err := p.Call(context.Background(), &weft.Request{Model: chatModel(tc.stream), Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "q"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "hi" || resp.Reasoning != "think" {
				t.Errorf("text %q reasoning %q", resp.Text, resp.Reasoning)
			}
			if tc.want == "" {
				if resp.ReasoningBlocks != nil {
					t.Errorf("ReasoningBlocks %s, want none", resp.ReasoningBlocks)
				}
				return
			}
			if got := canonical(t, resp.ReasoningBlocks); got != canonical(t, []byte(tc.want)) {
				t.Errorf("ReasoningBlocks\n got %s\nwant %s", got, canonical(t, []byte(tc.want)))
			}
			if !tc.stream && string(resp.ReasoningBlocks) != tc.want {
				t.Errorf("non-streamed blocks are not verbatim: %s", resp.ReasoningBlocks)
			}
			if tc.stream && !strings.Contains(string(resp.ResponseBody), `"reasoning_details"`) {
				t.Errorf("assembled ResponseBody lacks reasoning_details: %s", resp.ResponseBody)
			}
		})
	}
}

// TestReasoningDetailsReplayed: an assistant message's metadata reasoning_blocks go back as its
// reasoning_details (OpenRouter entries only) in the openrouter dialect, and nowhere else.
func TestReasoningDetailsReplayed(t *testing.T) {
	blocks := decoded(`[{"type":"reasoning.text","text":"think","signature":"sig","index":0},{"type":"thinking","thinking":"x"},"junk"]`)
	for _, tc := range []struct {
		dialect string
		meta    any
		want    string
	}{
		{"openrouter", blocks, `[{"index":0,"signature":"sig","text":"think","type":"reasoning.text"}]`},
		{"openrouter", json.RawMessage(orDetails), canonical(t, []byte(orDetails))},
		{"openrouter", "not json", ""},
		{"openai", blocks, ""},
		{"groq", json.RawMessage(orDetails), ""},
	} {
		t.Run(tc.dialect, func(t *testing.T) {
			srv, c := newServer(t, 200, nil, "application/json", okJSON)
			p := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Name: tc.dialect})
			_, err := p.Call(context.Background(), &weft.Request{Model: chatModel(false), Messages: []weft.LLMMessage{
				{Role: weft.RoleUser, Content: "q"},
				{Role: weft.RoleAssistant, ToolCalls: []weft.ToolCall{{ID: "c1", Name: "t", Arguments: "{}"}}, Metadata: map[string]any{"reasoning_blocks": tc.meta}},
				{Role: weft.RoleTool, ToolCallID: "c1", Content: "r"},
			}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Messages []map[string]json.RawMessage `json:"messages"`
			}
			_ = json.Unmarshal(c.body, &body)
			got, ok := body.Messages[1]["reasoning_details"]
			switch {
			case tc.want == "" && ok:
				t.Errorf("reasoning_details %s sent", got)
			case tc.want != "" && (!ok || canonical(t, got) != tc.want):
				t.Errorf("reasoning_details %s, want %s", got, tc.want)
			}
		})
	}
}
