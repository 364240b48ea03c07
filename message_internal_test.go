package weft

import (
	"encoding/json"
	"testing"
)

// TestTraceJSONLikeEncodingJSON checks that TraceJSON and LLMMessage.MarshalJSON, which quote the
// texts straight into one buffer, write byte for byte what encoding/json wrote of the same shapes.
func TestTraceJSONLikeEncodingJSON(t *testing.T) {
	oldMessage := func(m LLMMessage) json.RawMessage {
		var content []byte
		if len(m.Parts) > 0 {
			content, _ = json.Marshal(m.Parts)
		} else {
			content, _ = json.Marshal(m.Content)
		}
		b, err := json.Marshal(llmMessageJSON{Role: m.Role, Content: content, Name: m.Name, ToolCalls: m.ToolCalls,
			ToolCallID: m.ToolCallID, ToolStatus: m.ToolStatus, Metadata: m.Metadata})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	msgs := []LLMMessage{
		{Role: RoleSystem, Content: "Be <brief> & \"exact\"\n\t\u2028\u2029 \x01 \xff café"},
		{Role: RoleUser, Parts: []ContentPart{{Type: PartText, Text: "look <here>"}, {Type: "image", URL: "/a.png", MimeType: "image/png",
			Options: map[string]any{"detail": "high"}}}},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_1", Name: "echo", Arguments: `{"text":"<x>"}`}}, Metadata: map[string]any{"b": 1, "a": "&"}},
		{Role: RoleTool, Name: "echo", ToolCallID: "call_1", ToolStatus: "error", Content: ""},
		{Role: RoleAssistant, ToolCalls: []ToolCall{}, Metadata: map[string]any{}},
	}
	for _, m := range msgs {
		got, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if want := oldMessage(m); string(got) != string(want) {
			t.Errorf("MarshalJSON:\n got %s\nwant %s", got, want)
		}
	}
	type oldLine struct {
		Model      string            `json:"model"`
		Prompt     string            `json:"prompt"`
		Agent      string            `json:"agent"`
		Side       Side              `json:"side"`
		Depth      int               `json:"depth"`
		ToolChoice ToolChoice        `json:"tool_choice"`
		Tools      []ToolSpec        `json:"tools"`
		Messages   []json.RawMessage `json:"messages"`
		Output     *OutputSpec       `json:"output,omitempty"`
	}
	for _, r := range []*Request{
		{},
		{Prompt: "p", Agent: "a<b>", Side: SideB, Depth: 2, Model: &Model{Name: "m"}, Messages: msgs,
			Tools: []ToolSpec{{Name: "echo", Description: "Echoes & more."}}, ToolChoice: ToolChoiceRequired},
		{Prompt: "p", Messages: msgs[:1], Output: &OutputSpec{Name: "answer"}},
	} {
		want := oldLine{Prompt: r.Prompt, Agent: r.Agent, Side: r.Side, Depth: r.Depth, ToolChoice: r.ToolChoice,
			Tools: r.Tools, Messages: []json.RawMessage{}, Output: r.Output}
		if r.Model != nil {
			want.Model = r.Model.Name
		}
		if want.ToolChoice == "" {
			want.ToolChoice = ToolChoiceAuto
		}
		if want.Tools == nil {
			want.Tools = []ToolSpec{}
		}
		for _, m := range r.Messages {
			want.Messages = append(want.Messages, oldMessage(m))
		}
		wb, _ := json.Marshal(want)
		if got := r.TraceJSON(); string(got) != string(wb) {
			t.Errorf("TraceJSON:\n got %s\nwant %s", got, wb)
		}
	}
}
