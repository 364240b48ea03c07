package engine_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// TestPayloadJSON: each typed payload marshals to the object the HTTP API documents (the keys and
// values its map payload had), and DecodePayload reads that object back into the same value.
func TestPayloadJSON(t *testing.T) {
	cost := 0.25
	cases := []struct {
		typ  string
		p    engine.Payload
		want string
	}{
		{"run_started", engine.RunStarted{RunID: "run_1", Side: weft.SideA, Trigger: "message"},
			`{"run_id":"run_1","side":"a","trigger":"message"}`},
		{"run_stopped", engine.RunStopped{RunID: "run_1", Reason: weft.StopOnResponse, Side: weft.SideB, Steps: 3, Seq: 2},
			`{"error":"","reason":"stop_on_response","run_id":"run_1","seq":2,"side":"b","steps":3}`},
		{"run_stopped", engine.RunStopped{RunID: "run_1", Reason: weft.StopStepError, Error: "boom", LastLineRedactions: 1},
			`{"error":"boom","last_line_redactions":1,"reason":"step_error","run_id":"run_1","seq":0,"side":"","steps":0}`},
		{"step_started", engine.StepStarted{RunID: "run_1", Step: 1, Side: weft.SideA, Prompt: "support"},
			`{"depth":0,"prompt":"support","run_id":"run_1","side":"a","step":1}`},
		{"step_completed", engine.StepCompleted{RunID: "run_1", Step: 1, Side: weft.SideA, Prompt: "support", ToolCalls: 2},
			`{"depth":0,"prompt":"support","run_id":"run_1","side":"a","step":1,"tool_calls":2}`},
		{"llm_request", engine.ModelRequest{LogID: "log_1", Model: "m", Provider: "openai", Attempt: 1},
			`{"attempt":1,"log_id":"log_1","model":"m","provider":"openai"}`},
		{"llm_response", engine.ModelResponse{LogID: "log_1", Status: "ok", InputTokens: 10, OutputTokens: 2, CostTotal: &cost, LatencyMS: 7},
			`{"cost_total":0.25,"input_tokens":10,"latency_ms":7,"log_id":"log_1","output_tokens":2,"status":"ok"}`},
		{"llm_response", engine.ModelResponse{LogID: "log_1", Status: "ok"},
			`{"cost_total":null,"input_tokens":0,"latency_ms":0,"log_id":"log_1","output_tokens":0,"status":"ok"}`},
		{"llm_response", engine.ModelResponse{LogID: "log_1", Status: "error", Error: "rate limited"},
			`{"error":"rate limited","log_id":"log_1","status":"error"}`},
		{"message", engine.MessageData{Message: weft.Message{ID: "msg_1", Role: weft.RoleUser, Content: "hi"}}, ""},
		{"message_chunk", engine.Chunk{MessageID: "msg_1", Depth: 1, Delta: "he"},
			`{"delta":"he","depth":1,"message_id":"msg_1"}`},
		{"reasoning_chunk", engine.Chunk{MessageID: "msg_1", Delta: "so"},
			`{"delta":"so","depth":0,"message_id":"msg_1"}`},
		{"tool_started", engine.ToolStarted{CallID: "call_1", Name: "lookup", Depth: 0},
			`{"call_id":"call_1","depth":0,"name":"lookup"}`},
		{"tool_completed", engine.ToolCompleted{CallID: "call_1", Name: "lookup", Status: weft.ToolError},
			`{"call_id":"call_1","depth":0,"name":"lookup","status":"error"}`},
		{"kv_changed", engine.Fields{"key": "k"}, `{"key":"k"}`},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			b, err := json.Marshal(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && string(b) != tc.want {
				t.Errorf("marshalled %s\nwant       %s", b, tc.want)
			}
			back, err := engine.DecodePayload(tc.typ, b)
			if err != nil {
				t.Fatal(err)
			}
			if tc.typ == "message" {
				// weft.Message's JSON is its own (times, metadata): compare what a consumer reads.
				m := back.(engine.MessageData).Message
				if m.ID != "msg_1" || m.Role != weft.RoleUser || m.Content != "hi" {
					t.Errorf("decoded %+v", m)
				}
				return
			}
			if !reflect.DeepEqual(back, tc.p) {
				t.Errorf("decoded %#v\nwant    %#v", back, tc.p)
			}
		})
	}
}

// TestDecodePayloadFallback: a payload its type cannot hold, and an event type without a payload
// type, decode as Fields with every field; an absent payload is nil; what is not JSON is an error.
func TestDecodePayloadFallback(t *testing.T) {
	cases := []struct {
		typ, raw string
		want     engine.Payload
		fails    bool
	}{
		{"run_started", `{"run_id":7,"side":"a"}`, engine.Fields{"run_id": float64(7), "side": "a"}, false},
		{"approval_required", `{"call_id":"c","name":"refund"}`, engine.Fields{"call_id": "c", "name": "refund"}, false},
		{"event", `{"name":"x","data":{"a":[1]}}`, engine.Fields{"name": "x", "data": map[string]any{"a": []any{float64(1)}}}, false},
		{"message", ``, nil, false},
		{"message", `null`, nil, false},
		{"message", `{"message":`, nil, true},
		{"kv_changed", `[1]`, nil, true},
	}
	for _, tc := range cases {
		got, err := engine.DecodePayload(tc.typ, []byte(tc.raw))
		if (err != nil) != tc.fails {
			t.Errorf("%s %s: error %v", tc.typ, tc.raw, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: %#v, want %#v", tc.typ, tc.raw, got, tc.want)
		}
	}
}

// FuzzDecodePayload: whatever the bytes, DecodePayload returns a payload that marshals again, or
// an error; it never panics.
func FuzzDecodePayload(f *testing.F) {
	for _, s := range []string{`{"run_id":"r","side":"a","trigger":"message"}`, `{"message":{"role":"user","content":"x"}}`,
		`{"delta":"x","depth":1}`, `{"status":"error","error":"e"}`, `{"a":1}`, `null`, `[`} {
		f.Add("message", s)
		f.Add("llm_response", s)
		f.Add("run_started", s)
		f.Add("custom", s)
	}
	f.Fuzz(func(t *testing.T, typ, raw string) {
		p, err := engine.DecodePayload(typ, []byte(raw))
		if err != nil || p == nil {
			return
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatalf("%s %q decoded to %#v, which does not marshal: %v", typ, raw, p, err)
		}
	})
}
