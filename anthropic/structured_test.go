package anthropic

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// TestStructuredOutputInstruction: with no native structured-output form, the answer's schema is
// asked for at the end of the system prompt.
func TestStructuredOutputInstruction(t *testing.T) {
	srv, last := server(t, jsonReply(okMessage))
	req := baseReq(false)
	req.Output = &weft.OutputSpec{Name: "order", Schema: schema.Object(schema.Field("order_id", schema.Integer()))}
	if _, err := New(Options{BaseURL: srv.URL + "/v1"}).Call(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	body, _ := last()
	var w struct{ System string }
	_ = json.Unmarshal(body, &w)
	if !strings.HasPrefix(w.System, "Be brief.\n\nAnswer with only a JSON object that matches this JSON Schema") ||
		!strings.Contains(w.System, `"order_id":{"type":"integer"}`) {
		t.Errorf("system = %q", w.System)
	}
}
