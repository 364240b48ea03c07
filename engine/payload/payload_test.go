package payload_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
)

// TestPayloadJSON: each typed payload marshals to the object the HTTP API documents (the keys and
// values its map payload had), and DecodePayload reads that object back into the same value.
func TestPayloadJSON(t *testing.T) {
	cost := 0.25
	cases := []struct {
		typ  string
		p    payload.Payload
		want string
	}{
		{"run_started", payload.RunStarted{RunID: "run_1", Side: weft.SideA, Trigger: "message"},
			`{"run_id":"run_1","side":"a","trigger":"message"}`},
		{"run_stopped", payload.RunStopped{RunID: "run_1", Reason: weft.StopOnResponse, Side: weft.SideB, Steps: 3, Seq: 2},
			`{"error":"","reason":"stop_on_response","run_id":"run_1","seq":2,"side":"b","steps":3}`},
		{"run_stopped", payload.RunStopped{RunID: "run_1", Reason: weft.StopStepError, Error: "boom", LastLineRedactions: 1},
			`{"error":"boom","last_line_redactions":1,"reason":"step_error","run_id":"run_1","seq":0,"side":"","steps":0}`},
		{"step_started", payload.StepStarted{RunID: "run_1", Step: 1, Side: weft.SideA, Prompt: "support"},
			`{"depth":0,"prompt":"support","run_id":"run_1","side":"a","step":1}`},
		{"step_completed", payload.StepCompleted{RunID: "run_1", Step: 1, Side: weft.SideA, Prompt: "support", ToolCalls: 2},
			`{"depth":0,"prompt":"support","run_id":"run_1","side":"a","step":1,"tool_calls":2}`},
		{"llm_request", payload.ModelRequest{LogID: "log_1", Model: "m", Provider: "openai", Attempt: 1},
			`{"attempt":1,"log_id":"log_1","model":"m","provider":"openai"}`},
		{"llm_response", payload.ModelResponse{LogID: "log_1", Status: "ok", InputTokens: 10, OutputTokens: 2, CostTotal: &cost, LatencyMS: 7},
			`{"cost_total":0.25,"input_tokens":10,"latency_ms":7,"log_id":"log_1","output_tokens":2,"status":"ok"}`},
		{"llm_response", payload.ModelResponse{LogID: "log_1", Status: "ok"},
			`{"cost_total":null,"input_tokens":0,"latency_ms":0,"log_id":"log_1","output_tokens":0,"status":"ok"}`},
		{"llm_response", payload.ModelResponse{LogID: "log_1", Status: "error", Error: "rate limited"},
			`{"error":"rate limited","log_id":"log_1","status":"error"}`},
		{"message", payload.MessageData{Message: weft.Message{ID: "msg_1", Role: weft.RoleUser, Content: "hi"}}, ""},
		{"message_chunk", payload.Chunk{MessageID: "msg_1", Depth: 1, Delta: "he"},
			`{"delta":"he","depth":1,"message_id":"msg_1"}`},
		{"reasoning_chunk", payload.Chunk{MessageID: "msg_1", Delta: "so"},
			`{"delta":"so","depth":0,"message_id":"msg_1"}`},
		{"tool_started", payload.ToolStarted{CallID: "call_1", Name: "lookup", Depth: 0},
			`{"call_id":"call_1","depth":0,"name":"lookup"}`},
		{"tool_completed", payload.ToolCompleted{CallID: "call_1", Name: "lookup", Status: weft.ToolError},
			`{"call_id":"call_1","depth":0,"name":"lookup","status":"error"}`},
		{"kv_changed", payload.Fields{"key": "k"}, `{"key":"k"}`},
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
			if fast, err := payload.AppendJSON([]byte("x"), tc.p); err != nil || string(fast) != "x"+string(b) {
				t.Errorf("AppendPayloadJSON wrote %s, %v\njson.Marshal       %s", fast, err, b)
			}
			back, err := payload.Decode(tc.typ, b)
			if err != nil {
				t.Fatal(err)
			}
			if tc.typ == "message" {
				// weft.Message's JSON is its own (times, metadata): compare what a consumer reads.
				m := back.(payload.MessageData).Message
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

// TestAppendPayloadJSON: the payloads AppendPayloadJSON writes field by field come out as
// json.Marshal writes them, whatever their strings, times, calls, attachments and metadata hold.
func TestAppendPayloadJSON(t *testing.T) {
	cost, tiny, huge := 0.000123, 1e-7, 3e21
	tricky := "a<b>&c \"q\" \\ \b\f\n\r\t\x00\x1f\x7f é 日本 \u2028\u2029 \xff\xfe bad \xed\xa0\x80 surrogate 🙂"
	at := time.Date(2026, 11, 28, 7, 0, 0, 120000000, time.FixedZone("x", 5*3600+1800))
	cases := []payload.Payload{
		payload.MessageData{},
		payload.MessageData{Message: weft.Message{ID: "msg_1", ThreadID: "thr_1", Seq: 7, Role: weft.RoleAssistant, Side: weft.SideA,
			Content: tricky, Name: tricky, ToolCalls: []weft.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"order_id":42}`}, {ID: tricky}},
			ToolCallID: "c0", ToolStatus: weft.ToolError, Status: weft.MessageCompleted, Silent: true, Depth: 2, ParentID: "p",
			Prompt: "support", Reasoning: tricky, Attachments: []weft.Attachment{{ID: "a1", Path: "/attachments/x.png", Size: 3}},
			LogID: "log_1", RunID: "run_1", Metadata: map[string]any{"z": 1, "a": []any{"<", 2.5}, "raw": json.RawMessage(`{"k": true}`)},
			CreatedAt: at}},
		payload.MessageData{Message: weft.Message{Content: "x", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		payload.MessageData{Message: weft.Message{Content: "x", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600))}},
		payload.MessageData{Message: weft.Message{Metadata: map[string]any{"bad": make(chan int)}}},
		payload.RunStopped{Error: tricky, Reason: weft.StopStepError, LastLineRedactions: -3, Seq: 1 << 40, Steps: -1},
		payload.ModelResponse{CostTotal: &cost, Error: tricky, Status: "ok"},
		payload.ModelResponse{CostTotal: &tiny, Status: "ok"},
		payload.ModelResponse{CostTotal: &huge, Status: "ok"},
		payload.ModelResponse{Status: "error", Error: tricky, InputTokens: 5},
		payload.Chunk{Delta: tricky},
		payload.ToolCompleted{CallID: tricky, Status: weft.ToolSuccess},
		payload.Fields{"b": tricky, "a": nil},
		nil,
	}
	for i, p := range cases {
		want, wantErr := json.Marshal(p)
		got, err := payload.AppendJSON(nil, p)
		if (err != nil) != (wantErr != nil) || (err == nil && string(got) != string(want)) {
			t.Errorf("case %d (%T): wrote\n%s, %v\njson.Marshal\n%s, %v", i, p, got, err, want, wantErr)
		}
	}
}

// FuzzAppendPayloadJSON: whatever the strings and numbers, AppendPayloadJSON writes what
// json.Marshal writes.
func FuzzAppendPayloadJSON(f *testing.F) {
	f.Add("hello", "<&>", int64(1), int64(1764313200123456789), true)
	f.Add("\xff\u2028\x00", "", int64(-1), int64(0), false)
	f.Fuzz(func(t *testing.T, s1, s2 string, n, nanos int64, silent bool) {
		for _, p := range []payload.Payload{
			payload.MessageData{Message: weft.Message{ID: s1, ThreadID: s2, Seq: n, Role: weft.Role(s2), Side: weft.Side(s1), Content: s1,
				Name: s2, ToolCalls: []weft.ToolCall{{ID: s1, Name: s2, Arguments: s1 + s2}}, ToolCallID: s2, ToolStatus: weft.ToolStatus(s1),
				Status: weft.MessageStatus(s2), Silent: silent, Depth: int(n), ParentID: s1, Prompt: s2, Reasoning: s1, LogID: s2, RunID: s1,
				CreatedAt: time.Unix(0, nanos).UTC()}},
			payload.RunStarted{RunID: s1, Side: weft.Side(s2), Trigger: s1},
			payload.RunStopped{Error: s1, LastLineRedactions: int(n), Reason: weft.StopReason(s2), RunID: s2, Seq: int(nanos), Side: weft.Side(s1), Steps: int(n)},
			payload.StepCompleted{Depth: int(n), Prompt: s1, RunID: s2, Side: weft.Side(s1), Step: int(nanos), ToolCalls: int(n)},
			payload.ModelRequest{Attempt: int(n), LogID: s1, Model: s2, Provider: s1},
			payload.ModelResponse{Error: s1, InputTokens: int(n), LatencyMS: nanos, LogID: s2, Status: s2},
			payload.ToolStarted{CallID: s1, Depth: int(n), Name: s2},
			payload.Chunk{Delta: s1 + s2, Depth: int(n), MessageID: s2},
		} {
			want, wantErr := json.Marshal(p)
			got, err := payload.AppendJSON(nil, p)
			if (err != nil) != (wantErr != nil) || (err == nil && string(got) != string(want)) {
				t.Fatalf("%T: wrote\n%s, %v\njson.Marshal\n%s, %v", p, got, err, want, wantErr)
			}
		}
	})
}

// TestDecodePayloadFallback: a payload its type cannot hold, and an event type without a payload
// type, decode as Fields with every field; an absent payload is nil; what is not JSON is an error.
func TestDecodePayloadFallback(t *testing.T) {
	cases := []struct {
		typ, raw string
		want     payload.Payload
		fails    bool
	}{
		{"run_started", `{"run_id":7,"side":"a"}`, payload.Fields{"run_id": float64(7), "side": "a"}, false},
		{"approval_required", `{"call_id":"c","name":"refund"}`, payload.Fields{"call_id": "c", "name": "refund"}, false},
		{"event", `{"name":"x","data":{"a":[1]}}`, payload.Fields{"name": "x", "data": map[string]any{"a": []any{float64(1)}}}, false},
		{"message", ``, nil, false},
		{"message", `null`, nil, false},
		{"message", `{"message":`, nil, true},
		{"kv_changed", `[1]`, nil, true},
	}
	for _, tc := range cases {
		got, err := payload.Decode(tc.typ, []byte(tc.raw))
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
		p, err := payload.Decode(typ, []byte(raw))
		if err != nil || p == nil {
			return
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatalf("%s %q decoded to %#v, which does not marshal: %v", typ, raw, p, err)
		}
	})
}
