package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/schema"
)

func orderSchema() *schema.Schema {
	return schema.Object(schema.Field("order_id", schema.Integer()), schema.Field("status", schema.String()))
}

// TestStructuredOutput: a prompt with an output schema sends it with every request; a valid answer
// is kept as the message's structured value; an invalid one is retried with the validation error
// as a note, and after three invalid answers the step fails with the last error, nothing else
// changed.
func TestStructuredOutput(t *testing.T) {
	cases := []struct {
		name       string
		answers    []string
		wantReason weft.StopReason
		wantValue  string
		wantErr    string
		wantCalls  int
	}{
		{"valid", []string{`{"order_id": 42, "status": "shipped"}`}, weft.StopOnResponse, `{"order_id":42,"status":"shipped"}`, "", 1},
		{"fenced", []string{"```json\n{\"order_id\": 7, \"status\": \"new\"}\n```"}, weft.StopOnResponse, `{"order_id":7,"status":"new"}`, "", 1},
		{"retried_then_valid", []string{`not json`, `{"order_id": "42"}`, `{"order_id": 42, "status": "late"}`}, weft.StopOnResponse, `{"order_id":42,"status":"late"}`, "", 3},
		{"never_valid", []string{`nope`, `{"order_id": "x"}`, `{"status": 5}`}, weft.StopStepError, "", "no valid structured answer after 3 attempts: the answer does not match the output schema", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var notes []string
			calls := 0
			model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
				if req.Output == nil || req.Output.Schema == nil || req.Output.Name != "assistant" {
					t.Errorf("request without the output schema: %+v", req.Output)
				}
				if last := req.Messages[len(req.Messages)-1]; last.Role == weft.RoleSystem {
					notes = append(notes, last.Text())
				}
				a := tc.answers[min(calls, len(tc.answers)-1)]
				calls++
				return &weft.Response{Text: a}, nil
			})
			reg := registry(nil, func(p *weft.Prompt) { p.OutputSchema = orderSchema() })
			eng, st := newEngine(t, reg, model, nil)
			ctx := context.Background()
			th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Status of order 42?"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Last().Reason != tc.wantReason || calls != tc.wantCalls || !strings.Contains(res.Last().Error, tc.wantErr) {
				t.Fatalf("stop %+v after %d calls", res.Last(), calls)
			}
			// The Go API returns the value with the result (RunResult JSON: "value").
			doc, _ := json.Marshal(res)
			if tc.wantValue != "" && string(res.Value) != tc.wantValue || tc.wantValue == "" && res.Value != nil ||
				tc.wantValue != "" && !strings.Contains(string(doc), `"value":`+tc.wantValue) {
				t.Errorf("RunResult value %s (JSON %s), want %s", res.Value, doc, tc.wantValue)
			}
			if len(notes) != calls-1 || (len(notes) > 0 && !strings.Contains(notes[0], "Your answer was not accepted")) {
				t.Errorf("corrective notes: %q", notes)
			}
			msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: 10})
			var value any
			assistants := 0
			for _, m := range msgs {
				if m.Role == weft.RoleAssistant {
					assistants++
					value = m.Metadata["structured"]
				}
			}
			if tc.wantValue == "" {
				if assistants != 0 {
					t.Errorf("a failed structured step stored %d replies", assistants)
				}
				return
			}
			got, _ := json.Marshal(value)
			if string(got) != tc.wantValue {
				t.Errorf("structured value %s, want %s", got, tc.wantValue)
			}
			logs, _ := st.Logs(ctx, th.ID, weft.LogQuery{})
			if len(logs) != calls {
				t.Errorf("%d log rows for %d calls", len(logs), calls)
			}
		})
	}
}

// TestStructuredSubPrompt: a sub-prompt with an output schema returns its value as JSON, and only
// that, to the calling prompt.
func TestStructuredSubPrompt(t *testing.T) {
	reg := registry(nil, func(p *weft.Prompt) { p.Tools = []weft.ToolEntry{{Name: "classify"}} })
	reg.AddPrompt(&weft.Prompt{Name: "classify", ToolDescription: "Classify a request.", Model: "fast", Prompt: weft.Text("Classify."),
		ExposeAsTool: ptrBool(true), OutputSchema: schema.Object(schema.Field("category", schema.String())),
		RequiredSchema: schema.Object(schema.Field("request", schema.String()))})
	var seen string
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case req.Prompt == "classify":
			return &weft.Response{Text: `{"category": "billing"}`}, nil
		case last.Role == weft.RoleTool:
			seen = last.Text()
			return &weft.Response{Text: "It is about billing."}, nil
		}
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "classify", Arguments: `{"request":"my invoice"}`}}}, nil
	})
	eng, _ := newEngine(t, reg, model, nil)
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Help with my invoice"}}); err != nil {
		t.Fatal(err)
	}
	if seen != `{"category":"billing"}` {
		t.Errorf("the caller saw %q", seen)
	}
}

func ptrBool(b bool) *bool { return &b }
