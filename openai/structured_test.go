package openai_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/openai"
	"github.com/weft-agents/weft/schema"
)

// TestStructuredOutputFormat: chat completions send response_format json_schema and the Responses
// API text.format, both strict (no additional properties, every property listed as required).
func TestStructuredOutputFormat(t *testing.T) {
	for _, responses := range []bool{false, true} {
		srv, c := newServer(t, 200, nil, "application/json", okJSON)
		m := noStream()
		m.ProviderOptions = map[string]any{"baseUrl": srv.URL + "/v1", "useResponsesApi": responses}
		req := &weft.Request{Model: m, APIKey: "sk", Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "Status?"}},
			Output: &weft.OutputSpec{Name: "order status", Schema: schema.Object(schema.Field("order_id", schema.Integer()),
				schema.Field("note", schema.String()))}}
		_, _ = openai.New(openai.Options{}).Call(context.Background(), req, nil) // the fake answers in the chat wire
		var body map[string]any
		_ = json.Unmarshal(c.body, &body)
		var format map[string]any
		if responses {
			text, _ := body["text"].(map[string]any)
			format, _ = text["format"].(map[string]any)
		} else {
			rf, _ := body["response_format"].(map[string]any)
			if rf["type"] == "json_schema" {
				format, _ = rf["json_schema"].(map[string]any)
			}
		}
		if format == nil || format["name"] != openai.WireToolName("order status") || format["strict"] != true {
			t.Fatalf("responses=%v: body %s", responses, c.body)
		}
		s, _ := json.Marshal(format["schema"])
		want := `{"additionalProperties":false,"properties":{"note":{"type":"string"},"order_id":{"type":"integer"}},"required":["order_id","note"],"type":"object"}`
		if string(s) != want {
			t.Errorf("responses=%v: schema\n got %s\nwant %s", responses, s, want)
		}
	}
}
