package gemini

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/weft-agents/weft"
	wschema "github.com/weft-agents/weft/schema"
)

// TestStructuredOutputSchema: a structured answer is asked for natively, in generationConfig.
func TestStructuredOutputSchema(t *testing.T) {
	srv, last := server(t, jsonReply(200, okReply))
	req := baseReq(false)
	req.Output = &weft.OutputSpec{Name: "order", Schema: wschema.Object(wschema.Field("order_id", wschema.Integer()))}
	if _, err := New(Options{BaseURL: srv.URL + "/v1beta/"}).Call(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	_, body := last()
	var w struct {
		GenerationConfig struct {
			ResponseMimeType string         `json:"responseMimeType"`
			ResponseSchema   map[string]any `json:"responseSchema"`
		} `json:"generationConfig"`
	}
	_ = json.Unmarshal(body, &w)
	props, _ := w.GenerationConfig.ResponseSchema["properties"].(map[string]any)
	if w.GenerationConfig.ResponseMimeType != "application/json" || props["order_id"] == nil {
		t.Errorf("generationConfig = %s", body)
	}
}
