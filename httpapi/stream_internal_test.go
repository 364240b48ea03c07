package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// TestFrameFromEncodedPayload: a frame built from the payload's recorded encoding says exactly
// what the one encoded from Data says.
func TestFrameFromEncodedPayload(t *testing.T) {
	msg := weft.Message{ID: "msg_1", Role: weft.RoleAssistant, Content: "a <b> & \"c\"\n", Depth: 1}
	cases := []struct {
		name string
		ev   engine.Event
	}{
		{"message", engine.Event{Type: "message", ThreadID: "thr_1", Seq: 7, Data: engine.MessageData{Message: msg}}},
		{"empty payload", engine.Event{Type: "approval_decided", ThreadID: "thr_1", Seq: 2, Data: engine.Fields{}}},
		{"nil payload", engine.Event{Type: "thread_created", ThreadID: "thr_1", Seq: 1}},
		{"payload with a frame key", engine.Event{Type: "event", ThreadID: "thr_1", Seq: 9, Data: engine.Fields{"seq": 4, "name": "x"}}},
		{"typed payload with a frame key", engine.Event{Type: "run_stopped", ThreadID: "thr_1", Seq: 9,
			Data: engine.RunStopped{Seq: 4, Reason: weft.StopOnResponse, RunID: "run_1", Side: weft.SideA, Steps: 2}}},
		{"typed payload with a frame key, not recorded", engine.Event{Type: "run_stopped", ThreadID: "thr_1",
			Data: engine.RunStopped{Seq: 4, Reason: weft.StopOnResponse}}},
		{"not recorded", engine.Event{Type: "message_chunk", ThreadID: "thr_1", Data: engine.Chunk{Delta: "x"}}},
		{"not recorded, untyped", engine.Event{Type: "kv_changed", ThreadID: "thr_1", Data: engine.Fields{"key": "k"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := decodeFrame(t, frame(tc.ev))
			ev := tc.ev
			if ev.Seq > 0 {
				enc, err := json.Marshal(ev.Data)
				if err != nil {
					t.Fatal(err)
				}
				ev.Encoded = enc
			}
			if got := decodeFrame(t, frame(ev)); !reflect.DeepEqual(got, want) {
				t.Errorf("from the encoding:\n%v\nfrom Data:\n%v", got, want)
			}
		})
	}
}

func decodeFrame(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
	return m
}

// TestStreamFilterKeep: depth and silence are read from every payload that carries them, typed
// or not, and reasoning only passes when asked for.
func TestStreamFilterKeep(t *testing.T) {
	top := streamFilter{}
	deep := streamFilter{depth: 2, includeSilent: true, reasoning: true}
	msg := func(silent bool, depth int) engine.Payload {
		return engine.MessageData{Message: weft.Message{Silent: silent, Depth: depth}}
	}
	cases := []struct {
		name      string
		ev        engine.Event
		top, deep bool
	}{
		{"message", engine.Event{Type: "message", Data: msg(false, 0)}, true, true},
		{"silent message", engine.Event{Type: "message", Data: msg(true, 0)}, false, true},
		{"sub-prompt message", engine.Event{Type: "message", Data: msg(false, 2)}, false, true},
		{"deeper than asked", engine.Event{Type: "message", Data: msg(false, 3)}, false, false},
		{"chunk", engine.Event{Type: "message_chunk", Data: engine.Chunk{Depth: 1}}, false, true},
		{"reasoning", engine.Event{Type: "reasoning_chunk", Data: engine.Chunk{}}, false, true},
		{"step", engine.Event{Type: "step_started", Data: engine.StepStarted{Depth: 1}}, false, true},
		{"step completed", engine.Event{Type: "step_completed", Data: engine.StepCompleted{}}, true, true},
		{"tool", engine.Event{Type: "tool_started", Data: engine.ToolStarted{Depth: 3}}, false, false},
		{"tool completed", engine.Event{Type: "tool_completed", Data: engine.ToolCompleted{Depth: 1}}, false, true},
		{"untyped with depth", engine.Event{Type: "other", Data: engine.Fields{"depth": float64(1)}}, false, true},
		{"untyped", engine.Event{Type: "kv_changed", Data: engine.Fields{"key": "k"}}, true, true},
		{"no payload", engine.Event{Type: "thread_created"}, true, true},
	}
	for _, tc := range cases {
		if got := top.keep(tc.ev); got != tc.top {
			t.Errorf("%s: kept %v by default, want %v", tc.name, got, tc.top)
		}
		if got := deep.keep(tc.ev); got != tc.deep {
			t.Errorf("%s: kept %v with depth 2, silent and reasoning, want %v", tc.name, got, tc.deep)
		}
	}
}
